import { beforeEach, describe, expect, test } from "bun:test";
import { cosineSimilarity, MemoryProductRepository } from "../../src/adapters/memory/product-repository.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { EmbeddingUnavailable, GenerationUnavailable, InvalidInput } from "../../src/domain/errors.ts";
import type { NewProduct } from "../../src/domain/product.ts";
import {
  NOTHING_MATCHED,
  QUERY_MAX_LENGTH,
  SEARCH_LIMIT,
  SearchAndRecommend,
} from "../../src/domain/search-and-recommend.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { FakeGenerator } from "../fakes/fake-generator.ts";

const CATALOGUE: NewProduct[] = [
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

async function fillCatalogue(): Promise<void> {
  const create = new CreateProduct({ products, embedder });
  for (const product of CATALOGUE) await create.execute(product);
  embedder.calls.length = 0;
}

describe("SearchAndRecommend: input", () => {
  test("limit defaults to 5", async () => {
    await fillCatalogue();
    expect(CATALOGUE.length).toBeGreaterThan(SEARCH_LIMIT.default);
    expect(SEARCH_LIMIT.default).toBe(5);
    expect((await search.execute({ query: "café" })).results).toHaveLength(5);
    expect((await search.execute({ query: "café", limit: undefined })).results).toHaveLength(5);
  });

  test("limits 1 and 50 are accepted", async () => {
    await fillCatalogue();
    expect((await search.execute({ query: "café", limit: 1 })).results).toHaveLength(1);
    expect((await search.execute({ query: "café", limit: 50 })).results).toHaveLength(CATALOGUE.length);
  });

  for (const limit of [0, -1, 51, 1000, 2.5, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    test(`limit ${limit}: InvalidInput naming 'limit', nothing embedded or generated`, async () => {
      const error = await search.execute({ query: "café", limit }).catch((caught) => caught);
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
      const error = await search.execute({ query }).catch((caught) => caught);
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toContain("'query'");
      expect(embedder.calls).toHaveLength(0);
    });
  }

  test("a query at the maximum length after trimming is accepted", async () => {
    const query = ` ${"a".repeat(QUERY_MAX_LENGTH)} `;
    expect((await search.execute({ query })).query).toBe(query);
  });
});

describe("SearchAndRecommend: results", () => {
  test("embeds the trimmed query once, as a query", async () => {
    await fillCatalogue();
    await search.execute({ query: "  café para casa \n" });
    expect(embedder.calls).toEqual([{ text: "café para casa", purpose: "query" }]);
  });

  test("results are the most similar products, best first, at most limit", async () => {
    await fillCatalogue();
    const query = "café en grano para casa";
    const { results } = await search.execute({ query, limit: 3 });
    expect(results).toHaveLength(3);

    const queryVector = (await embedder.embed([query], "query"))[0] ?? [];
    const expected = await Promise.all(
      CATALOGUE.map(async (product, index) => ({
        id: index + 1,
        score: cosineSimilarity(
          queryVector,
          (await embedder.embed([`${product.name}\n${product.description}`], "document"))[0] ?? [],
        ),
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
    const { results } = await search.execute({ query: "lámpara de escritorio", limit: 1 });
    expect(results).toEqual([{ id: 9, ...(CATALOGUE[8] as NewProduct), score: expect.any(Number) }]);
    expect(results[0]?.score).toBeGreaterThan(0);
    expect(results[0]?.score).toBeLessThanOrEqual(1 + 1e-9);
  });

  test("the generator gets exactly the returned products and the trimmed query", async () => {
    await fillCatalogue();
    const result = await search.execute({ query: "  botas para montaña ", limit: 2 });
    expect(generator.requests).toHaveLength(1);
    expect(generator.requests[0]?.query).toBe("botas para montaña");
    expect(generator.requests[0]?.products).toEqual(result.results);
  });

  test("the recommendation is labelled [PROVIDER - model]", async () => {
    await fillCatalogue();
    const result = await search.execute({ query: "taza", limit: 2 });
    const answer = await new FakeGenerator().generate({ query: "taza", products: result.results });
    expect(result.recommendation).toBe(`[${answer.provider} - ${answer.model}] ${answer.text}`);
    expect(result.recommendation.startsWith("[FAKE - fake-1] ")).toBe(true);
  });

  test("the query echoed is the one submitted, untrimmed", async () => {
    await fillCatalogue();
    expect((await search.execute({ query: "  Café  " })).query).toBe("  Café  ");
  });

  test("an empty catalogue: no results, the nothing-matched text and no generator call", async () => {
    const result = await search.execute({ query: " zapatillas " });
    expect(result).toEqual({ query: " zapatillas ", recommendation: NOTHING_MATCHED, results: [], citedIds: [] });
    expect(generator.requests).toHaveLength(0);
  });
});

describe("SearchAndRecommend: failures", () => {
  test("the embedder failing or returning a zero vector: EmbeddingUnavailable, no search, no generation", async () => {
    await fillCatalogue();
    for (const mode of ["fail", "zero"] as const) {
      embedder.mode = mode;
      await expect(search.execute({ query: "café" })).rejects.toBeInstanceOf(EmbeddingUnavailable);
    }
    expect(generator.requests).toHaveLength(0);
  });

  test("the generator rejecting propagates as GenerationUnavailable", async () => {
    await fillCatalogue();
    generator.fail = true;
    await expect(search.execute({ query: "café" })).rejects.toBeInstanceOf(GenerationUnavailable);
    expect(generator.requests).toHaveLength(1);
  });
});

describe("SearchAndRecommend logging", () => {
  test("logs one search event with the step times and who wrote the recommendation, never the query", async () => {
    await fillCatalogue();
    const events: Record<string, unknown>[] = [];
    const logged = new SearchAndRecommend({ products, embedder, generator, log: (event) => events.push(event) });
    await logged.execute({ query: "secreto café", limit: 3 });
    expect(events).toEqual([
      {
        event: "search",
        results: 3,
        embedMs: expect.any(Number),
        searchMs: expect.any(Number),
        generateMs: expect.any(Number),
        recommendedBy: "FAKE - fake-1",
      },
    ]);
    expect(JSON.stringify(events)).not.toContain("secreto");
  });

  test("an empty catalogue logs a search with no recommender", async () => {
    const events: Record<string, unknown>[] = [];
    await new SearchAndRecommend({ products, embedder, generator, log: (event) => events.push(event) }).execute({
      query: "algo",
    });
    expect(events[0]).toMatchObject({ event: "search", results: 0, recommendedBy: null });
  });
});
