/**
 * embedAhead (domain/embed.ts): batches embedded a few ahead of the one used, used in order; and
 * the two catalogue-wide re-embeddings built on it, with a remote provider's callsAtOnce.
 */
import { describe, expect, test } from "bun:test";
import { embedAhead } from "../../src/domain/embed.ts";
import { EmbedStaleProducts } from "../../src/domain/embed-stale-products.ts";
import { ReembedCatalogue } from "../../src/domain/reembed-catalogue.ts";
import type { Vector } from "../../src/domain/vector.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { FakeEmbeddingSpace } from "../fakes/fake-embedding-space.ts";
import { GateEmbedder } from "../fakes/gate-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

async function* numbers(count: number, read: number[]): AsyncGenerator<number> {
  for (let i = 0; i < count; i++) {
    read.push(i);
    yield i;
  }
}

/** Embeddings held until the test settles them: the batch embedded, and how to end its call. */
function heldEmbeddings() {
  const calls: { batch: number; pass: () => void; fail: () => void }[] = [];
  const embed = (batch: number) =>
    new Promise<Vector[]>((resolve, reject) => {
      calls.push({ batch, pass: () => resolve([[batch]]), fail: () => reject(new Error(`batch ${batch} failed`)) });
    });
  return { calls, embed };
}

/** Lets the work run until it waits on a held embedding again. */
const settle = () => Bun.sleep(10);

describe("embedAhead", () => {
  for (const ahead of [1, 3]) {
    test(`ahead ${ahead}: ${ahead} batch(es) embedding at once, and as many while one is used; used in order`, async () => {
      const read: number[] = [];
      const used: number[] = [];
      const { calls, embed } = heldEmbeddings();
      let using: () => void = () => {};
      const work = embedAhead(numbers(6, read), ahead, embed, async (batch, vectors) => {
        expect(vectors).toEqual([[batch]]);
        used.push(batch);
        if (batch === 0) await new Promise<void>((resolve) => (using = resolve));
      });
      await settle();
      expect(calls.map((call) => call.batch)).toEqual(Array.from({ length: ahead }, (_, i) => i));
      calls[0]?.pass();
      await settle();
      // Batch 0 is being used: the next `ahead` batches are read and embedding.
      expect(used).toEqual([0]);
      expect(calls.map((call) => call.batch)).toEqual(Array.from({ length: ahead + 1 }, (_, i) => i));
      for (const call of calls.slice(1).reverse()) call.pass(); // answers out of order
      using();
      while (calls.length < 6) {
        await settle();
        for (const call of calls) call.pass();
      }
      await work;
      expect(used).toEqual([0, 1, 2, 3, 4, 5]);
      expect(read).toEqual([0, 1, 2, 3, 4, 5]);
    });
  }

  test("a failed embedding is thrown in its turn: the batches before it are used, none after it, even one embedded", async () => {
    const read: number[] = [];
    const used: number[] = [];
    const { calls, embed } = heldEmbeddings();
    const work = embedAhead(numbers(6, read), 3, embed, async (batch) => {
      used.push(batch);
    });
    await settle();
    calls[2]?.pass();
    calls[1]?.fail();
    calls[0]?.pass();
    await expect(work).rejects.toThrow("batch 1 failed");
    expect(used).toEqual([0]);
  });
});

describe("re-embedding a catalogue with a remote provider (callsAtOnce 3)", () => {
  function remoteGate(): GateEmbedder {
    const gate = new GateEmbedder(8);
    gate.callsAtOnce = 3;
    return gate;
  }

  /** Three calls at the gate at first, three again once the first is answered (its batch used meanwhile); then all let through. */
  async function expectThreeAhead(gate: GateEmbedder): Promise<void> {
    const first = await gate.next();
    await settle();
    expect(gate.waiting).toBe(2);
    first.pass();
    await settle();
    expect(gate.waiting).toBe(3);
    gate.openAll();
  }

  test("ReembedCatalogue stages its batches in order while the next three are embedded", async () => {
    const space = new FakeEmbeddingSpace({ model: "old-model", dimension: 4 });
    for (let id = 1; id <= 10; id++) {
      space.add({
        id,
        name: `producto ${id}`,
        category: "Hogar",
        description: "",
        contentDigest: `d${id}`,
        vector: [1, 0, 0, 0],
        embeddedAttributes: [],
      });
    }
    const gate = remoteGate();
    const run = new ReembedCatalogue({ space, embedder: gate }).execute({ batchSize: 2 });
    await expectThreeAhead(gate);
    expect(await run).toEqual({ products: 10 });
    expect(gate.embedded).toEqual(Array.from({ length: 10 }, (_, i) => `producto ${i + 1}. Hogar`));
  });

  test("with no batch size given, both re-embed in batches of the embedder's textsPerCall (64 when it says none)", async () => {
    /** The texts of each call of a ReembedCatalogue and then an EmbedStaleProducts over 70 products. */
    const callSizes = async (textsPerCall: number | undefined) => {
      const space = new FakeEmbeddingSpace({ model: "old-model", dimension: 4 });
      const products = new MemoryProductRepository(8);
      for (let id = 1; id <= 70; id++) {
        const product = { name: `producto ${id}`, description: "", category: "Hogar" };
        space.add({ id, ...product, contentDigest: `d${id}`, vector: [1, 0, 0, 0], embeddedAttributes: [] });
        await products.in("default").add({ product, embedding: [1, 0, 0, 0, 0, 0, 0, 0], contentDigest: "old" });
      }
      const sizes: number[] = [];
      const embedder = Object.assign(new FakeEmbedder(8), { callsAtOnce: 2, textsPerCall });
      const embed = embedder.embed.bind(embedder);
      embedder.embed = (texts, purpose, signal) => {
        sizes.push(texts.length);
        return embed(texts, purpose, signal);
      };
      await new ReembedCatalogue({ space, embedder }).execute();
      const reembedding = sizes.splice(0);
      await new EmbedStaleProducts({ products, embedder }).execute("default");
      return { reembedding, stale: sizes };
    };
    expect(await callSizes(30)).toEqual({ reembedding: [30, 30, 10], stale: [30, 30, 10] });
    expect(await callSizes(undefined)).toEqual({ reembedding: [64, 6], stale: [64, 6] });
  });

  test("EmbedStaleProducts embeds three pages at once and writes every stale product", async () => {
    const products = new MemoryProductRepository(8);
    for (let i = 0; i < 10; i++) {
      await products.in("default").add({
        product: { name: `producto ${i}`, description: "", category: "Hogar" },
        embedding: [1, 0, 0, 0, 0, 0, 0, 0],
        contentDigest: "an older text's",
      });
    }
    const gate = remoteGate();
    const run = new EmbedStaleProducts({ products, embedder: gate }).execute("default", { batchSize: 2 });
    await expectThreeAhead(gate);
    expect(await run).toMatchObject({ products: 10, embedded: 10, changedMeanwhile: 0 });
    expect(gate.embedded).toEqual(Array.from({ length: 10 }, (_, i) => `producto ${i}. Hogar`));
  });
});
