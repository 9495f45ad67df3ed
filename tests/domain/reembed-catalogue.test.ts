import { describe, expect, test } from "bun:test";
import { EmbeddingUnavailable } from "../../src/domain/errors.ts";
import { embeddingText } from "../../src/domain/product.ts";
import { ReembedCatalogue, type ReembedEvent } from "../../src/domain/reembed-catalogue.ts";
import { bagOfWords, FakeEmbedder } from "../fakes/fake-embedder.ts";
import { FakeEmbeddingSpace } from "../fakes/fake-embedding-space.ts";

const OLD = { model: "old-model", dimension: 4 };

function catalogue(size: number): FakeEmbeddingSpace {
  const space = new FakeEmbeddingSpace(OLD);
  for (let id = 1; id <= size; id++) {
    space.add({
      id,
      name: `producto ${id}`,
      category: "Hogar",
      description: `descripción ${id}`,
      contentDigest: `d${id}`,
      vector: [1, 0, 0, 0],
      // The first product's catalogue embeds its brand (and not its price).
      ...(id === 1
        ? { attributes: { brand: "Acme", price: 3 }, embeddedAttributes: ["brand"] }
        : { embeddedAttributes: [] }),
    });
  }
  return space;
}

/** An embedder that fails from its `failAt`-th call on (1-based), like a provider going down midway. */
class FailingEmbedder extends FakeEmbedder {
  private count = 0;
  constructor(private readonly failAt: number) {
    super(8);
  }
  override async embed(...args: Parameters<FakeEmbedder["embed"]>) {
    this.count++;
    this.mode = this.count >= this.failAt ? "fail" : "ok";
    return super.embed(...args);
  }
}

describe("ReembedCatalogue", () => {
  test("stages every product's new vector batch by batch, then switches the space", async () => {
    const space = catalogue(5);
    const embedder = new FakeEmbedder(8);
    const events: ReembedEvent[] = [];
    const result = await new ReembedCatalogue({ space, embedder }).execute({
      batchSize: 2,
      onEvent: (e) => events.push(e),
    });
    expect(result).toEqual({ products: 5 });
    expect(events).toEqual([
      { type: "started", staged: 0, total: 5, space: { model: embedder.model, dimension: 8 } },
      { type: "progress", done: 2, total: 5 },
      { type: "progress", done: 4, total: 5 },
      { type: "progress", done: 5, total: 5 },
      { type: "switched", products: 5, space: { model: embedder.model, dimension: 8 } },
    ]);
    expect(await space.current()).toEqual({ model: embedder.model, dimension: 8 });
    const first = space.products.get(1);
    expect(embedder.calls[0]?.text).toBe("producto 1. Hogar. descripción 1. brand: Acme");
    expect(first?.vector).toEqual(bagOfWords("producto 1. Hogar. descripción 1. brand: Acme", 8));
    expect(space.products.get(2)?.vector).toEqual(
      bagOfWords(embeddingText({ name: "producto 2", category: "Hogar", description: "descripción 2" }, []), 8),
    );
  });

  test("a failure midway leaves the live space untouched; the next run resumes with what is left", async () => {
    const space = catalogue(6);
    const failing = new FailingEmbedder(3);
    const run = new ReembedCatalogue({ space, embedder: failing }).execute({ batchSize: 2 });
    await expect(run).rejects.toBeInstanceOf(EmbeddingUnavailable);
    expect(await space.current()).toEqual(OLD);
    expect(space.products.get(1)?.vector).toEqual([1, 0, 0, 0]);
    expect(space.stagedFor(4)).toBeDefined();
    expect(space.stagedFor(5)).toBeUndefined();

    // A product staged before the failure changes meanwhile: its staged vector no longer counts.
    space.change(2, "otra descripción");
    const embedder = new FakeEmbedder(8);
    const events: ReembedEvent[] = [];
    await new ReembedCatalogue({ space, embedder }).execute({ batchSize: 2, onEvent: (e) => events.push(e) });
    expect(events[0]).toMatchObject({ type: "started", staged: 3, total: 6 });
    // Only the changed product and the two never staged were embedded again.
    expect(embedder.calls.map((call) => call.text)).toEqual([
      embeddingText({ name: "producto 2", category: "Hogar", description: "otra descripción" }, []),
      embeddingText({ name: "producto 5", category: "Hogar", description: "descripción 5" }, []),
      embeddingText({ name: "producto 6", category: "Hogar", description: "descripción 6" }, []),
    ]);
    expect(await space.current()).toEqual({ model: embedder.model, dimension: 8 });
    expect(space.products.get(2)?.vector).toEqual(
      bagOfWords(embeddingText({ name: "producto 2", category: "Hogar", description: "otra descripción" }, []), 8),
    );
  });

  test("products written during the re-embed are embedded at the switch", async () => {
    const space = catalogue(2);
    space.onSwitch = () =>
      space.add({
        id: 3,
        name: "nuevo",
        category: "Hogar",
        description: "",
        contentDigest: "d3",
        vector: [0, 1, 0, 0],
        embeddedAttributes: [],
      });
    const embedder = new FakeEmbedder(8);
    expect(await new ReembedCatalogue({ space, embedder }).execute()).toEqual({ products: 3 });
    expect(space.products.get(3)?.vector).toEqual(
      bagOfWords(embeddingText({ name: "nuevo", category: "Hogar", description: "" }, []), 8),
    );
  });

  test("a stop between batches keeps what is staged and switches nothing", async () => {
    const space = catalogue(4);
    const controller = new AbortController();
    const embedder = new FakeEmbedder(8);
    const run = new ReembedCatalogue({ space, embedder }).execute({
      batchSize: 2,
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "progress") controller.abort(new Error("stopped"));
      },
    });
    await expect(run).rejects.toThrow("stopped");
    expect(await space.current()).toEqual(OLD);
    expect(space.stagedFor(2)).toBeDefined();
    expect(space.stagedFor(3)).toBeUndefined();
  });

  test("an unusable vector (zero) is never staged", async () => {
    const space = catalogue(2);
    const embedder = new FakeEmbedder(8);
    embedder.mode = "zero";
    await expect(new ReembedCatalogue({ space, embedder }).execute()).rejects.toBeInstanceOf(EmbeddingUnavailable);
    expect(space.stagedFor(1)).toBeUndefined();
    expect(await space.current()).toEqual(OLD);
  });
});
