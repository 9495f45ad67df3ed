import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { LocalEmbedder } from "../../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../../src/adapters/providers/local-model-files.ts";
import { ApertiumTranslator, findApertium } from "../../../src/adapters/translation/apertium.ts";
import { TranslatingEmbedder } from "../../../src/adapters/translation/translating-embedder.ts";
import { embeddingText } from "../../../src/domain/product.ts";
import type { Translation, Translator } from "../../../src/ports/translator.ts";
import { FakeEmbedder } from "../../fakes/fake-embedder.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";
import { cosineSimilarity } from "../../fakes/memory-product-repository.ts";
import { blockHooks } from "../../support/skipped-blocks.ts";

setDefaultTimeout(30_000);

/** Translates the texts of its dictionary; `failure` makes every call reject, `short` answer one text too few. */
class DictionaryTranslator implements Translator {
  readonly name = "dictionary";
  mode: "ok" | "failure" | "short" = "ok";
  /** Every text asked for, in order. */
  readonly asked: string[] = [];
  constructor(private readonly dictionary: Record<string, string>) {}

  async toEnglish(texts: readonly string[]): Promise<Translation[]> {
    this.asked.push(...texts);
    if (this.mode === "failure") throw new Error("the translator is down");
    const answers = texts.map((text): Translation => {
      const english = this.dictionary[text];
      return english === undefined
        ? { text, language: "en", translated: false }
        : { text: english, language: "es", translated: true };
    });
    return this.mode === "short" ? answers.slice(1) : answers;
  }

  async close(): Promise<void> {}
}

function setup() {
  const embedder = new FakeEmbedder(16);
  const translator = new DictionaryTranslator({ "funda de sofá": "sofa cover" });
  const events: Record<string, unknown>[] = [];
  const log = (event: Record<string, unknown>) => events.push(event);
  const translating = new TranslatingEmbedder(embedder, translator, { log });
  return { embedder, translator, events, translating };
}

describe("TranslatingEmbedder", () => {
  test("embeds the English of Spanish texts, other texts as they are, in the embedder's own vector space", async () => {
    const { embedder, translating } = setup();
    const vectors = await translating.embed(["funda de sofá", "velvet cushion"], "document");
    expect(embedder.calls).toEqual([
      { text: "sofa cover", purpose: "document" },
      { text: "velvet cushion", purpose: "document" },
    ]);
    expect(vectors).toEqual(await new FakeEmbedder(16).embed(["sofa cover", "velvet cushion"], "document"));
    expect(translating.model).toBe(embedder.model);
    expect(translating.dimension).toBe(embedder.dimension);
  });

  test("when the translator fails, the texts are embedded as they are and a warning says so", async () => {
    const { embedder, translator, events, translating } = setup();
    translator.mode = "failure";
    await translating.embed(["funda de sofá"], "query");
    expect(embedder.calls).toEqual([{ text: "funda de sofá", purpose: "query" }]);
    expect(events).toEqual([
      expect.objectContaining({
        event: "translation_failed",
        translator: "dictionary",
        purpose: "query",
        texts: 1,
        error: expect.any(Error),
      }),
    ]);
  });

  test("an answer that does not match the texts one to one is not used", async () => {
    const { embedder, translator, events, translating } = setup();
    translator.mode = "short";
    await translating.embed(["funda de sofá", "velvet cushion"], "document");
    expect(embedder.calls.map((call) => call.text)).toEqual(["funda de sofá", "velvet cushion"]);
    expect(events).toHaveLength(1);
  });

  test("takes as many calls at once, and texts a call, as its embedder (an import embeds that many chunks ahead)", () => {
    const translator = new DictionaryTranslator({});
    const remote = Object.assign(new FakeEmbedder(4), { callsAtOnce: 4, textsPerCall: 512 });
    expect(new TranslatingEmbedder(remote, translator)).toMatchObject({ callsAtOnce: 4, textsPerCall: 512 });
    expect(new TranslatingEmbedder(new FakeEmbedder(4), translator).callsAtOnce).toBeUndefined();
  });

  test("nothing to embed asks nothing", async () => {
    const { embedder, translating } = setup();
    expect(await translating.embed([], "document")).toEqual([]);
    expect(embedder.calls).toEqual([]);
  });
});

const apertium = findApertium();
if (!apertium.found) {
  console.warn(
    `tests/adapters/translation/translating-embedder.test.ts: the tests on the real Apertium are SKIPPED: ${apertium.reason} (install it with .ci/apertium.sh)`,
  );
}

// Without translation the offline model ranks another product first for each of these queries.
describe.skipIf(!apertium.found)("the offline model behind Apertium (real)", () => {
  const model = new LocalEmbedder(INSTALLED_MODEL_DIR);
  let translator: ApertiumTranslator;
  let translating: TranslatingEmbedder;
  const products = [
    {
      name: "Velvet cushion cover",
      category: "Home Furnishing",
      description: "Soft cover for sofa cushions, 40 x 40 cm, zip closure",
    },
    {
      name: "Stainless steel water bottle",
      category: "Kitchen & Dining",
      description: "Keeps drinks cold for 24 hours, 750 ml",
    },
    {
      name: "Leather wallet",
      category: "Bags, Wallets & Belts",
      description: "Slim bifold wallet for men with card slots",
    },
    {
      name: "Running shoes",
      category: "Footwear",
      description: "Lightweight men's sports shoes with a cushioned sole",
    },
    {
      name: "Mochila escolar",
      category: "Mochilas",
      description: "Mochila resistente al agua con dos bolsillos, para niños que van al colegio",
    },
  ];
  let productVectors: number[][];

  blockHooks(!apertium.found, {
    async beforeAll() {
      if (!apertium.found) return; // (narrows the type)
      // Fake timers: the first texts also start Apertium, which a loaded machine makes slow, never wrong.
      translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs: 5000, timers: new FakeTimers() });
      translating = new TranslatingEmbedder(model, translator);
      productVectors = await translating.embed(
        products.map((product) => embeddingText(product, [])),
        "document",
      );
    },
    async afterAll() {
      await translator.close();
      await model.dispose();
    },
  });

  const best = async (query: string) => {
    const [vector] = await translating.embed([query], "query");
    const scores = productVectors.map((product) => cosineSimilarity(vector as number[], product));
    return products[scores.indexOf(Math.max(...scores))]?.name;
  };

  test("a Spanish query finds an English product", async () => {
    expect(await best("funda de terciopelo para los cojines del sofá")).toBe("Velvet cushion cover");
    expect(await best("una botella d agua q mantenga el agua fria")).toBe("Stainless steel water bottle");
  });

  test("an English query finds a Spanish product", async () => {
    expect(await best("a school backpack for my kid")).toBe("Mochila escolar");
  });
});
