import { beforeEach, describe, expect, test } from "bun:test";
import { RESULT_WINDOW } from "../../src/domain/browse-results.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { EmbeddingUnavailable, GenerationUnavailable, InvalidInput } from "../../src/domain/errors.ts";
import { ManageProducts } from "../../src/domain/manage-products.ts";
import { embeddingText, type ProductFields } from "../../src/domain/product.ts";
import {
  DEFAULT_RANKING,
  NOTHING_MATCHED,
  QUERY_MAX_LENGTH,
  SEARCH_LIMIT,
  SearchAndRecommend,
  type SearchEvent,
} from "../../src/domain/search-and-recommend.ts";
import type { LexicalQuery } from "../../src/ports/product-repository.ts";
import type { Translation, TranslationOptions, Translator } from "../../src/ports/translator.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { FakeGenerator } from "../fakes/fake-generator.ts";
import { cosineSimilarity, MemoryProductRepository } from "../fakes/memory-product-repository.ts";
import { MemorySynonymStore } from "../fakes/memory-synonym-store.ts";

const CATALOGUE: ProductFields[] = [
  { name: "Zapatillas de running", description: "Ligeras para correr en asfalto", category: "Deporte" },
  { name: "Botas de montaña", description: "Impermeables para senderismo", category: "Deporte" },
  { name: "Cafetera italiana", description: "Café espresso en casa", category: "Hogar" },
  { name: "Molinillo de café", description: "Muele café en grano", category: "Hogar" },
  { name: "Camiseta técnica", description: "Transpirable para correr", category: "Ropa" },
  { name: "Mochila de senderismo", description: "Treinta litros para montaña", category: "Deporte" },
  { name: "Taza de café", description: "Cerámica para café con leche", category: "Hogar" },
  { name: "Calcetines de running", description: "Sin costuras para correr", category: "Ropa" },
  { name: "Lámpara de escritorio", description: "Luz cálida regulable", category: "Hogar" },
];

let products: MemoryProductRepository;
let embedder: FakeEmbedder;
let generator: FakeGenerator;
let search: SearchAndRecommend;

beforeEach(() => {
  embedder = new FakeEmbedder(128);
  products = new MemoryProductRepository(128);
  generator = new FakeGenerator();
  search = new SearchAndRecommend({ products, embedder, generator });
});

async function fillCatalogue(catalogue = "default"): Promise<void> {
  await products.create(catalogue);
  const create = new CreateProduct({ products, embedder });
  for (const product of CATALOGUE) await create.execute(product, { catalogue });
  embedder.calls.length = 0;
}

describe("SearchAndRecommend: input", () => {
  test("limit defaults to 5", async () => {
    await fillCatalogue();
    expect(CATALOGUE.length).toBeGreaterThan(SEARCH_LIMIT.default);
    expect(SEARCH_LIMIT.default).toBe(5);
    expect((await search.execute({ query: "café" }, { catalogue: "default" })).results).toHaveLength(5);
    expect((await search.execute({ query: "café", limit: undefined }, { catalogue: "default" })).results).toHaveLength(
      5,
    );
  });

  test("limits 1 and 50 are accepted", async () => {
    await fillCatalogue();
    expect((await search.execute({ query: "café", limit: 1 }, { catalogue: "default" })).results).toHaveLength(1);
    expect((await search.execute({ query: "café", limit: 50 }, { catalogue: "default" })).results).toHaveLength(
      CATALOGUE.length,
    );
  });

  for (const limit of [0, -1, 51, 1000, 2.5, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    test(`limit ${limit}: InvalidInput naming 'limit', nothing embedded or generated`, async () => {
      const error = await search.execute({ query: "café", limit }, { catalogue: "default" }).catch((caught) => caught);
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toContain("'limit'");
      expect(embedder.calls).toHaveLength(0);
      expect(generator.requests).toHaveLength(0);
    });
  }

  for (const [label, query] of [
    ["empty", ""],
    ["whitespace only", "  \t\n "],
    ["too long", "a".repeat(QUERY_MAX_LENGTH + 1)],
    ["too long after trimming", ` ${"a".repeat(QUERY_MAX_LENGTH + 1)} `],
  ] as const) {
    test(`query ${label}: InvalidInput naming 'query', nothing embedded`, async () => {
      const error = await search.execute({ query }, { catalogue: "default" }).catch((caught) => caught);
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toContain("'query'");
      expect(embedder.calls).toHaveLength(0);
    });
  }

  test("a query at the maximum length after trimming is accepted", async () => {
    const query = ` ${"a".repeat(QUERY_MAX_LENGTH)} `;
    expect((await search.execute({ query }, { catalogue: "default" })).query).toBe(query);
  });
});

describe("SearchAndRecommend: results", () => {
  test("embeds the trimmed query once, as a query", async () => {
    await fillCatalogue();
    await search.execute({ query: "  café para casa \n" }, { catalogue: "default" });
    expect(embedder.calls).toEqual([{ text: "café para casa", purpose: "query" }]);
  });

  test("results are the most similar products, best first, at most limit", async () => {
    await fillCatalogue();
    const query = "café en grano para casa";
    const { results } = await search.execute({ query, limit: 3 }, { catalogue: "default" });
    expect(results).toHaveLength(3);

    const queryVector = (await embedder.embed([query], "query"))[0] ?? [];
    const expected = await Promise.all(
      CATALOGUE.map(async (product, index) => ({
        id: index + 1,
        score: cosineSimilarity(queryVector, (await embedder.embed([embeddingText(product, [])], "document"))[0] ?? []),
      })),
    );
    expected.sort((a, b) => b.score - a.score || a.id - b.id);
    expect(results.map((result) => result.id)).toEqual(expected.slice(0, 3).map((hit) => hit.id));
    for (const [i, result] of results.entries()) {
      expect(result.score).toBeCloseTo(expected[i]?.score ?? Number.NaN, 10);
      if (i > 0) expect(result.score).toBeLessThanOrEqual(results[i - 1]?.score ?? Number.NaN);
    }
    expect(results[0]?.name).toBe("Molinillo de café");
  });

  test("each result carries the product's fields and its score", async () => {
    await fillCatalogue();
    const { results } = await search.execute({ query: "lámpara de escritorio", limit: 1 }, { catalogue: "default" });
    expect(results).toEqual([{ id: 9, ...(CATALOGUE[8] as ProductFields), score: expect.any(Number) }]);
    expect(results[0]?.score).toBeGreaterThan(0);
    expect(results[0]?.score).toBeLessThanOrEqual(1 + 1e-9);
  });

  test("the generator gets exactly the returned products and the trimmed query", async () => {
    await fillCatalogue();
    const result = await search.execute({ query: "  botas para montaña ", limit: 2 }, { catalogue: "default" });
    expect(generator.requests).toHaveLength(1);
    expect(generator.requests[0]?.query).toBe("botas para montaña");
    expect(generator.requests[0]?.products).toEqual(result.results);
  });

  test("the recommendation is labelled [PROVIDER - model]", async () => {
    await fillCatalogue();
    const result = await search.execute({ query: "taza", limit: 2 }, { catalogue: "default" });
    const answer = await new FakeGenerator().generate({ query: "taza", products: result.results });
    expect(result.recommendation).toBe(`[${answer.provider} - ${answer.model}] ${answer.text}`);
    expect(result.recommendation.startsWith("[FAKE - fake-1] ")).toBe(true);
  });

  test("the query echoed is the one submitted, untrimmed", async () => {
    await fillCatalogue();
    expect((await search.execute({ query: "  Café  " }, { catalogue: "default" })).query).toBe("  Café  ");
  });

  test("an empty catalogue: no results, the nothing-matched text and no generator call", async () => {
    const result = await search.execute({ query: " zapatillas " }, { catalogue: "default" });
    expect(result).toEqual({
      searchId: expect.any(String),
      query: " zapatillas ",
      recommendation: NOTHING_MATCHED,
      results: [],
      citedIds: [],
    });
    expect(generator.requests).toHaveLength(0);
  });
});

describe("SearchAndRecommend: failures", () => {
  test("the embedder failing or returning a zero vector: EmbeddingUnavailable, no search, no generation", async () => {
    await fillCatalogue();
    for (const mode of ["fail", "zero"] as const) {
      embedder.mode = mode;
      await expect(search.execute({ query: "café" }, { catalogue: "default" })).rejects.toBeInstanceOf(
        EmbeddingUnavailable,
      );
    }
    expect(generator.requests).toHaveLength(0);
  });

  test("the generator rejecting propagates as GenerationUnavailable", async () => {
    await fillCatalogue();
    generator.fail = true;
    await expect(search.execute({ query: "café" }, { catalogue: "default" })).rejects.toBeInstanceOf(
      GenerationUnavailable,
    );
    expect(generator.requests).toHaveLength(1);
  });
});

describe("SearchAndRecommend logging", () => {
  test("logs one search event with the step times and who wrote the recommendation, never the query", async () => {
    await fillCatalogue();
    const events: Record<string, unknown>[] = [];
    const logged = new SearchAndRecommend({ products, embedder, generator, log: (event) => events.push(event) });
    await logged.execute({ query: "secreto café", limit: 3 }, { catalogue: "default" });
    expect(events).toEqual([
      {
        event: "search",
        mode: "semantic",
        results: 3,
        embedMs: expect.any(Number),
        searchMs: expect.any(Number),
        checkMs: expect.any(Number),
        generateMs: expect.any(Number),
        recommendedBy: "FAKE - fake-1",
      },
    ]);
    expect(JSON.stringify(events)).not.toContain("secreto");
  });

  test("an empty catalogue logs a search with no recommender", async () => {
    const events: Record<string, unknown>[] = [];
    await new SearchAndRecommend({ products, embedder, generator, log: (event) => events.push(event) }).execute(
      {
        query: "algo",
      },
      { catalogue: "default" },
    );
    expect(events[0]).toMatchObject({ event: "search", results: 0, recommendedBy: null });
  });
});

describe("SearchAndRecommend: the catalogue as it is", () => {
  test("a category filter (one or several) keeps only those products, most similar first", async () => {
    await fillCatalogue();
    const hogar = await search.execute(
      { query: "café para correr", limit: 10, category: "Hogar" },
      { catalogue: "default" },
    );
    expect(hogar.results.map((product) => product.category)).toEqual(["Hogar", "Hogar", "Hogar", "Hogar"]);
    const two = await search.execute(
      { query: "correr", limit: 3, category: ["Ropa", " Deporte "] },
      { catalogue: "default" },
    );
    expect(two.results.every((product) => ["Ropa", "Deporte"].includes(product.category))).toBe(true);
    expect(two.results).toHaveLength(3);
    const none = await search.execute({ query: "café", category: "Juguetes" }, { catalogue: "default" });
    expect(none).toEqual({
      searchId: expect.any(String),
      query: "café",
      recommendation: NOTHING_MATCHED,
      results: [],
      citedIds: [],
    });
    await expect(search.execute({ query: "café", category: [] }, { catalogue: "default" })).rejects.toBeInstanceOf(
      InvalidInput,
    );
  });

  test("a fixed filter (a tenant token's) is narrowed by the request, never widened; no overlap finds nothing", async () => {
    await fillCatalogue();
    const filter = { category: ["Hogar", "Ropa"] };
    const all = await search.execute({ query: "café para correr", limit: 10 }, { catalogue: "default", filter });
    expect(new Set(all.results.map((product) => product.category))).toEqual(new Set(["Hogar", "Ropa"]));
    const narrowed = await search.execute(
      { query: "correr", limit: 10, category: ["Ropa", "Deporte"] },
      { catalogue: "default", filter },
    );
    expect(narrowed.results.map((product) => product.category)).toEqual(["Ropa", "Ropa"]);
    // Asking for what the filter leaves out finds nothing (not an error), without embedding the query.
    embedder.calls.length = 0;
    const widened = await search.execute({ query: "botas", category: "Deporte" }, { catalogue: "default", filter });
    expect(widened).toEqual({
      searchId: expect.any(String),
      query: "botas",
      recommendation: NOTHING_MATCHED,
      results: [],
      citedIds: [],
    });
    const streamed: SearchEvent[] = [];
    for await (const event of search.stream({ query: "botas", category: "Deporte" }, { catalogue: "default", filter }))
      streamed.push(event);
    expect(streamed.map((event) => event.type)).toEqual(["results", "done"]);
    expect(embedder.calls).toEqual([]);
  });

  test("a product deleted while the recommendation is being written is not in the answer", async () => {
    await fillCatalogue();
    const generate = generator.generate.bind(generator);
    let deleted = false;
    generator.generate = async (request, signal) => {
      // The first time only: the product found first is deleted before the answer leaves.
      const first = request.products[0];
      if (!deleted && first) {
        deleted = true;
        await products.in("default").remove(first.id);
      }
      return generate(request, signal);
    };
    const { results, recommendation } = await search.execute(
      { query: "cafetera italiana", limit: 3 },
      { catalogue: "default" },
    );
    expect(results.map((product) => product.name)).not.toContain("Cafetera italiana");
    expect(recommendation).not.toContain("Cafetera italiana");
    expect(generator.requests).toHaveLength(2);
  });

  test("a product renamed mid-search is answered with its new text, never the old", async () => {
    await fillCatalogue();
    const manage = new ManageProducts({ products, embedder });
    const generate = generator.generate.bind(generator);
    let renamed = false;
    generator.generate = async (request, signal) => {
      const first = request.products[0];
      if (!renamed && first) {
        renamed = true;
        await manage.update("default", first.id, { name: "Lámpara de pie", description: "Luz cálida para el salón" });
      }
      return generate(request, signal);
    };
    const { results } = await search.execute({ query: "cafetera italiana", limit: 9 }, { catalogue: "default" });
    expect(results.map((product) => product.name)).not.toContain("Cafetera italiana");
    expect(results.map((product) => product.name)).toContain("Lámpara de pie");
  });

  test("the streamed search sends the results first, then the text, then done with the label and citations", async () => {
    await fillCatalogue();
    generator.write = ({ products: found }) => `Le recomiendo ${found[0]?.name} [#${found[0]?.id}] y no [#999].`;
    const events = [];
    for await (const event of search.stream({ query: "cafetera italiana", limit: 2 }, { catalogue: "default" }))
      events.push(event);
    expect(events[0]).toMatchObject({ type: "results", query: "cafetera italiana" });
    const results = (events[0] as { results: { id: number; name: string }[] }).results;
    expect(results).toHaveLength(2);
    expect(generator.requests[0]?.products.map((product) => product.id)).toEqual(results.map((product) => product.id));
    const text = events
      .filter((event) => event.type === "delta")
      .map((event) => (event as { text: string }).text)
      .join("");
    const done = events.at(-1);
    expect(done).toEqual({
      type: "done",
      searchId: (events[0] as { searchId: string }).searchId,
      recommendation: `[FAKE - fake-1] ${text}`,
      citedIds: [results[0]?.id as number],
      writer: { provider: "FAKE", model: "fake-1", position: 0 },
    });
    expect(text).toBe(`Le recomiendo ${results[0]?.name} [#${results[0]?.id}] y no.`);
  });
});

/** Takes queries with "ñ" or starting "el " to be Spanish and "translates" them by upper-casing; counts its calls. */
class FakeTranslator implements Translator {
  readonly name = "fake-translator";
  readonly calls: string[][] = [];
  fail = false;

  async toEnglish(texts: readonly string[]): Promise<Translation[]> {
    this.calls.push([...texts]);
    if (this.fail) throw new Error("fake translator: crashed");
    return texts.map((text) =>
      /ñ|^el /.test(text)
        ? { text: `english of ${text}`, language: "es", translated: true }
        : { text, language: "en", translated: false },
    );
  }

  async close(): Promise<void> {}
}

/**
 * Reads "casio" as a misspelling of "casino" (as Apertium's typo repair does: one letter put back
 * gives exactly one Spanish word) unless told to keep it; records the words it was told to keep.
 */
class RepairingTranslator implements Translator {
  readonly name = "repairing-translator";
  readonly kept: (readonly string[])[] = [];

  async toEnglish(
    texts: readonly string[],
    _signal?: AbortSignal,
    options?: TranslationOptions,
  ): Promise<Translation[]> {
    const keep = options?.keepWords ?? [];
    this.kept.push(keep);
    return texts.map((text) => {
      const repaired = !keep.includes("casio") && /\bcasio\b/.test(text);
      return {
        text: text.replace("reloj", "watch").replace(/\bcasio\b/, repaired ? "casino" : "casio"),
        language: "es",
        translated: true,
        ...(repaired ? { typoRepairs: ["casio"] } : {}),
      };
    });
  }

  async close(): Promise<void> {}
}

describe("SearchAndRecommend: names are not typos", () => {
  /** Fills `default` and `relojes`, where a Casio watch is sold; the search translates through RepairingTranslator. */
  async function shopsAndSearch() {
    await fillCatalogue();
    await fillCatalogue("relojes");
    await new CreateProduct({ products, embedder }).execute(
      { name: "Reloj Casio F-91W", description: "Digital, resistente al agua", category: "Relojes" },
      { catalogue: "relojes" },
    );
    embedder.calls.length = 0;
    const translator = new RepairingTranslator();
    return { translator, searching: new SearchAndRecommend({ products, embedder, generator, translator }) };
  }

  test("a word taken for a misspelling that the catalogue's names hold is kept: the query is translated again", async () => {
    const { translator, searching } = await shopsAndSearch();
    await searching.execute({ query: "reloj casio" }, { catalogue: "relojes" });
    expect(embedder.calls).toEqual([{ text: "watch casio", purpose: "query" }]);
    expect(translator.kept).toEqual([[], ["casio"]]);
  });

  test("a repaired word the catalogue does not hold (another catalogue may) stays repaired, translated once", async () => {
    const { translator, searching } = await shopsAndSearch();
    await searching.execute({ query: "reloj casio" }, { catalogue: "default" });
    expect(embedder.calls).toEqual([{ text: "watch casino", purpose: "query" }]);
    expect(translator.kept).toEqual([[]]);
  });
});

describe("SearchAndRecommend: one pipeline", () => {
  test("a hybrid query is translated once: the embedder gets its English, the lexical side both texts", async () => {
    await fillCatalogue();
    const translator = new FakeTranslator();
    const lexical: (readonly string[])[] = [];
    const hybridCandidates = products.in("default").hybridCandidates.bind(products.in("default"));
    products.in("default").hybridCandidates = async (embedding, words, query) => {
      lexical.push(words.texts);
      return hybridCandidates(embedding, words, query);
    };
    const translating = new SearchAndRecommend({ products, embedder, generator, translator });
    for (const search of [
      () => translating.execute({ query: " el café ", mode: "hybrid" }, { catalogue: "default" }),
      async () => {
        for await (const _ of translating.stream({ query: " el café ", mode: "hybrid" }, { catalogue: "default" }));
      },
    ]) {
      translator.calls.length = 0;
      embedder.calls.length = 0;
      lexical.length = 0;
      await search();
      expect(translator.calls).toEqual([["el café"]]);
      expect(embedder.calls).toEqual([{ text: "english of el café", purpose: "query" }]);
      expect(lexical).toEqual([["el café", "english of el café"]]);
    }
  });

  test("a query the translator leaves as it is is matched alone; a semantic one is translated for the embedder", async () => {
    await fillCatalogue();
    const translator = new FakeTranslator();
    const translating = new SearchAndRecommend({ products, embedder, generator, translator });
    const lexical: (readonly string[])[] = [];
    const hybridCandidates = products.in("default").hybridCandidates.bind(products.in("default"));
    products.in("default").hybridCandidates = async (embedding, words, query) => {
      lexical.push(words.texts);
      return hybridCandidates(embedding, words, query);
    };
    await translating.execute({ query: "coffee", mode: "hybrid" }, { catalogue: "default" });
    expect(lexical).toEqual([["coffee"]]);
    await translating.execute({ query: "el café" }, { catalogue: "default" });
    expect(translator.calls).toEqual([["coffee"], ["el café"]]);
    expect(embedder.calls.map((call) => call.text)).toEqual(["coffee", "english of el café"]);
  });

  test("a translator that fails: the query is searched as it is and a translation_failed warning is logged", async () => {
    await fillCatalogue();
    const translator = new FakeTranslator();
    translator.fail = true;
    const events: Record<string, unknown>[] = [];
    const translating = new SearchAndRecommend({
      products,
      embedder,
      generator,
      translator,
      log: (event) => events.push(event),
    });
    const { results } = await translating.execute({ query: "el café", mode: "hybrid" }, { catalogue: "default" });
    expect(results.length).toBeGreaterThan(0);
    expect(embedder.calls).toEqual([{ text: "el café", purpose: "query" }]);
    expect(events[0]).toMatchObject({ event: "translation_failed", translator: "fake-translator", purpose: "query" });
    expect(events[1]).toMatchObject({ event: "search" });
  });

  test("the JSON answer collects what the stream sends: the same results, recommendation and citations", async () => {
    await fillCatalogue();
    generator.write = ({ products: found }) => `Le recomiendo ${found[1]?.name} [#${found[1]?.id}] y [#999].`;
    const whole = await search.execute({ query: "café en grano", limit: 3 }, { catalogue: "default" });
    const events: SearchEvent[] = [];
    for await (const event of search.stream({ query: "café en grano", limit: 3 }, { catalogue: "default" }))
      events.push(event);
    expect(events[0]).toEqual({
      type: "results",
      searchId: expect.any(String),
      query: "café en grano",
      results: whole.results,
    });
    expect(events.at(-1)).toMatchObject({
      type: "done",
      recommendation: whole.recommendation,
      citedIds: whole.citedIds,
    });
    expect(whole.citedIds).toEqual([whole.results[1]?.id as number]);
  });

  test("a product deleted before a streamed search's first event is not in it: the search ran again", async () => {
    await fillCatalogue();
    const searchByVector = products.in("default").searchByVector.bind(products.in("default"));
    let runs = 0;
    products.in("default").searchByVector = async (embedding, query) => {
      const hits = await searchByVector(embedding, query);
      // After the first retrieval only, the product found first is deleted before the results leave.
      if (++runs === 1 && hits[0]) await products.in("default").remove(hits[0].id);
      return hits;
    };
    const events: SearchEvent[] = [];
    for await (const event of search.stream({ query: "cafetera italiana", limit: 3 }, { catalogue: "default" }))
      events.push(event);
    expect(runs).toBe(2);
    const results = (events[0] as { results: ProductFields[] }).results;
    expect(results.map((product) => product.name)).not.toContain("Cafetera italiana");
    expect(results).toHaveLength(3);
    expect(generator.requests).toHaveLength(1);
    expect(generator.requests[0]?.products.map((product) => product.name)).not.toContain("Cafetera italiana");
  });

  test("a product that keeps changing through every run is left out of the answer and of its citations", async () => {
    await fillCatalogue();
    const manage = new ManageProducts({ products, embedder });
    generator.write = ({ products: found }) => found.map((product) => `${product.name} [#${product.id}]`).join(", ");
    const generate = generator.generate.bind(generator);
    let target: number | undefined;
    generator.generate = async (request, signal) => {
      target ??= request.products[0]?.id;
      // Every run: the first product changes while its recommendation is written.
      if (target !== undefined)
        await manage.update("default", target, { category: `Cambio ${generator.requests.length}` });
      return generate(request, signal);
    };
    const { results, citedIds, recommendation } = await search.execute(
      { query: "cafetera italiana", limit: 3 },
      { catalogue: "default" },
    );
    expect(generator.requests).toHaveLength(3);
    expect(results.map((product) => product.id)).not.toContain(target);
    expect(results).toHaveLength(2);
    expect(citedIds).toEqual(results.map((product) => product.id));
    expect(recommendation).not.toContain(`[#${target}]`);
  });
});

/** A translator that tells which words no dictionary of it knows: those listed as `unknown`. */
class KnowingTranslator implements Translator {
  readonly name = "knowing-translator";
  constructor(
    private readonly unknown: readonly string[],
    private readonly alternatives: readonly string[] = [],
  ) {}

  async toEnglish(texts: readonly string[]): Promise<Translation[]> {
    return texts.map((text) => {
      const words = text.toLowerCase().match(/\p{L}+/gu) ?? [];
      const unknownWords = words.filter((word) => this.unknown.includes(word));
      return {
        text,
        language: unknownWords.length === words.length ? "unknown" : "es",
        translated: false,
        ...(unknownWords.length > 0 ? { unknownWords } : {}),
        ...(this.alternatives.length > 0 ? { alternatives: [...this.alternatives] } : {}),
      };
    });
  }

  async close(): Promise<void> {}
}

describe("SearchAndRecommend: honest empty answers", () => {
  const ranking = { categoryBoost: 0.4, minScore: 0.3, relevantShare: 0 };

  test("below the relevance threshold nothing matches: no products, the nothing-matched sentence, no model asked", async () => {
    await fillCatalogue();
    const strict = new SearchAndRecommend({ products, embedder, generator, ranking });
    for (const mode of ["semantic", "hybrid", "lexical"] as const) {
      // No word in common with any product: every cosine is 0 with the bag-of-words embedder.
      const nothing = await strict.execute({ query: "patinete eléctrico plegable", mode }, { catalogue: "default" });
      expect(nothing).toMatchObject({ results: [], recommendation: NOTHING_MATCHED, citedIds: [] });
      const events: SearchEvent[] = [];
      for await (const event of strict.stream(
        { query: "patinete eléctrico plegable", mode },
        { catalogue: "default" },
      )) {
        events.push(event);
      }
      expect(events).toEqual([
        { type: "results", searchId: expect.any(String), query: "patinete eléctrico plegable", results: [] },
        { type: "done", searchId: expect.any(String), recommendation: NOTHING_MATCHED, citedIds: [], writer: null },
      ]);
      // A query near enough is answered as always.
      expect(
        (await strict.execute({ query: "molinillo de café", mode }, { catalogue: "default" })).results.length,
      ).toBeGreaterThan(0);
    }
    expect(generator.requests).toHaveLength(3);
  });

  test("a threshold of 0 answers every search (the contract's behaviour)", async () => {
    await fillCatalogue();
    const open = new SearchAndRecommend({ products, embedder, generator, ranking: { ...ranking, minScore: 0 } });
    expect(
      (await open.execute({ query: "patinete eléctrico plegable" }, { catalogue: "default" })).results,
    ).toHaveLength(5);
  });

  test("a query of words no dictionary knows, none of them the catalogue's, answers nothing however near its products", async () => {
    await fillCatalogue();
    // "sdfgh" shares nothing; the catalogue's own words are near by meaning and by spelling.
    const translator = new KnowingTranslator(["sdfgh", "qwert", "cafe", "casio", "7200"]);
    const strict = new SearchAndRecommend({ products, embedder, generator, translator, ranking });
    // Near products (a word of the query is in "Taza de café"), but nothing in it can be read.
    await new CreateProduct({ products, embedder }).execute(
      { name: "Taza sdfgh", description: "", category: "Hogar" },
      { catalogue: "default" },
    );
    // "sdfgh" is now a word of a name: the catalogue knows it, so it is read.
    expect((await strict.execute({ query: "sdfgh" }, { catalogue: "default" })).results.length).toBeGreaterThan(0);
    expect(await strict.execute({ query: "qwert sdfgj" }, { catalogue: "default" })).toMatchObject({
      results: [],
      recommendation: NOTHING_MATCHED,
    });
    // A number may be a size or a model: read.
    expect(
      (await strict.execute({ query: "qwert 7200 café" }, { catalogue: "default" })).results.length,
    ).toBeGreaterThan(0);
    // Without a translator to tell, every query is read (the cosine threshold alone applies).
    const untold = new SearchAndRecommend({ products, embedder, generator, ranking });
    expect((await untold.execute({ query: "sdfgj taza" }, { catalogue: "default" })).results.length).toBeGreaterThan(0);
  });

  test("a term of the catalogue's synonyms makes a query readable", async () => {
    await fillCatalogue();
    const synonyms = new MemorySynonymStore();
    await synonyms.replace("default", [["birra", "taza de café"]]);
    const translator = new KnowingTranslator(["birra"]);
    const strict = new SearchAndRecommend({ products, embedder, generator, translator, synonyms, ranking });
    const answer = await strict.execute({ query: "birra", mode: "hybrid" }, { catalogue: "default" });
    expect(answer.results[0]?.name).toBe("Taza de café");
  });
});

describe("SearchAndRecommend: the lexical side (hybrid and lexical modes)", () => {
  /** The lexical queries the repository is asked, in order. */
  function captureLexical(): LexicalQuery[] {
    const asked: LexicalQuery[] = [];
    const repository = products.in("default");
    const hybridCandidates = repository.hybridCandidates.bind(repository);
    repository.hybridCandidates = async (embedding, lexical, query) => {
      asked.push(lexical);
      return hybridCandidates(embedding, lexical, query);
    };
    return asked;
  }

  test("the catalogue's synonyms change results at once, without embedding anything; other catalogues keep theirs", async () => {
    await fillCatalogue();
    // Another catalogue with the same products: the default catalogue's synonyms are not its own.
    await fillCatalogue("otro");
    const synonyms = new MemorySynonymStore();
    const withSynonyms = new SearchAndRecommend({ products, embedder, generator, synonyms });
    const first = async (catalogue = "default") =>
      (await withSynonyms.execute({ query: "birra", mode: "hybrid", limit: 1 }, { catalogue })).results[0]?.name;
    expect(await first()).not.toBe("Taza de café");
    await synonyms.replace("default", [["birra", "taza"]]);
    const embedded = embedder.calls.length;
    expect(await first()).toBe("Taza de café");
    expect(await first("otro")).not.toBe("Taza de café");
    // Only the queries were embedded: no product again.
    expect(embedder.calls.slice(embedded).every((call) => call.purpose === "query")).toBe(true);
  });

  test("synonyms, the dictionary's other translations and the words to read by spelling reach the lexical query", async () => {
    await fillCatalogue();
    const synonyms = new MemorySynonymStore();
    await synonyms.replace("default", [
      ["cafetera", "moka"],
      ["tetera", "hervidor"],
    ]);
    const translator = new KnowingTranslator(["cafetrea"], ["coffee maker"]);
    const asked = captureLexical();
    const searching = new SearchAndRecommend({ products, embedder, generator, synonyms, translator });
    await searching.execute({ query: "Cafetera cafetrea", mode: "lexical" }, { catalogue: "default" });
    expect(asked).toEqual([
      { texts: ["Cafetera cafetrea"], expansions: ["coffee maker", "moka"], misspellable: ["cafetrea"] },
    ]);
    // Without a translator, any word may be misspelt.
    asked.length = 0;
    await new SearchAndRecommend({ products, embedder, generator, synonyms }).execute(
      { query: "cafetrea", mode: "hybrid" },
      { catalogue: "default" },
    );
    expect(asked).toEqual([{ texts: ["cafetrea"], expansions: [], misspellable: undefined }]);
    // A semantic search asks nothing of the lexical side (the contract's ranking).
    asked.length = 0;
    await searching.execute({ query: "Cafetera" }, { catalogue: "default" });
    expect(asked).toEqual([]);
  });

  test("approximate candidate cosines: the answers' exact ones are asked for them alone and answered; exact ones are kept as they are", async () => {
    await fillCatalogue();
    const repository = products.in("default");
    const hybridCandidates = repository.hybridCandidates.bind(repository);
    const exactScores = repository.exactScores.bind(repository);
    const asked: number[][] = [];
    repository.exactScores = async (embedding, ids) => {
      asked.push([...ids]);
      return exactScores(embedding, ids);
    };
    const modes = ["hybrid", "lexical"] as const;
    const answer = (mode: (typeof modes)[number]) =>
      search.execute({ query: "café", mode, limit: 3 }, { catalogue: "default" });
    // The memory repository's cosines are exact: nothing more is asked.
    const exact = { hybrid: await answer("hybrid"), lexical: await answer("lexical") };
    expect(asked).toEqual([]);

    // As a repository whose candidates are scored by a half-precision copy: each a little off.
    repository.hybridCandidates = async (embedding, lexical, query) =>
      (await hybridCandidates(embedding, lexical, query)).map((candidate) => ({
        ...candidate,
        score: candidate.score - 1e-4,
        approximateScore: true,
      }));
    for (const mode of modes) {
      asked.length = 0;
      const { results } = await answer(mode);
      expect(asked).toEqual([results.map((result) => result.id)]);
      expect(results).toHaveLength(3);
      // The same answers, with the exact cosines: none of the candidates' own.
      expect(results).toEqual(exact[mode].results);
    }
  });

  test("lexical mode ranks by the words, the cosine ordering what they do not tell apart; alpha is only for hybrid", async () => {
    await fillCatalogue();
    const { results } = await search.execute(
      { query: "lámpara para correr", mode: "lexical", limit: 9 },
      { catalogue: "default" },
    );
    expect(results[0]?.name).toBe("Lámpara de escritorio");
    await expect(
      search.execute({ query: "café", mode: "lexical", alpha: 0.5 }, { catalogue: "default" }),
    ).rejects.toBeInstanceOf(InvalidInput);
  });
});

describe("SearchAndRecommend: search ids and analytics", () => {
  test("every answer names its search, the same id in the stream's results and done; analytics hear of each", async () => {
    await fillCatalogue();
    const kept: unknown[] = [];
    const ids = ["id-1", "id-2", "id-3"];
    const tracked = new SearchAndRecommend({
      products,
      embedder,
      generator,
      analytics: { searched: (search) => kept.push(search) },
      newSearchId: () => ids.shift() as string,
      ranking: { categoryBoost: 0.4, minScore: 0.3, relevantShare: 0 },
    });
    expect(
      (await tracked.execute({ query: "  Café  En grano ", mode: "hybrid" }, { catalogue: "default" })).searchId,
    ).toBe("id-1");
    const events: SearchEvent[] = [];
    for await (const event of tracked.stream({ query: "molinillo" }, { catalogue: "default" })) events.push(event);
    expect(
      events.filter((event) => "searchId" in event).map((event) => (event as { searchId: string }).searchId),
    ).toEqual(["id-2", "id-2"]);
    expect((await tracked.execute({ query: "patinete" }, { catalogue: "default" })).searchId).toBe("id-3");
    expect(kept).toEqual([
      { searchId: "id-1", catalogue: "default", query: "Café  En grano", mode: "hybrid", results: 5 },
      { searchId: "id-2", catalogue: "default", query: "molinillo", mode: "semantic", results: 5 },
      { searchId: "id-3", catalogue: "default", query: "patinete", mode: "semantic", results: 0 },
    ]);
  });
});

describe("SearchAndRecommend: browsing", () => {
  test("a browsing search asks its catalogue for the window of its relevant results, in every mode; a plain one for its limit, exactly ranked", async () => {
    await fillCatalogue();
    const catalogue = products.in("default");
    const asked: Record<string, unknown>[] = [];
    const searchByVector = catalogue.searchByVector.bind(catalogue);
    const hybridCandidates = catalogue.hybridCandidates.bind(catalogue);
    catalogue.searchByVector = (embedding, query) => {
      asked.push({ limit: query.limit, window: query.window });
      return searchByVector(embedding, query);
    };
    catalogue.hybridCandidates = (embedding, lexical, query) => {
      asked.push({ candidates: query.candidates, window: query.window });
      return hybridCandidates(embedding, lexical, query);
    };
    for (const mode of ["semantic", "hybrid"] as const) {
      await search.execute({ query: "café", limit: 3, mode, facets: ["category"] }, { catalogue: "default" });
      await search.execute({ query: "café", limit: 3, mode }, { catalogue: "default" });
    }
    expect(asked).toEqual([
      { limit: RESULT_WINDOW, window: true },
      { limit: 3, window: false },
      { candidates: RESULT_WINDOW, window: true },
      { candidates: 40, window: false },
    ]);
  });

  test("a browsing search's relevant results are those scoring at least relevantShare of its best: its total, facets and every page, sorted or not", async () => {
    await fillCatalogue();
    const query = "café en grano para casa";
    const queryVector = (await embedder.embed([query], "query"))[0] ?? [];
    const cosines = await Promise.all(
      CATALOGUE.map(async (product) =>
        cosineSimilarity(queryVector, (await embedder.embed([embeddingText(product, [])], "document"))[0] ?? []),
      ),
    );
    const best = Math.max(...cosines);
    const share = 0.7;
    const relevant = CATALOGUE.filter((_, i) => (cosines[i] as number) >= share * best);
    // The fake embedder's cosines spread enough for the share to leave some out, and keep more than one.
    expect(relevant.length).toBeGreaterThan(1);
    expect(relevant.length).toBeLessThan(CATALOGUE.length);
    const sharing = new SearchAndRecommend({
      products,
      embedder,
      generator,
      ranking: { ...DEFAULT_RANKING, relevantShare: share },
    });
    const request = { query, limit: 2, facets: ["category"], sort: [{ category: "desc" }] };
    const pages = [];
    for (let offset = 0; offset < CATALOGUE.length; offset += 2) {
      pages.push(await sharing.execute({ ...request, offset }, { catalogue: "default" }));
    }
    expect(pages[0]?.browsed?.total).toEqual({ value: relevant.length, relation: "eq" });
    const counts = new Map<string, number>();
    for (const product of relevant) counts.set(product.category, (counts.get(product.category) ?? 0) + 1);
    expect(pages[0]?.browsed?.facets?.category).toEqual(
      [...counts]
        .map(([value, count]) => ({ value, count }))
        .sort((a, b) => b.count - a.count || a.value.localeCompare(b.value)),
    );
    const shown = pages.flatMap((page) => page.results.map((result) => result.name));
    expect(shown.sort()).toEqual(relevant.map((product) => product.name).sort());
    // The whole window, at 0 (the default of the domain).
    const all = await search.execute({ ...request, offset: 0 }, { catalogue: "default" });
    expect(all.browsed?.total).toEqual({ value: CATALOGUE.length, relation: "eq" });
  });

  test("a page sorted by an attribute is answered in that order, and the writer is given it most relevant first", async () => {
    await products.create("default");
    const create = new CreateProduct({ products, embedder });
    const prices = [12, 30, 5, 48, 20, 9];
    for (const [i, product] of CATALOGUE.slice(0, prices.length).entries()) {
      await create.execute({ ...product, attributes: { price: prices[i] as number } }, { catalogue: "default" });
    }
    for (const stream of [false, true]) {
      generator.requests.length = 0;
      const request = { query: "café en grano para casa", limit: 4, sort: [{ price: "desc" }] };
      const results = stream
        ? ((await Array.fromAsync(search.stream(request, { catalogue: "default" }))).find(
            (event) => event.type === "results",
          )?.results ?? [])
        : (await search.execute(request, { catalogue: "default" })).results;
      const shownPrices = results.map((result) => result.attributes?.price as number);
      expect(shownPrices).toEqual([...shownPrices].sort((a, b) => b - a));
      const written = generator.requests[0]?.products ?? [];
      expect(written.map((product) => product.id).sort()).toEqual(results.map((result) => result.id).sort());
      const scores = written.map((product) => product.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      // The catalogue's best for this query is not its dearest: the orders differ.
      expect(written.map((product) => product.id)).not.toEqual(results.map((result) => result.id));
    }
  });
});
