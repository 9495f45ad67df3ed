/**
 * The product catalogue's repository contract (read, list, update, remove, bulk writes, versions,
 * filtered search), and the isolation of catalogues from each other (nothing of one is ever read,
 * written or found through another), run on the in-memory fake and on every SQL database.
 */
import { describe, expect, test } from "bun:test";
import { PostgresCatalogueRepository } from "../../src/adapters/postgres/catalogue-repository.ts";
import { DEFAULT_SEARCH_PLAN, PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import { type AttributeCondition, meetsConditions } from "../../src/domain/attribute-filter.ts";
import { CatalogueNotFound } from "../../src/domain/errors.ts";
import type { NormalizedProduct, Product } from "../../src/domain/product.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { CatalogueRepository } from "../../src/ports/catalogue-repository.ts";
import type {
  BulkWrite,
  EmbeddedProduct,
  LexicalQuery,
  ProductCatalogues,
  ProductRepository,
} from "../../src/ports/product-repository.ts";
import { cosineSimilarity, MemoryProductRepository } from "../fakes/memory-product-repository.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { forEachDatabase } from "../support/test-databases.ts";

type Open = (dimension: number) => Promise<ProductRepository>;

function row(product: NormalizedProduct, embedding: Vector, digest = "d"): EmbeddedProduct {
  return { product, embedding, contentDigest: digest };
}

async function add(products: ProductRepository, product: NormalizedProduct, embedding: Vector) {
  const result = await products.add(row(product, embedding));
  if (!("created" in result)) throw new Error(`not created: ${JSON.stringify(result)}`);
  return result.created;
}

const shoe = { name: "Zapatilla", description: "Ligera", category: "calzado" };
const boot = { name: "Bota", description: "De montaña", category: "calzado" };
const lamp = { name: "Lámpara", description: "LED", category: "hogar" };
const mug = { name: "Taza", description: "Térmica", category: "cocina" };

/** Products with attributes, and every filter operator's results (lists, searches, hybrid candidates) against a brute-force reading. */
async function everyFilterOperatorAsBruteForce(products: ProductRepository): Promise<void> {
  const random = seededRandom(22);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const stored: Product[] = [];
  for (let i = 0; i < 60; i++) {
    const attributes: Record<string, string | number | boolean | string[]> = {};
    if (random() < 0.8) attributes.brand = pick(["Acme", "Zeta", "Órbita"]);
    if (random() < 0.8) attributes.price = pick([5, 9.99, 10, 25.5, 59.9, 60, 120]);
    if (random() < 0.5) attributes.in_stock = random() < 0.5;
    if (random() < 0.5) attributes.sizes = ["40", "41", "42", "43"].filter(() => random() < 0.5);
    if (random() < 0.1) attributes.price_text = "59.90";
    if (i === 0) attributes.price = "59.9" as never; // a text, never a number to a range
    const vector = [random() - 0.5, random() - 0.5, random() - 0.5, random() + 0.1];
    stored.push(await add(products, { ...pick([shoe, boot, lamp, mug]), name: `P${i}`, attributes }, vector));
  }
  const filters: AttributeCondition[][] = [
    [{ key: "brand", op: "anyOf", values: ["Acme"] }],
    [{ key: "brand", op: "anyOf", values: ["Acme", "Zeta"] }],
    [{ key: "price", op: "anyOf", values: [10] }],
    [{ key: "price", op: "anyOf", values: [59.9] }],
    [{ key: "in_stock", op: "anyOf", values: [true] }],
    [{ key: "in_stock", op: "anyOf", values: [false] }],
    [{ key: "sizes", op: "anyOf", values: ["42"] }],
    [{ key: "sizes", op: "anyOf", values: ["40", "43"] }],
    [{ key: "price", op: "range", gte: 10, lt: 60 }],
    [{ key: "price", op: "range", gt: 10, lte: 60 }],
    [{ key: "price", op: "range", lt: 0 }],
    [{ key: "sizes", op: "exists", exists: true }],
    [{ key: "in_stock", op: "exists", exists: false }],
    [
      { key: "brand", op: "anyOf", values: ["Zeta", "Órbita"] },
      { key: "price", op: "range", lte: 59.9 },
      { key: "in_stock", op: "exists", exists: true },
    ],
    [{ key: "color", op: "anyOf", values: ["rojo"] }],
  ];
  const query = [0.3, -0.2, 0.1, 0.5];
  for (const conditions of filters) {
    const expected = stored.filter((product) => meetsConditions(product.attributes, conditions));
    const ids = expected.map((product) => product.id);
    const listed = await products.list({ limit: 100, order: "id", attributes: conditions });
    expect({ conditions, ids: listed.items.map((product) => product.id), total: listed.total }).toEqual({
      conditions,
      ids,
      total: ids.length,
    });
    const withCategory = await products.list({
      limit: 100,
      order: "id",
      attributes: conditions,
      categories: ["calzado"],
    });
    expect(withCategory.items.map((product) => product.id)).toEqual(
      expected.filter((product) => product.category === "calzado").map((product) => product.id),
    );
    const hits = await products.searchByVector(query, { limit: 100, attributes: conditions });
    expect({ conditions, ids: hits.map((hit) => hit.id).sort((a, b) => a - b) }).toEqual({ conditions, ids });
    const window = await products.searchByVector(query, { limit: 100, attributes: conditions, window: true });
    expect({ conditions, ids: window.map((hit) => hit.id) }).toEqual({ conditions, ids: hits.map((hit) => hit.id) });
    const lexical: LexicalQuery = { texts: ["zapatilla lámpara"], expansions: [] };
    const candidates = await products.hybridCandidates(query, lexical, { candidates: 100, attributes: conditions });
    expect({ conditions, ids: candidates.map((hit) => hit.id).sort((a, b) => a - b) }).toEqual({ conditions, ids });
    const browsing = await products.hybridCandidates(query, lexical, {
      candidates: 100,
      attributes: conditions,
      window: true,
    });
    expect({ conditions, ids: browsing.map((hit) => hit.id).sort((a, b) => a - b) }).toEqual({ conditions, ids });
  }
}

function catalogueContract(open: Open): void {
  test("get returns the stored product with its digest and version 1; a missing id is null", async () => {
    const products = await open(4);
    const added = await add(products, { ...shoe, sku: "SKU-1" }, [1, 0, 0, 0]);
    expect(added).toEqual({ id: expect.any(Number), ...shoe, sku: "SKU-1" });
    expect(await products.get(added.id)).toEqual({ ...added, contentDigest: "d", version: 1 });
    expect(await products.get(added.id + 1000)).toBeNull();
    const noSku = await add(products, lamp, [0, 1, 0, 0]);
    expect(noSku).not.toHaveProperty("sku");
  });

  test("a sku is unique: a second product with it is skuTaken and nothing is stored", async () => {
    const products = await open(4);
    await add(products, { ...shoe, sku: "A" }, [1, 0, 0, 0]);
    expect(await products.add(row({ ...lamp, sku: "A" }, [0, 1, 0, 0]))).toEqual({ skuTaken: "A" });
    expect((await products.list({ limit: 10, order: "id" })).total).toBe(1);
  });

  test("list pages by id or newest first, with the total, and filters by category", async () => {
    const products = await open(4);
    const added: Product[] = [];
    for (const [i, product] of [shoe, lamp, boot, mug, shoe].entries()) {
      added.push(await add(products, { ...product, name: `${product.name} ${i}` }, [1, i, 0, 0]));
    }
    const ids = added.map((product) => product.id);
    const first = await products.list({ limit: 2, order: "id" });
    expect(first).toEqual({ items: added.slice(0, 2), total: 5, more: true });
    const second = await products.list({ limit: 2, order: "id", after: ids[1] });
    expect(second.items.map((product) => product.id)).toEqual(ids.slice(2, 4));
    const last = await products.list({ limit: 2, order: "id", after: ids[3] });
    expect(last).toEqual({ items: added.slice(4), total: 5, more: false });

    const newest = await products.list({ limit: 3, order: "newest" });
    expect(newest.items.map((product) => product.id)).toEqual([...ids].reverse().slice(0, 3));
    const older = await products.list({ limit: 3, order: "newest", after: ids[2] });
    expect(older.items.map((product) => product.id)).toEqual(ids.slice(0, 2).reverse());

    const shoes = await products.list({ limit: 10, order: "id", categories: ["calzado"] });
    expect(shoes.total).toBe(3);
    expect(shoes.items.map((product) => product.category)).toEqual(["calzado", "calzado", "calzado"]);
    const two = await products.list({ limit: 10, order: "id", categories: ["hogar", "cocina", "nada"] });
    expect(two.items.map((product) => product.name)).toEqual(["Lámpara 1", "Taza 3"]);
    expect((await products.list({ limit: 10, order: "id", categories: ["nada"] })).total).toBe(0);
  });

  test("update writes over the version it read: new fields, new embedding when given, version + 1", async () => {
    const products = await open(4);
    const added = await add(products, { ...shoe, sku: "Z1" }, [1, 0, 0, 0]);
    const renamed = await products.update(added.id, 1, {
      fields: { ...shoe, name: "Zapatilla roja", sku: "Z1" },
      embedding: { vector: [0, 0, 1, 0], contentDigest: "d2" },
    });
    expect(renamed).toEqual({
      updated: { ...added, name: "Zapatilla roja", sku: "Z1", contentDigest: "d2", version: 2 },
    });
    const hits = await products.searchByVector([0, 0, 1, 0], { limit: 1 });
    expect(hits[0]).toMatchObject({ id: added.id, name: "Zapatilla roja", version: 2 });
    expect(hits[0]?.score).toBeCloseTo(1, 5);

    // Without an embedding, the vector and the digest stay; dropping the sku removes it.
    const recategorised = await products.update(added.id, 2, {
      fields: { ...shoe, name: "Zapatilla roja", category: "deporte" },
    });
    expect(recategorised).toEqual({
      updated: { id: added.id, ...shoe, name: "Zapatilla roja", category: "deporte", contentDigest: "d2", version: 3 },
    });
    expect((await products.searchByVector([0, 0, 1, 0], { limit: 1 }))[0]?.score).toBeCloseTo(1, 5);

    expect(await products.update(added.id, 2, { fields: shoe })).toEqual({ conflict: true });
    expect(await products.update(added.id + 99, 1, { fields: shoe })).toEqual({ missing: true });
    const other = await add(products, { ...lamp, sku: "L1" }, [0, 1, 0, 0]);
    expect(await products.update(added.id, 3, { fields: { ...shoe, sku: "Z1" } })).toHaveProperty("updated");
    expect(await products.update(other.id, 1, { fields: { ...lamp, sku: "Z1" } })).toEqual({ skuTaken: "Z1" });
  });

  test("attributes are stored and returned by every read, write and search; none is no field; an update replaces them", async () => {
    const products = await open(4);
    const valid = { brand: "Acme", in_stock: true, price: 59.9, sizes: ["41", "42"] };
    const added = await add(products, { ...shoe, sku: "AT-1", attributes: valid }, [1, 0, 0, 0]);
    expect(added).toEqual({ id: expect.any(Number), ...shoe, sku: "AT-1", attributes: valid });
    const plain = await add(products, lamp, [0, 1, 0, 0]);
    expect(plain).not.toHaveProperty("attributes");
    expect(await products.get(added.id)).toMatchObject({ attributes: valid });
    expect(await products.get(plain.id)).not.toHaveProperty("attributes");
    expect((await products.list({ limit: 10, order: "id" })).items).toEqual([added, plain]);
    expect((await products.searchByVector([1, 0, 0, 0], { limit: 1 }))[0]).toMatchObject({ attributes: valid });
    const lexical: LexicalQuery = { texts: ["zapatilla"], expansions: [] };
    const candidates = await products.hybridCandidates([1, 0, 0, 0], lexical, { candidates: 5 });
    expect(candidates.find((candidate) => candidate.id === added.id)).toMatchObject({ attributes: valid });
    expect((await products.productsAfter(0, 10, { withEmbeddings: false }))[0]).toMatchObject({ attributes: valid });
    expect((await products.findBySkus(["AT-1"]))[0]).toMatchObject({ attributes: valid });

    // An update is the whole new state: other attributes replace them, none removes them.
    const changed = await products.update(added.id, 1, { fields: { ...shoe, sku: "AT-1", attributes: { price: 10 } } });
    expect(changed).toMatchObject({ updated: { attributes: { price: 10 }, contentDigest: "d", version: 2 } });
    const cleared = await products.update(added.id, 2, { fields: { ...shoe, sku: "AT-1" } });
    expect((cleared as { updated: Product }).updated).not.toHaveProperty("attributes");

    // Bulk writes: by COPY (inserts only) and through the staging table (a mix with an update).
    const copied = await products.writeMany([
      { kind: "insert", row: row({ ...boot, attributes: { brand: "Zeta" } }, [0, 0, 1, 0]) },
    ]);
    expect(copied).toEqual([{ written: { id: expect.any(Number), ...boot, attributes: { brand: "Zeta" } } }]);
    const mixed = await products.writeMany([
      { kind: "insert", row: row({ ...mug, attributes: { price: 3 } }, [0, 0, 0, 1]) },
      { kind: "update", id: plain.id, expectedVersion: 1, update: { fields: { ...lamp, attributes: { watts: 9 } } } },
    ]);
    expect(mixed).toEqual([
      { written: { id: expect.any(Number), ...mug, attributes: { price: 3 } } },
      { written: { id: plain.id, ...lamp, attributes: { watts: 9 } } },
    ]);
    const listed = (await products.list({ limit: 10, order: "id" })).items;
    expect(listed.map((product) => product.attributes)).toEqual([
      undefined,
      { watts: 9 },
      { brand: "Zeta" },
      { price: 3 },
    ]);
  });

  test("every attribute filter operator finds exactly what a brute-force reading finds, in lists and searches", async () => {
    await everyFilterOperatorAsBruteForce(await open(4));
  });

  test("remove deletes the product from reads, lists and searches; removing again is false", async () => {
    const products = await open(4);
    const kept = await add(products, lamp, [0, 1, 0, 0]);
    const gone = await add(products, shoe, [1, 0, 0, 0]);
    expect(await products.remove(gone.id)).toBe(true);
    expect(await products.remove(gone.id)).toBe(false);
    expect(await products.get(gone.id)).toBeNull();
    expect((await products.list({ limit: 10, order: "id" })).items).toEqual([kept]);
    expect((await products.searchByVector([1, 0, 0, 0], { limit: 10 })).map((hit) => hit.id)).toEqual([kept.id]);
  });

  test("categories counts the products of each category, most first, then by name", async () => {
    const products = await open(4);
    expect(await products.categories()).toEqual([]);
    for (const [i, product] of [shoe, lamp, boot, mug].entries()) await add(products, product, [1, i, 0, 0]);
    expect(await products.categories()).toEqual([
      { name: "calzado", products: 2 },
      { name: "cocina", products: 1 },
      { name: "hogar", products: 1 },
    ]);
  });

  test("versions tells the current version of the products that still exist", async () => {
    const products = await open(4);
    const a = await add(products, shoe, [1, 0, 0, 0]);
    const b = await add(products, lamp, [0, 1, 0, 0]);
    await products.update(a.id, 1, { fields: { ...shoe, category: "otra" } });
    await products.remove(b.id);
    expect(await products.versions([a.id, b.id, 12345])).toEqual(new Map([[a.id, 2]]));
    expect(await products.versions([])).toEqual(new Map());
  });

  test("findBySkus and writeMany: inserts and updates in one call, each outcome in order", async () => {
    const products = await open(4);
    const existing = await add(products, { ...shoe, sku: "S1" }, [1, 0, 0, 0]);
    const other = await add(products, { ...lamp, sku: "L1" }, [0, 1, 0, 0]);
    const found = await products.findBySkus(["S1", "L1", "nope"]);
    expect(found.map((product) => product.sku).sort()).toEqual(["L1", "S1"]);
    expect(found.find((product) => product.sku === "S1")).toEqual({ ...existing, contentDigest: "d", version: 1 });

    const writes: BulkWrite[] = [
      { kind: "insert", row: row({ ...mug, sku: "M1" }, [0, 0, 1, 0], "dm") },
      {
        kind: "update",
        id: existing.id,
        expectedVersion: 1,
        update: {
          fields: { ...shoe, description: "Nueva", sku: "S1" },
          embedding: { vector: [0, 0, 0, 1], contentDigest: "ds" },
        },
      },
      { kind: "insert", row: row({ ...boot }, [1, 1, 0, 0]) },
      { kind: "update", id: other.id, expectedVersion: 7, update: { fields: { ...lamp, sku: "L1" } } },
      { kind: "update", id: 987654, expectedVersion: 1, update: { fields: { ...lamp } } },
      { kind: "insert", row: row({ ...boot, sku: "L1" }, [1, 1, 1, 0]) },
    ];
    const outcomes = await products.writeMany(writes);
    expect(outcomes[0]).toEqual({ written: { id: expect.any(Number), ...mug, sku: "M1" } });
    expect(outcomes[1]).toEqual({ written: { id: existing.id, ...shoe, description: "Nueva", sku: "S1" } });
    expect(outcomes[2]).toEqual({ written: { id: expect.any(Number), ...boot } });
    expect(outcomes.slice(3)).toEqual([{ raced: "changed" }, { raced: "missing" }, { raced: "skuTaken" }]);

    expect(await products.get(existing.id)).toMatchObject({ description: "Nueva", contentDigest: "ds", version: 2 });
    const mugId = (outcomes[0] as { written: Product }).written.id;
    expect(await products.get(mugId)).toMatchObject({ ...mug, sku: "M1", contentDigest: "dm", version: 1 });
    const [top] = await products.searchByVector([0, 0, 0, 1], { limit: 1 });
    expect(top?.id).toBe(existing.id);
    expect((await products.list({ limit: 10, order: "id" })).total).toBe(4);
    expect(await products.writeMany([])).toEqual([]);
  });

  test("writeMany of new products only: each stored with its digest, in order; a sku taken meanwhile is skuTaken and the rest are stored", async () => {
    const products = await open(4);
    const outcomes = await products.writeMany([
      { kind: "insert", row: row({ ...mug, sku: "M1" }, [0, 0, 1, 0], "dm") },
      { kind: "insert", row: row({ ...boot }, [1, 1, 0, 0], "db") },
    ]);
    expect(outcomes).toEqual([
      { written: { id: expect.any(Number), ...mug, sku: "M1" } },
      { written: { id: expect.any(Number), ...boot } },
    ]);
    const [mugId, bootId] = outcomes.map((outcome) => (outcome as { written: Product }).written.id);
    expect(bootId).toBeGreaterThan(mugId as number);
    expect(await products.get(mugId as number)).toMatchObject({ ...mug, sku: "M1", contentDigest: "dm", version: 1 });
    const [top] = await products.searchByVector([1, 1, 0, 0], { limit: 1 });
    expect(top?.id).toBe(bootId);

    const raced = await products.writeMany([
      { kind: "insert", row: row({ ...lamp, sku: "L1" }, [0, 1, 0, 0]) },
      { kind: "insert", row: row({ ...shoe, sku: "M1" }, [1, 0, 0, 0]) },
    ]);
    expect(raced).toEqual([{ written: { id: expect.any(Number), ...lamp, sku: "L1" } }, { raced: "skuTaken" }]);
    expect((await products.findBySkus(["M1"]))[0]).toMatchObject({ ...mug, sku: "M1" });
    expect((await products.list({ limit: 10, order: "id" })).total).toBe(3);
  });

  test("a filtered search returns the most similar products of those categories only, as many as exist up to the limit", async () => {
    const dimension = 8;
    const products = await open(dimension);
    const random = seededRandom(11);
    const categories = ["a", "b", "c", "d"];
    const stored: { id: number; category: string; vector: Vector }[] = [];
    for (let i = 0; i < 120; i++) {
      // Categories of very different sizes: a holds most products, d only three.
      const category = i < 3 ? "d" : (categories[i % 3] as string);
      const vector = Array.from({ length: dimension }, () => random() - 0.5);
      const product = await add(products, { name: `p${i}`, description: "x", category }, vector);
      stored.push({ id: product.id, category, vector });
    }
    for (const filter of [["a"], ["d"], ["b", "d"], ["d", "zz"]]) {
      for (let q = 0; q < 5; q++) {
        const query = Array.from({ length: dimension }, () => random() - 0.5);
        const expected = stored
          .filter((item) => filter.includes(item.category))
          .map((item) => ({ id: item.id, score: cosineSimilarity(query, item.vector) }))
          .sort((x, y) => y.score - x.score || x.id - y.id)
          .slice(0, 10);
        const hits = await products.searchByVector(query, { limit: 10, categories: filter });
        expect(hits.map((hit) => hit.id)).toEqual(expected.map((item) => item.id));
        for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(expected[i]?.score as number, 5);
      }
    }
  });
}

/** A lexical query of one text, nothing more. */
const words = (text: string): LexicalQuery => ({ texts: [text], expansions: [] });

/** Lexical search as PostgreSQL does it: words of either language, stemmed, matched in the name first. */
function lexicalContract(open: Open): void {
  test("hybrid candidates: the most similar by embedding and the best word matches, each with both scores", async () => {
    const products = await open(4);
    const espresso = await add(
      products,
      { name: "Espresso machine", description: "Makes coffee", category: "kitchen" },
      [0, 0, 1, 0],
    );
    const kettle = await add(
      products,
      { name: "Kettle", description: "Boils water for tea", category: "kitchen" },
      [1, 0, 0, 0],
    );
    const socks = await add(
      products,
      { name: "Running socks", description: "Light", category: "sport" },
      [0.9, 0.1, 0, 0],
    );
    const candidates = await products.hybridCandidates([1, 0, 0, 0], words("machines for coffee"), { candidates: 2 });
    const byId = new Map(candidates.map((candidate) => [candidate.id, candidate]));
    // Two nearest by embedding (kettle, socks) and the word match (espresso), however far its vector.
    expect([...byId.keys()].sort()).toEqual([espresso.id, kettle.id, socks.id].sort());
    expect(byId.get(espresso.id)?.lexical).toBeGreaterThan(0);
    expect(byId.get(kettle.id)?.lexical).toBe(0);
    expect(byId.get(kettle.id)?.score).toBeCloseTo(1, 5);
    expect(byId.get(espresso.id)?.score).toBeCloseTo(0, 5);
  });

  test("exactScores: the exact cosine of each product that exists; a hybrid candidate's cosine is exact unless it says it is not, and close even then", async () => {
    for (const dimension of [4, 512]) {
      const products = await open(dimension);
      const random = seededRandom(dimension);
      const vectorOf = () => Array.from({ length: dimension }, () => random() - 0.5);
      const stored = [];
      for (const name of ["Espresso machine", "Coffee grinder", "Kettle"]) {
        const vector = vectorOf();
        stored.push({
          id: (await add(products, { name, description: "For coffee", category: "kitchen" }, vector)).id,
          vector,
        });
      }
      const gone = stored.pop() as { id: number };
      expect(await products.remove(gone.id)).toBe(true);
      const query = vectorOf();
      const scores = await products.exactScores(query, [...stored.map((product) => product.id), gone.id]);
      expect([...scores.keys()].sort()).toEqual(stored.map((product) => product.id).sort());
      for (const { id, vector } of stored) expect(scores.get(id)).toBeCloseTo(cosineSimilarity(query, vector), 6);
      expect(await products.exactScores(query, [])).toEqual(new Map());

      const candidates = await products.hybridCandidates(query, words("coffee"), { candidates: 5 });
      expect(candidates.map((candidate) => candidate.id).sort()).toEqual(stored.map((product) => product.id).sort());
      for (const candidate of candidates) {
        expect(candidate.score).toBeCloseTo(scores.get(candidate.id) as number, 3);
        // Approximate only where the scan reads a half-precision copy (never in the memory fake).
        if (!candidate.approximateScore) expect(candidate.score).toBeCloseTo(scores.get(candidate.id) as number, 6);
      }
    }
  });

  test("hybrid candidates honour the category filter on both sides", async () => {
    const products = await open(4);
    await add(products, { name: "Espresso machine", description: "Coffee", category: "kitchen" }, [1, 0, 0, 0]);
    const cup = await add(
      products,
      { name: "Coffee cup", description: "Ceramic", category: "tableware" },
      [0, 1, 0, 0],
    );
    const candidates = await products.hybridCandidates([1, 0, 0, 0], words("coffee"), {
      candidates: 5,
      categories: ["tableware"],
    });
    expect(candidates.map((candidate) => candidate.id)).toEqual([cup.id]);
  });

  test("a misspelt word of 4+ letters finds what its right spelling finds (typo tolerance)", async () => {
    const products = await open(4);
    const cushion = await add(
      products,
      { name: "Velvet cushion cover", description: "Soft", category: "Home Furnishing" },
      [0, 1, 0, 0],
    );
    await add(products, { name: "Kettle", description: "Boils water", category: "Kitchen" }, [1, 0, 0, 0]);
    const matched = async (lexical: LexicalQuery) =>
      (await products.hybridCandidates([1, 0, 0, 0], lexical, { candidates: 1 }))
        .filter((candidate) => candidate.lexical > 0)
        .map((candidate) => candidate.id);
    expect(await matched(words("cushion covers"))).toEqual([cushion.id]);
    // One letter replaced, one swapped, one dropped: each still finds the cushion cover.
    for (const typo of ["cushiom", "cuhsion", "cushon", "velvte"]) {
      expect(await matched(words(`${typo} for the sofa`))).toEqual([cushion.id]);
    }
    // Only the words that may be misspelt are read by spelling (those no dictionary knew, when told).
    expect(await matched({ texts: ["cushiom"], expansions: [], misspellable: [] })).toEqual([]);
    expect(await matched({ texts: ["cushiom"], expansions: [], misspellable: ["cushiom"] })).toEqual([cushion.id]);
    // Short words are not guessed at: too many words are one letter from them.
    expect(await matched(words("cus"))).toEqual([]);
  });

  test("expansions are matched like the query's own words", async () => {
    const products = await open(4);
    const watch = await add(products, { name: "Analog watch", description: "", category: "Watches" }, [0, 1, 0, 0]);
    await add(products, { name: "Wall clock", description: "", category: "Home" }, [1, 0, 0, 0]);
    const lexicalOf = async (lexical: LexicalQuery) =>
      new Map(
        (await products.hybridCandidates([1, 0, 0, 0], lexical, { candidates: 5 })).map((c) => [c.id, c.lexical]),
      );
    expect((await lexicalOf(words("reloj"))).get(watch.id)).toBe(0);
    expect((await lexicalOf({ texts: ["reloj"], expansions: ["watch"] })).get(watch.id)).toBeGreaterThan(0);
  });

  test("knowsAnyWord: a word of the names and categories, or one a slip away; nothing else", async () => {
    const products = await open(4);
    await add(
      products,
      { name: "Casio analog watch", description: "Water resistant", category: "Watches" },
      [1, 0, 0, 0],
    );
    expect(await products.knowsAnyWord(["casio"])).toBe(true);
    expect(await products.knowsAnyWord(["xqzv", "watches"])).toBe(true);
    expect(await products.knowsAnyWord(["cassio"])).toBe(true);
    // Not the descriptions' words, not gibberish, not short words by spelling.
    expect(await products.knowsAnyWord(["resistant"])).toBe(false);
    expect(await products.knowsAnyWord(["sdfghj", "dfg", "asd"])).toBe(false);
    expect(await products.knowsAnyWord([])).toBe(false);
  });

  test("catalogueWords: the words the names and categories hold as written, each once; no slip allowed", async () => {
    const products = await open(4);
    await add(
      products,
      { name: "Casio analog watch", description: "Water resistant", category: "Watches" },
      [1, 0, 0, 0],
    );
    expect((await products.catalogueWords(["casio", "watches", "cassio", "resistant", "casio"])).sort()).toEqual([
      "casio",
      "watches",
    ]);
    expect(await products.catalogueWords([])).toEqual([]);
  });

  test("the vocabulary follows every way products are written: bulk inserts, bulk updates, single updates", async () => {
    const products = await open(4);
    const entry = (name: string): EmbeddedProduct => ({
      product: { name, description: "", category: "Home" },
      embedding: [1, 0, 0, 0],
      contentDigest: `digest of ${name}`,
    });
    const [lamp] = await products.writeMany([{ kind: "insert", row: entry("Bedside lamp") }]);
    expect(await products.knowsAnyWord(["bedside"])).toBe(true);
    const id = (lamp as { written: { id: number } }).written.id;
    await products.writeMany([
      { kind: "update", id, expectedVersion: 1, update: { fields: { ...entry("Reading lamp").product } } },
    ]);
    expect(await products.knowsAnyWord(["reading"])).toBe(true);
    await products.update(id, 2, { fields: { ...entry("Desk lamp").product } });
    expect(await products.knowsAnyWord(["desk"])).toBe(true);
  });
}

/** Every catalogue's products, and the catalogues (to make more than the default one). */
type OpenStore = (dimension: number) => Promise<{ products: ProductCatalogues; catalogues: CatalogueRepository }>;

/**
 * Two catalogues side by side: whatever one holds, the other's repository never reads, writes or
 * finds it, even given its ids, skus, words or its very vectors; each has its own skus; ids stay
 * unique across them.
 */
function isolationContract(openStore: OpenStore): void {
  async function twoShops() {
    const { products, catalogues } = await openStore(4);
    expect(await catalogues.create("outlet")).toBe(true);
    const main = products.in("default");
    const outlet = products.in("outlet");
    const ownShoe = await add(main, { ...shoe, sku: "Z-1" }, [1, 0, 0, 0]);
    const ownLamp = await add(main, lamp, [0, 1, 0, 0]);
    // The outlet's products: the same sku, and the very vectors and words a search in main asks for.
    const theirs = await add(
      outlet,
      { name: "Zapatilla outlet", description: "Ligera", category: "calzado", sku: "Z-1" },
      [1, 0, 0, 0],
    );
    const theirMug = await add(outlet, { ...mug, sku: "T-9" }, [0, 0, 1, 0]);
    return { products, catalogues, main, outlet, ownShoe, ownLamp, theirs, theirMug };
  }

  test("skus are unique per catalogue; ids are unique across catalogues", async () => {
    const { main, outlet, ownShoe, ownLamp, theirs, theirMug } = await twoShops();
    expect(theirs.sku).toBe(ownShoe.sku);
    expect(new Set([ownShoe.id, ownLamp.id, theirs.id, theirMug.id]).size).toBe(4);
    expect(await outlet.add(row({ ...boot, sku: "Z-1" }, [0, 0, 0, 1]))).toEqual({ skuTaken: "Z-1" });
    expect(await main.add(row({ ...mug, sku: "T-9" }, [0, 0, 0, 1]))).toMatchObject({ created: { sku: "T-9" } });
  });

  test("another catalogue's product is not there: get, update, remove, versions, exactScores, findBySkus", async () => {
    const { main, outlet, theirs, theirMug } = await twoShops();
    expect(await main.get(theirs.id)).toBeNull();
    expect(await main.get(theirs.id, { latest: true })).toBeNull();
    expect(await main.update(theirs.id, 1, { fields: { ...boot, sku: "Z-1" } })).toEqual({ missing: true });
    expect(await main.remove(theirMug.id)).toBe(false);
    expect(await main.versions([theirs.id, theirMug.id])).toEqual(new Map());
    expect(await main.exactScores([1, 0, 0, 0], [theirs.id, theirMug.id])).toEqual(new Map());
    expect(await main.findBySkus(["T-9"])).toEqual([]);
    expect((await main.findBySkus(["Z-1"])).map((product) => product.id)).not.toContain(theirs.id);
    // Untouched in its own catalogue.
    expect(await outlet.get(theirs.id)).toMatchObject({ name: "Zapatilla outlet", version: 1 });
    expect(await outlet.get(theirMug.id)).toMatchObject({ name: mug.name });
  });

  test("lists, categories and exports hold the catalogue's own products, whatever cursor is given", async () => {
    const { main, ownShoe, ownLamp, theirs, theirMug } = await twoShops();
    const mine = [ownShoe.id, ownLamp.id];
    for (const order of ["id", "newest"] as const) {
      const page = await main.list({ limit: 10, order });
      expect(page.items.map((product) => product.id).sort()).toEqual([...mine].sort());
      expect(page.total).toBe(2);
      // A cursor made from another catalogue's ids reveals nothing of it.
      for (const after of [theirs.id, theirMug.id, theirs.id - 1, theirMug.id + 1]) {
        const crafted = await main.list({ limit: 10, order, after });
        expect(crafted.items.every((product) => mine.includes(product.id))).toBe(true);
        expect(crafted.total).toBe(2);
      }
    }
    expect((await main.categories()).map((category) => category.name).sort()).toEqual(["calzado", "hogar"]);
    const exported = await main.productsAfter(0, 10, { withEmbeddings: true });
    expect(exported.map((product) => product.id)).toEqual([...mine].sort((a, b) => a - b));
  });

  test("no search ever returns another catalogue's product: by vector, hybrid on both sides, filtered", async () => {
    const { main, ownShoe, theirs, theirMug } = await twoShops();
    const theirIds = [theirs.id, theirMug.id];
    for (const query of [
      [1, 0, 0, 0],
      [0, 0, 1, 0],
    ]) {
      const hits = await main.searchByVector(query, { limit: 10 });
      expect(hits.map((hit) => hit.id).some((id) => theirIds.includes(id))).toBe(false);
      const filtered = await main.searchByVector(query, { limit: 10, categories: ["calzado", "cocina"] });
      expect(filtered.map((hit) => hit.id)).toEqual([ownShoe.id]);
      // The outlet's words ("outlet", "taza") and its vectors: none of its products among the candidates.
      const hybrid = await main.hybridCandidates(
        query,
        { texts: ["zapatilla outlet", "taza térmica"], expansions: ["tazza"] },
        { candidates: 10 },
      );
      expect(hybrid.map((hit) => hit.id).some((id) => theirIds.includes(id))).toBe(false);
      const hybridFiltered = await main.hybridCandidates(query, words("outlet taza"), {
        candidates: 10,
        categories: ["cocina"],
      });
      expect(hybridFiltered).toEqual([]);
    }
  });

  test("typos are read and words known by the catalogue's own vocabulary alone", async () => {
    const { main, outlet, theirMug } = await twoShops();
    // "taza" and "outlet" are words of the outlet's names only; main has "taza" in a description,
    // which lexical search matches but the vocabulary (names and categories) does not hold.
    const plate = await add(main, { name: "Plato", description: "Juego con taza", category: "hogar" }, [0, 0, 0, 1]);
    const matched = async (repository: ProductRepository, text: string) =>
      (await repository.hybridCandidates([0, 1, 0, 0], words(text), { candidates: 1 }))
        .filter((candidate) => candidate.lexical > 0)
        .map((candidate) => candidate.id);
    expect(await matched(main, "taza")).toEqual([plate.id]);
    // Misspelt: the outlet reads it as its "taza"; main has no such word to read it as.
    expect(await matched(outlet, "tazza")).toEqual([theirMug.id]);
    expect(await matched(main, "tazza")).toEqual([]);
    expect(await outlet.knowsAnyWord(["taza"])).toBe(true);
    expect(await outlet.knowsAnyWord(["outlett"])).toBe(true);
    expect(await main.knowsAnyWord(["taza", "outlet", "outlett", "tazza", "cocina"])).toBe(false);
    expect(await main.knowsAnyWord(["plato"])).toBe(true);
    // A name kept from typo repair is a name of this catalogue, not of another.
    expect(await outlet.catalogueWords(["taza", "outlet", "plato"])).toEqual(
      expect.arrayContaining(["taza", "outlet"]),
    );
    expect(await outlet.catalogueWords(["plato"])).toEqual([]);
    expect(await main.catalogueWords(["taza", "outlet", "plato"])).toEqual(["plato"]);
  });

  test("embedded attributes are each catalogue's own setting: none by default, set, listed, read by its products", async () => {
    const { catalogues, main, outlet } = await twoShops();
    expect(await outlet.embeddedAttributes()).toEqual([]);
    expect(await catalogues.setEmbeddedAttributes("outlet", ["brand", "color"])).toBe(true);
    expect(await outlet.embeddedAttributes()).toEqual(["brand", "color"]);
    expect(await main.embeddedAttributes()).toEqual([]);
    expect((await catalogues.list()).map(({ name, embeddedAttributes }) => ({ name, embeddedAttributes }))).toEqual([
      { name: "default", embeddedAttributes: [] },
      { name: "outlet", embeddedAttributes: ["brand", "color"] },
    ]);
    expect(await catalogues.setEmbeddedAttributes("outlet", [])).toBe(true);
    expect(await outlet.embeddedAttributes()).toEqual([]);
    expect(await catalogues.setEmbeddedAttributes("nunca", ["brand"])).toBe(false);
  });

  test("storedAfter pages the catalogue's own products by id, with digest and version", async () => {
    const { main, outlet, ownShoe, ownLamp, theirs, theirMug } = await twoShops();
    await main.update(ownLamp.id, 1, { fields: { ...lamp, attributes: { brand: "Lumen" } } });
    expect(await main.storedAfter(0, 1)).toEqual([{ ...ownShoe, contentDigest: "d", version: 1 }]);
    expect(await main.storedAfter(ownShoe.id, 5)).toEqual([
      { ...ownLamp, attributes: { brand: "Lumen" }, contentDigest: "d", version: 2 },
    ]);
    expect((await outlet.storedAfter(0, 5)).map((product) => product.id)).toEqual([theirs.id, theirMug.id]);
    expect(await outlet.storedAfter(theirMug.id, 5)).toEqual([]);
  });

  test("a bulk write by another catalogue's sku creates the product here; an update by its id is missing", async () => {
    const { main, outlet, theirs } = await twoShops();
    const writes: BulkWrite[] = [
      { kind: "insert", row: row({ ...boot, sku: "T-9" }, [0, 0, 0, 1]) },
      { kind: "update", id: theirs.id, expectedVersion: 1, update: { fields: { ...boot, sku: "Z-1" } } },
    ];
    const [inserted, updated] = await main.writeMany(writes);
    expect(inserted).toMatchObject({ written: { sku: "T-9", name: boot.name } });
    expect(updated).toEqual({ raced: "missing" });
    expect(await outlet.get(theirs.id)).toMatchObject({ name: "Zapatilla outlet", version: 1, sku: "Z-1" });
    expect((await outlet.findBySkus(["T-9"]))[0]?.name).toBe(mug.name);
  });

  test("a catalogue that does not exist, or no longer does, is CatalogueNotFound for every operation", async () => {
    const { products, catalogues, outlet } = await twoShops();
    expect(await catalogues.remove("outlet")).toBe(true);
    const gone = [outlet, products.in("nunca-existio")];
    for (const repository of gone) {
      const calls: (() => Promise<unknown>)[] = [
        () => repository.add(row(shoe, [1, 0, 0, 0])),
        () => repository.get(1),
        () => repository.list({ limit: 5, order: "id" }),
        () => repository.update(1, 1, { fields: shoe }),
        () => repository.remove(1),
        () => repository.categories(),
        () => repository.productsAfter(0, 5, { withEmbeddings: false }),
        () => repository.storedAfter(0, 5),
        () => repository.embeddedAttributes(),
        () => repository.findBySkus(["Z-1"]),
        () => repository.writeMany([{ kind: "insert", row: row(shoe, [1, 0, 0, 0]) }]),
        () => repository.searchByVector([1, 0, 0, 0], { limit: 5 }),
        () => repository.hybridCandidates([1, 0, 0, 0], words("zapatilla"), { candidates: 5 }),
        () => repository.knowsAnyWord(["zapatilla"]),
        () => repository.catalogueWords(["zapatilla"]),
        () => repository.versions([1]),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(CatalogueNotFound);
    }
    // Made again, it is empty: its products went with it, and its words ("taza" was one of its names).
    expect(await catalogues.create("outlet")).toBe(true);
    expect((await products.in("outlet").list({ limit: 5, order: "id" })).total).toBe(0);
    expect(await products.in("outlet").knowsAnyWord(["taza", "tazza"])).toBe(false);
    expect((await catalogues.list()).map(({ name, products }) => ({ name, products }))).toEqual([
      { name: "default", products: 2 },
      { name: "outlet", products: 0 },
    ]);
  });
}

describe("memory fake", () => {
  catalogueContract(async (dimension) => new MemoryProductRepository(dimension).in("default"));
  lexicalContract(async (dimension) => new MemoryProductRepository(dimension).in("default"));
  isolationContract(async (dimension) => {
    const store = new MemoryProductRepository(dimension);
    return { products: store, catalogues: store };
  });
});

forEachDatabase((db) => {
  const open: Open = async (dimension) => {
    const client = await db.migrated({ model: "test-model", dimension });
    return new PostgresProducts(client, dimension).in("default");
  };
  catalogueContract(open);
  lexicalContract(open);

  test("every attribute filter operator finds what a brute-force reading finds on the plan of large filters too: applied to each product scanned", async () => {
    const client = await db.migrated({ model: "test-model", dimension: 4 });
    // Estimated to let through no more than filterExactMaxRows products: none here.
    await everyFilterOperatorAsBruteForce(
      new PostgresProducts(client, 4, { ...DEFAULT_SEARCH_PLAN, filterExactMaxRows: 0 }).in("default"),
    );
  });
  isolationContract(async (dimension) => {
    const client = await db.migrated({ model: "test-model", dimension });
    return { products: new PostgresProducts(client, dimension), catalogues: new PostgresCatalogueRepository(client) };
  });

  test("past LEXICAL_RANK_MAX_ROWS matches, the words ranked are still the products holding every word of the query first, and every product of a rare word", async () => {
    const client = await db.migrated({ model: "test-model", dimension: 4 });
    // 40 rows ranked at most: half among those holding every word, half shared by the words.
    const products = new PostgresProducts(client, 4, { ...DEFAULT_SEARCH_PLAN, lexicalRankMaxRows: 40 }).in("default");
    const insert = (name: string, category: string, embedding = [1, 0, 0, 0]) => ({
      kind: "insert" as const,
      row: row({ name, description: "In stock", category }, embedding),
    });
    // Written first, so that a scan in the table's order meets them before the rest.
    const written = await products.writeMany([
      ...Array.from({ length: 120 }, (_, i) => insert(`Cotton shirt ${i}`, "clothes", [0, 0, 1, 0])),
      ...Array.from({ length: 120 }, (_, i) => insert(`Blue mug ${i}`, "kitchen")),
      insert("Blue shirt with a pocket", "clothes"),
      insert("Blue shirt, long sleeves", "clothes"),
      insert("Ganesha statue", "decoration"),
      insert("Ganesha in brass", "decoration"),
      insert("Small Ganesha", "decoration"),
    ]);
    const ids = written.map((outcome) => ("written" in outcome ? outcome.written.id : 0));
    const [blueShirts, ganeshas] = [ids.slice(240, 242), ids.slice(242)];
    const lexicalIds = async (text: string, within = products) =>
      (await within.hybridCandidates([0, 1, 0, 0], words(text), { candidates: 10 }))
        .filter((candidate) => candidate.lexical > 0)
        .sort((a, b) => b.lexical - a.lexical || a.id - b.id)
        .map((candidate) => candidate.id);
    // Twice: after the scan of the first 41 matches says there are more, and (the catalogue counted
    // by ANALYZE: 245 products, over 10 × 20) without that scan.
    await client.query("ANALYZE products");
    const ranking20 = new PostgresProducts(client, 4, { ...DEFAULT_SEARCH_PLAN, lexicalRankMaxRows: 20 }).in("default");
    for (const within of [products, ranking20]) {
      // 242 products hold "blue" or "shirt": the two that hold both are found, and ranked first.
      expect((await lexicalIds("blue shirt", within)).slice(0, 2).sort()).toEqual([...blueShirts].sort());
      // No product holds both words: each word's share still reaches all three of the rare one.
      const shirtsAndGaneshas = await lexicalIds("shirt for my ganesha", within);
      for (const id of ganeshas) expect(shirtsAndGaneshas).toContain(id);
    }
    // A browsing window of 100 gets its 100 from the words, though more than the 40 ranked (its
    // nearest 100 by embedding are the other products).
    const window = await products.hybridCandidates([1, 0, 0, 0], words("shirt"), { candidates: 100, window: true });
    expect(window.filter((candidate) => candidate.lexical > 0)).toHaveLength(100);
  });

  test("lexical search stems English and Spanish words alike, and a query of stop words matches nothing", async () => {
    const products = await open(4);
    const shoes = await add(
      products,
      { name: "Zapatillas de correr", description: "Ligeras", category: "calzado" },
      [0, 1, 0, 0],
    );
    const boots = await add(
      products,
      { name: "Hiking boots", description: "Waterproof", category: "footwear" },
      [0, 0, 1, 0],
    );
    const lexicalOf = async (text: string) =>
      new Map(
        (await products.hybridCandidates([1, 0, 0, 0], words(text), { candidates: 5 })).map((c) => [c.id, c.lexical]),
      );
    expect((await lexicalOf("zapatilla para correr")).get(shoes.id)).toBeGreaterThan(0);
    expect((await lexicalOf("boot for hikes")).get(boots.id)).toBeGreaterThan(0);
    const stopWords = await lexicalOf("the of and para la");
    expect([...stopWords.values()].every((lexical) => lexical === 0)).toBe(true);
  });
});
