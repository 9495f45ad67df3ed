import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rm } from "node:fs/promises";
import { JwtTokenService } from "../../src/adapters/http/auth/jwt-token-service.ts";
import { openPglite } from "../../src/adapters/pglite/pglite-client.ts";
import { PostgresApiKeyRepository } from "../../src/adapters/postgres/api-key-repository.ts";
import { decodeVector } from "../../src/adapters/postgres/binary-copy.ts";
import { PostgresCatalogueRepository } from "../../src/adapters/postgres/catalogue-repository.ts";
import { PostgresDatabaseHealth } from "../../src/adapters/postgres/database-health.ts";
import { SqlEmbeddingSpace } from "../../src/adapters/postgres/embedding-space.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import { PostgresQueryEmbeddingCache, queryKeyDigest } from "../../src/adapters/postgres/query-embedding-cache.ts";
import {
  applyMigrations,
  EmbeddingSpaceMismatch,
  MIGRATION_VERSIONS,
  prepareDatabase,
  vectorParam,
} from "../../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { PostgresUserRepository } from "../../src/adapters/postgres/user-repository.ts";
import { Authenticate, TOKEN_REFUSALS } from "../../src/domain/authenticate.ts";
import { DatabaseUnavailable, EmbeddingUnavailable, UserAlreadyExists } from "../../src/domain/errors.ts";
import { LoginThrottle } from "../../src/domain/login-throttle.ts";
import { contentDigest, embeddingText, type NormalizedProduct, type Product } from "../../src/domain/product.ts";
import { ReembedCatalogue, type ReembedOptions } from "../../src/domain/reembed-catalogue.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { ApiKeyRepository } from "../../src/ports/api-key-repository.ts";
import type { DatabaseHealth } from "../../src/ports/database-health.ts";
import type { Embedder, EmbeddingPurpose } from "../../src/ports/embedder.ts";
import type { AddResult, EmbeddedProduct, ProductRepository } from "../../src/ports/product-repository.ts";
import type { QueryEmbeddingCache } from "../../src/ports/query-embedding-cache.ts";
import type { UserRepository } from "../../src/ports/user-repository.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { MemoryApiKeyRepository } from "../fakes/memory-api-key-repository.ts";
import { MemoryDatabaseHealth } from "../fakes/memory-database-health.ts";
import { cosineSimilarity, MemoryProductRepository } from "../fakes/memory-product-repository.ts";
import { MemoryQueryEmbeddingCache } from "../fakes/memory-query-embedding-cache.ts";
import { MemoryUserRepository } from "../fakes/memory-user-repository.ts";
import { withNewDatabase } from "../support/new-database.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { makeTempDir } from "../support/temp-dirs.ts";
import { forEachDatabase, POSTGRES_URL, type TestDatabase } from "../support/test-databases.ts";
import { waitUntil } from "../support/wait-until.ts";

/** `client`, counting the statements it sends whose text holds `fragment`. */
function countingStatements(client: SqlClient, fragment: string): { client: SqlClient; count(): number } {
  let count = 0;
  return {
    client: {
      ...client,
      query: (text, params) => {
        if (text.includes(fragment)) count++;
        return client.query(text, params);
      },
    },
    count: () => count,
  };
}

/** A product to add, with its embedding and a digest standing for the real one. */
function row(product: NormalizedProduct, embedding: Vector): EmbeddedProduct {
  return { product, embedding, contentDigest: `digest of ${product.name}` };
}

/** The product an `add` without an idempotency key created. */
async function stored(result: Promise<AddResult>): Promise<Product> {
  const outcome = await result;
  if (!("created" in outcome)) throw new Error("expected a created product");
  return outcome.created;
}

interface Repositories {
  products: ProductRepository;
  users: UserRepository;
  apiKeys: ApiKeyRepository;
  health: DatabaseHealth;
  queryCache: QueryEmbeddingCache;
  /** Whether changes can be watched (LISTEN): not through a transaction pooler, where nothing is remembered. */
  watches: boolean;
}

/** Opens fresh, empty repositories whose products hold embeddings of `dimension`. */
type RepositoryFactory = (dimension: number) => Promise<Repositories>;

const shoe = { name: "Zapatilla de running", description: "Ligera y transpirable", category: "calzado" };
const lamp = { name: "Lámpara de escritorio", description: "LED regulable", category: "hogar" };
const mug = { name: "Taza térmica", description: "Mantiene el café caliente", category: "cocina" };

function repositoryContract(open: RepositoryFactory): void {
  test("add returns the product with an id", async () => {
    const { products } = await open(4);
    const first = await stored(products.add(row(shoe, [1, 0, 0, 0])));
    const second = await stored(products.add(row(lamp, [0, 1, 0, 0])));
    expect(first).toEqual({ id: expect.any(Number), ...shoe });
    expect(second.id).not.toBe(first.id);
  });

  test("search ranks by cosine similarity, most similar first, with the score", async () => {
    const { products } = await open(4);
    const a = await stored(products.add(row(shoe, [1, 0, 0, 0])));
    const b = await stored(products.add(row(lamp, [0, 1, 0, 0])));
    const c = await stored(products.add(row(mug, [1, 1, 0, 0])));
    const hits = await products.searchByVector([1, 0.1, 0, 0], { limit: 10 });
    expect(hits.map((hit) => hit.id)).toEqual([a.id, c.id, b.id]);
    expect(hits[0]).toMatchObject(shoe);
    expect(hits[0]?.score).toBeCloseTo(1 / Math.sqrt(1.01), 5);
    expect(hits[1]?.score).toBeCloseTo(1.1 / Math.sqrt(2 * 1.01), 5);
    expect(hits[2]?.score).toBeCloseTo(0.1 / Math.sqrt(1.01), 5);
    expect(hits[0]).not.toHaveProperty("embedding");
  });

  test("search honours the limit", async () => {
    const { products } = await open(4);
    for (const [i, product] of [shoe, lamp, mug].entries()) await stored(products.add(row(product, [1, i, 0, 0])));
    expect(await products.searchByVector([1, 0, 0, 0], { limit: 2 })).toHaveLength(2);
    expect(await products.searchByVector([1, 0, 0, 0], { limit: 0 })).toEqual([]);
  });

  test("search on an empty catalogue finds nothing", async () => {
    const { products } = await open(4);
    expect(await products.searchByVector([1, 0, 0, 0], { limit: 5 })).toEqual([]);
  });

  test("api keys: create, find, list newest first, touch, remove (announced to watchers)", async () => {
    const { apiKeys, watches } = await open(4);
    const heard: (string | null)[] = [];
    const ready = Promise.withResolvers<void>();
    const stop = await apiKeys.watchChanges((id) => heard.push(id), ready.resolve);
    // Through a transaction pooler nothing is watched (and no key is remembered): nothing to await.
    if (watches) await ready.promise;
    try {
      const expiresAt = new Date("2030-01-02T03:04:05.000Z");
      const shop = await apiKeys.create({
        id: "00000000000000a1",
        name: "Tienda",
        actions: ["search"],
        catalogues: ["default", "outlet"],
        expiresAt,
      });
      expect(shop).toEqual({
        id: "00000000000000a1",
        name: "Tienda",
        actions: ["search"],
        catalogues: ["default", "outlet"],
        expiresAt,
        createdAt: expect.any(Date),
        lastUsedAt: null,
      });
      const all = await apiKeys.create({
        id: "00000000000000b2",
        name: "ERP",
        actions: "*",
        catalogues: "*",
        expiresAt: null,
      });
      expect(all).toMatchObject({ actions: "*", catalogues: "*", expiresAt: null });
      expect(await apiKeys.findById("00000000000000a1")).toEqual(shop);
      expect(await apiKeys.findById("00000000000000ff")).toBeNull();
      // Newest first. Two keys made within a millisecond tie as dates (the database may still tell
      // them apart by microseconds), so the check is the order of the dates, not of the ids.
      const listed = await apiKeys.list();
      expect(listed.map((key) => key.id).sort()).toEqual(["00000000000000a1", "00000000000000b2"]);
      const times = listed.map((key) => key.createdAt.getTime());
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect(all.createdAt.getTime()).toBeGreaterThanOrEqual(shop.createdAt.getTime());

      await apiKeys.touch("00000000000000a1");
      expect((await apiKeys.findById("00000000000000a1"))?.lastUsedAt).toBeInstanceOf(Date);

      expect(await apiKeys.remove("00000000000000a1")).toBe(true);
      expect(await apiKeys.remove("00000000000000a1")).toBe(false);
      expect(await apiKeys.findById("00000000000000a1")).toBeNull();
      if (watches) {
        await waitUntil(() => heard.length > 0);
        // Heard at its commit in this process, and again as the database's notification: the same id.
        expect(new Set(heard)).toEqual(new Set(["00000000000000a1"]));
      }
    } finally {
      await stop();
    }
  });

  test("a zero vector is rejected", async () => {
    const { products } = await open(4);
    await expect(products.add(row(shoe, [0, 0, 0, 0]))).rejects.toThrow();
    expect(await products.searchByVector([1, 0, 0, 0], { limit: 5 })).toEqual([]);
  });

  test("users: create, find, duplicate, update, remove, count", async () => {
    const { users } = await open(4);
    expect(await users.count()).toBe(0);
    const ana = await users.create("ana", "hash-1", "admin");
    expect(ana).toEqual({
      id: expect.any(Number),
      username: "ana",
      passwordHash: "hash-1",
      tokenVersion: 0,
      role: "admin",
    });
    await users.create("luis", "hash-2", "viewer");
    expect(await users.count()).toBe(2);
    expect(await users.list()).toEqual([
      { id: ana.id, username: "ana", role: "admin", createdAt: expect.any(Date) },
      { id: expect.any(Number), username: "luis", role: "viewer", createdAt: expect.any(Date) },
    ]);

    expect(await users.findByUsername("ana")).toEqual(ana);
    expect(await users.findById(ana.id)).toEqual(ana);
    expect(await users.findByUsername("nadie")).toBeNull();
    expect(await users.findById(ana.id + 1000)).toBeNull();
    await expect(users.create("ana", "other", "admin")).rejects.toBeInstanceOf(UserAlreadyExists);

    expect(await users.updatePassword("ana", "hash-3")).toBe(true);
    expect(await users.findByUsername("ana")).toMatchObject({ passwordHash: "hash-3", tokenVersion: 1 });
    expect(await users.updatePassword("ana", "hash-4")).toBe(true);
    expect((await users.findById(ana.id))?.tokenVersion).toBe(2);
    expect(await users.updatePassword("nadie", "x")).toBe(false);

    // A role change ends the tokens of the old role, as a password change does.
    expect(await users.setRole("ana", "viewer")).toBe(true);
    expect(await users.findById(ana.id)).toMatchObject({ role: "viewer", tokenVersion: 3 });
    expect(await users.setRole("nadie", "admin")).toBe(false);

    expect(await users.remove("ana")).toBe(true);
    expect(await users.remove("ana")).toBe(false);
    expect(await users.findByUsername("ana")).toBeNull();
    expect(await users.count()).toBe(1);
  });

  test("an idempotent add records its key with the product; the same key then answers the first product", async () => {
    const { products } = await open(4);
    const record = { owner: "user:7", key: "clave-1", fingerprint: "f1", ttlHours: 24 };
    const first = await stored(products.add(row(shoe, [1, 0, 0, 0]), record));
    expect(await products.findIdempotentAnswer("user:7", "clave-1", 24)).toEqual({ fingerprint: "f1", product: first });
    const again = await products.add(row(lamp, [0, 1, 0, 0]), { ...record, fingerprint: "f2" });
    expect(again).toEqual({ alreadyAnswered: { fingerprint: "f1", product: first } });
    // Nothing of the second add was stored.
    expect((await products.searchByVector([1, 1, 0, 0], { limit: 10 })).map((hit) => hit.id)).toEqual([first.id]);
    // Keys belong to their caller: an API key's same key is another key.
    expect(await products.findIdempotentAnswer("key:ab12", "clave-1", 24)).toBeNull();
    const other = await stored(products.add(row(lamp, [0, 1, 0, 0]), { ...record, owner: "key:ab12" }));
    expect(other.id).not.toBe(first.id);
  });

  test("two concurrent adds with one key store one product and both get it", async () => {
    const { products } = await open(4);
    const record = { owner: "user:1", key: "carrera", fingerprint: "f", ttlHours: 24 };
    const results = await Promise.all([
      products.add(row(shoe, [1, 0, 0, 0]), record),
      products.add(row(shoe, [1, 0, 0, 0]), record),
      products.add(row(shoe, [1, 0, 0, 0]), record),
    ]);
    const ids = results.map((result) =>
      "created" in result ? result.created.id : "alreadyAnswered" in result ? result.alreadyAnswered.product.id : 0,
    );
    expect(new Set(ids).size).toBe(1);
    expect(results.filter((result) => "created" in result)).toHaveLength(1);
    expect(await products.searchByVector([1, 0, 0, 0], { limit: 10 })).toHaveLength(1);
  });

  test("nine concurrent adds of one product with a sku under one key store it once; the other eight get its answer", async () => {
    const { products } = await open(4);
    const record = { owner: "user:1", key: "pedido-9", fingerprint: "f", ttlHours: 24 };
    const results = await Promise.all(
      Array.from({ length: 9 }, () => products.add(row({ ...shoe, sku: "ZAP-42" }, [1, 0, 0, 0]), record)),
    );
    // Before the key was claimed first, the eight others waited on the sku instead and got skuTaken (409).
    const created = results.flatMap((result) => ("created" in result ? [result.created] : []));
    expect(created).toEqual([{ id: expect.any(Number), ...shoe, sku: "ZAP-42" }]);
    expect(results.filter((result) => !("created" in result))).toEqual(
      Array(8).fill({ alreadyAnswered: { fingerprint: "f", product: created[0] } }),
    );
    expect(await products.findBySkus(["ZAP-42"])).toHaveLength(1);
  });

  test("adds under one key whose sku another product has record no key: each is skuTaken", async () => {
    const { products } = await open(4);
    await stored(products.add(row({ ...lamp, sku: "LAM-1" }, [0, 1, 0, 0])));
    const record = { owner: "user:1", key: "pedido-10", fingerprint: "f", ttlHours: 24 };
    const results = await Promise.all(
      Array.from({ length: 3 }, () => products.add(row({ ...shoe, sku: "LAM-1" }, [1, 0, 0, 0]), record)),
    );
    expect(results).toEqual(Array(3).fill({ skuTaken: "LAM-1" }));
    expect(await products.findIdempotentAnswer("user:1", "pedido-10", 24)).toBeNull();
  });

  test("health answers", async () => {
    const { health } = await open(4);
    await health.ping();
  });

  test(`with ${LONG} dimensions, search still ranks every product by exact cosine, with exact scores`, async () => {
    const { products } = await open(LONG);
    const random = seededRandom(7);
    const unit = () => Array.from({ length: LONG }, () => random() - 0.5);
    const query = unit();
    const vectors = Array.from({ length: 60 }, unit);
    // Close calls at the top: a product near the query, then copies of it moved a little closer each.
    const base = (vectors[0] as number[]).map((x, j) => x + 0.5 * (query[j] as number));
    for (let i = 0; i <= 3; i++) vectors[i] = base.map((x, j) => x + 1e-3 * i * (query[j] as number));
    const ids: number[] = [];
    for (const [i, vector] of vectors.entries())
      ids.push((await stored(products.add(row({ ...shoe, name: `p${i}` }, vector)))).id);
    for (const q of [query, unit()]) {
      const expected = vectors
        .map((vector, i) => ({ id: ids[i] as number, score: cosineSimilarity(q, vector) }))
        .sort((a, b) => b.score - a.score || a.id - b.id)
        .slice(0, 10);
      const hits = await products.searchByVector(q, { limit: 10 });
      expect(hits.map((hit) => hit.id)).toEqual(expected.map((hit) => hit.id));
      // Scores of the full vectors: one from the half-precision copy would be off by ~1e-5.
      for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(expected[i]?.score as number, 6);
    }
  });

  test("productsAfter reads the catalogue by id, a page at a time, with embeddings that write back the same", async () => {
    const { products } = await open(LONG);
    const random = seededRandom(11);
    // Any double: a database keeps the nearest float32, which is what must come back.
    const vectors = Array.from({ length: 5 }, () => Array.from({ length: LONG }, () => (random() - 0.5) / 7));
    const added: Product[] = [];
    for (const [i, vector] of vectors.entries()) {
      added.push(
        await stored(products.add(row({ ...shoe, name: `p${i}`, ...(i === 1 ? { sku: "S-1" } : {}) }, vector))),
      );
    }
    await products.remove((added[2] as Product).id);
    const kept = [0, 1, 3, 4];

    const first = await products.productsAfter(0, 2, { withEmbeddings: false });
    expect(first).toEqual([added[0], added[1]] as Product[]);
    const rest = await products.productsAfter((added[1] as Product).id, 10, { withEmbeddings: true });
    expect(rest.map(({ embedding: _, ...product }) => product)).toEqual([added[3], added[4]] as Product[]);
    expect(await products.productsAfter((added[4] as Product).id, 10, { withEmbeddings: true })).toEqual([]);

    const all = await products.productsAfter(0, 10, { withEmbeddings: true });
    expect(all.map((product) => product.id)).toEqual(kept.map((i) => (added[i] as Product).id));
    for (const [k, product] of all.entries()) {
      const written = vectors[kept[k] as number] as number[];
      for (const [j, x] of (product.embedding as number[]).entries()) expect(x).toBeCloseTo(written[j] as number, 6);
    }
    // What an import of an export does: the vectors read, written again (as the import writes), read back the same.
    const copies = await products.writeMany(
      all.map(({ name, description, category, embedding }) => ({
        kind: "insert",
        row: { product: { name, description, category }, embedding: embedding as number[], contentDigest: "d" },
      })),
    );
    const lastId = (added[4] as Product).id;
    const copied = await products.productsAfter(lastId, 10, { withEmbeddings: true });
    expect(copied).toHaveLength(copies.length);
    expect(copied.map((product) => product.embedding)).toEqual(all.map((product) => product.embedding));
  });

  test("the query cache gives back what was put, under the same model, dimension and text only", async () => {
    const { queryCache } = await open(4);
    const key = { model: "m", dimension: 4, text: "cafetera italiana" };
    expect(await queryCache.get(key)).toBeNull();
    queryCache.put(key, [0.25, -1.5, 3, 1e-3]);
    await queryCache.flush();
    expect(await queryCache.get(key)).toEqual([0.25, -1.5, 3, expect.closeTo(1e-3, 6)]);
    expect(await queryCache.get({ ...key, model: "other" })).toBeNull();
    expect(await queryCache.get({ ...key, dimension: 3 })).toBeNull();
    expect(await queryCache.get({ ...key, text: "cafetera" })).toBeNull();
    queryCache.put(key, [1, 2, 3, 4]); // a second put replaces the entry
    await queryCache.flush();
    expect(await queryCache.get(key)).toEqual([1, 2, 3, 4]);
    const long = { ...key, text: "ñ".repeat(1000) }; // longer than a btree entry may hold, as bytes
    queryCache.put(long, [1, 0, 0, 0]);
    await queryCache.flush();
    expect(await queryCache.get(long)).toEqual([1, 0, 0, 0]);
  });
}

/** Long enough for the database to keep a half-precision copy in the row (HALF_PRECISION_COPY_FROM_DIMENSION). */
const LONG = 768;

function sqlRepositories(db: TestDatabase): RepositoryFactory {
  return async (dimension) => {
    const client = await db.migrated({ model: "test-model", dimension });
    return {
      products: new PostgresProducts(client, dimension).in("default"),
      users: new PostgresUserRepository(client),
      apiKeys: new PostgresApiKeyRepository(client),
      health: new PostgresDatabaseHealth(client),
      queryCache: new PostgresQueryEmbeddingCache(client, { retentionDays: 30, maxRows: 1000 }),
      watches: client.listen !== undefined,
    };
  };
}

/** Deterministic 3-dimension vectors; throws on call number `failOnCall` when given. */
class FakeEmbedder implements Embedder {
  readonly dimension = 3;
  calls = 0;
  constructor(
    readonly model = "fake-3",
    private readonly failOnCall?: number,
  ) {}

  async embed(texts: readonly string[], purpose: EmbeddingPurpose): Promise<Vector[]> {
    expect(purpose).toBe("document");
    this.calls++;
    if (this.calls === this.failOnCall) throw new Error("provider down");
    return texts.map((text) => [text.length, 1, text.charCodeAt(0)]);
  }
}

/** The catalogue in `client` re-embedded by `embedder`, as `reembed` does it. */
function reembedProducts(client: SqlClient, embedder: Embedder, options: ReembedOptions = {}) {
  return new ReembedCatalogue({ space: new SqlEmbeddingSpace(client), embedder }).execute(options);
}

/** Deterministic vectors of any length from the text's characters. */

class DimensionEmbedder implements Embedder {
  readonly model: string;
  constructor(readonly dimension: number) {
    this.model = `fake-${dimension}`;
  }
  async embed(texts: readonly string[], _purpose: EmbeddingPurpose): Promise<Vector[]> {
    return texts.map((text) => {
      const random = seededRandom(text.length * 31 + (text.codePointAt(0) ?? 0));
      return Array.from({ length: this.dimension }, () => random() - 0.5);
    });
  }
}

async function tableColumns(client: SqlClient, table: string): Promise<string[]> {
  const rows = await client.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
     WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position`,
    [table],
  );
  return rows.map((row) => row.column_name);
}

function databaseContract(db: TestDatabase, engine: "pglite" | "postgres"): void {
  const space = { model: "test-model", dimension: 4 };

  /** A new database of `space` holding shoe, lamp, mug, shoe and lamp, embedded [1, i, 0, 0]. */
  async function withFiveProducts() {
    const client = await db.migrated(space);
    const repository = new PostgresProducts(client, space.dimension).in("default");
    const added: Product[] = [];
    for (const [i, product] of [shoe, lamp, mug, shoe, lamp].entries())
      added.push(await stored(repository.add(row(product, [1, i, 0, 0]))));
    return { client, repository, added };
  }

  test("prepareDatabase is idempotent and records each migration once", async () => {
    const client = await db.migrated(space);
    await new PostgresUserRepository(client).create("ana", "h", "admin");
    await prepareDatabase(client, space);
    const migrations = await client.query<{ version: number }>(
      "SELECT version FROM schema_migrations ORDER BY version",
    );
    expect(migrations.map((row) => row.version)).toEqual([...MIGRATION_VERSIONS]);
    expect(await new PostgresUserRepository(client).count()).toBe(1);
  });

  test("concurrent prepareDatabase calls all succeed", async () => {
    const first = await db.fresh();
    const clients = [first, await db.another(), await db.another()];
    await Promise.all(clients.map((client) => prepareDatabase(client, space)));
    const [row] = await first.query<{ n: number | string }>("SELECT count(*) AS n FROM schema_migrations");
    expect(Number(row?.n)).toBe(MIGRATION_VERSIONS.length);
  });

  test("another model or dimension raises EmbeddingSpaceMismatch naming reembed", async () => {
    const client = await db.migrated(space);
    const otherDimension = prepareDatabase(client, { model: "test-model", dimension: 3 });
    await expect(otherDimension).rejects.toBeInstanceOf(EmbeddingSpaceMismatch);
    await expect(otherDimension).rejects.toThrow(/test-model.*4 dimensions.*3 dimensions.*reembed/s);
    await expect(prepareDatabase(client, { model: "other-model", dimension: 4 })).rejects.toThrow(
      /"test-model".*"other-model".*bun run cli reembed/s,
    );
  });

  test("the database rejects a zero vector", async () => {
    const client = await db.migrated(space);
    const insert = client.query(
      "INSERT INTO products (name, description, category, content_digest, embedding) VALUES ('a', 'b', 'c', 'd', '[0,0,0,0]')",
    );
    await expect(insert).rejects.toMatchObject({ code: "23514" });
  });

  test("a vector parameter reaches the database exactly, beside text and bytea parameters, in and out of transactions", async () => {
    const client = await db.migrated(space);
    // float4 values: each must arrive as the same float4, whatever form the client sends it in.
    const components = Float32Array.from([0.1, -2.5, 3e-8, 123456.789, -0.000123]);
    const float4s = (text: string) =>
      text
        .slice(1, -1)
        .split(",")
        .map((x) => Math.fround(Number(x)));
    const read = (sql: SqlClient) =>
      sql.query<{ vector: string; label: string; bytes: string }>(
        "SELECT $1::vector::text AS vector, $2::text AS label, encode($3::bytea, 'hex') AS bytes",
        [vectorParam(components), "[1,2]", Buffer.from([0xde, 0xad])],
      );
    for (const rows of [await read(client), await client.transaction(read)]) {
      expect(float4s(rows[0]?.vector ?? "")).toEqual(Array.from(components));
      expect(rows[0]).toMatchObject({ label: "[1,2]", bytes: "dead" });
    }
    const [cast] = await client.query<{ half: string }>("SELECT $1::vector::halfvec::text AS half", [
      vectorParam([0.5, -1]),
    ]);
    expect(cast?.half).toBe("[0.5,-1]");
  });

  test("a password change or a removal committed by another connection ends the tokens a service remembers", async () => {
    const client = await db.migrated(space);
    const serviceUsers = new PostgresUserRepository(client);
    const ana = await serviceUsers.create("ana", "hash", "admin");
    const tokens = new JwtTokenService({ secret: "s".repeat(32), algorithm: "HS256", expireMinutes: 30 });
    const clock = new FakeClock(Date.now());
    const throttle = () => new LoginThrottle({ maxFailures: 5, windowMs: 60_000, lockoutMs: 60_000 }, clock);
    const auth = new Authenticate({
      users: serviceUsers,
      hasher: { hash: async (p) => p, verify: async () => true },
      tokens,
      usernameThrottle: throttle(),
      addressThrottle: throttle(),
      verifiedTokens: { maxEntries: 10, maxAgeMs: 3_600_000 },
      clock,
    });
    // Each change is awaited as the service hears it: the notification sent when it commits. A
    // client that cannot listen (through a transaction pooler) remembers nothing: nothing to await.
    const listens = client.listen !== undefined;
    let heard = Promise.withResolvers<void>();
    const watching = Promise.withResolvers<void>();
    const stopWatching = await serviceUsers.watchChanges(
      () => heard.resolve(),
      () => watching.resolve(),
    );
    const stop = await auth.rememberVerifiedTokens();
    if (listens) await watching.promise;
    const token = await tokens.issue({ userId: ana.id, username: "ana", tokenVersion: 0 });
    expect((await auth.userForToken(token)).id).toBe(ana.id);
    expect((await auth.userForToken(token)).id).toBe(ana.id); // remembered

    const operator = new PostgresUserRepository(await db.another()); // `users reset-password`, elsewhere
    await operator.updatePassword("ana", "new-hash");
    if (listens) await heard.promise;
    await expect(auth.userForToken(token)).rejects.toThrow(TOKEN_REFUSALS.passwordChanged);

    const fresh = await tokens.issue({ userId: ana.id, username: "ana", tokenVersion: 1 });
    await auth.userForToken(fresh);
    heard = Promise.withResolvers<void>();
    await operator.remove("ana");
    if (listens) await heard.promise;
    await expect(auth.userForToken(fresh)).rejects.toThrow(TOKEN_REFUSALS.userGone);
    await stop();
    await stopWatching();
  });

  test("SQL errors are not mistaken for an unavailable database", async () => {
    const client = await db.fresh();
    const error = await client.query("SELECT * FROM no_such_table").catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(DatabaseUnavailable);
    expect(error).toMatchObject({ code: "42P01" });
  });

  test("a transaction rolls back when its function throws, a nested one to its savepoint", async () => {
    const client = await db.migrated(space);
    const users = (tx: SqlClient) => new PostgresUserRepository(tx);
    const failed = client.transaction(async (tx) => {
      await users(tx).create("ana", "h", "admin");
      throw new Error("boom");
    });
    await expect(failed).rejects.toThrow("boom");
    await client.transaction(async (tx) => {
      await users(tx).create("luis", "h", "admin");
      await tx.transaction(async (inner) => users(inner).create("luis", "again", "admin")).catch(() => {});
      await users(tx).create("eva", "h", "admin");
    });
    expect(await users(client).findByUsername("ana")).toBeNull();
    expect(await users(client).count()).toBe(2);
  });

  // PGlite is one connection: nothing to reserve.
  test.skipIf(engine === "pglite")(
    "a reserved connection takes transactions too: committed, rolled back, nested to a savepoint, settings local",
    async () => {
      const client = await db.fresh();
      const { reserved } = client;
      if (!reserved) throw new Error("a PostgreSQL client reserves connections");
      await prepareDatabase(client, space);
      const users = (tx: SqlClient) => new PostgresUserRepository(tx);
      await reserved(async (connection) => {
        await expect(
          connection.transaction(async (tx) => {
            await users(tx).create("ana", "h", "admin");
            throw new Error("boom");
          }),
        ).rejects.toThrow("boom");
        const setting = await connection.transaction(async (tx) => {
          await tx.query("SELECT set_config('sku_search.prueba', 'dentro', true)");
          await users(tx).create("luis", "h", "admin");
          await tx.transaction(async (inner) => users(inner).create("luis", "again", "admin")).catch(() => {});
          await users(tx).create("eva", "h", "admin");
          const [row] = await tx.query<{ value: string }>("SELECT current_setting('sku_search.prueba') AS value");
          return row?.value;
        });
        expect(setting).toBe("dentro");
        // The transaction's setting ended with it; the connection is out of any transaction.
        const [after] = await connection.query<{ value: string | null; idle: boolean }>(
          "SELECT current_setting('sku_search.prueba', true) AS value, now() = statement_timestamp() AS idle",
        );
        expect({ value: after?.value ?? "", idle: after?.idle }).toEqual({ value: "", idle: true });
      });
      expect(await users(client).findByUsername("ana")).toBeNull();
      expect((await users(client).list()).map((user) => user.username)).toEqual(["eva", "luis"]);
    },
  );

  test("entries cached before migration 21 (vectors, now bytes) are read back as they were", async () => {
    const client = await db.fresh();
    await applyMigrations(client, space, { through: 20 });
    const key = { model: "m", dimension: 3, text: "lámpara de mesa" };
    // As the cache wrote them until then: the vector as pgvector's `vector`.
    await client.query("INSERT INTO query_embeddings (key, model, embedding) VALUES ($1, $2, $3::vector)", [
      queryKeyDigest(key),
      key.model,
      vectorParam([0.25, -1, 3.5]),
    ]);
    await prepareDatabase(client, space);
    expect(await new PostgresQueryEmbeddingCache(client, { retentionDays: 30, maxRows: 1000 }).get(key)).toEqual([
      0.25, -1, 3.5,
    ]);
  });

  test("the query cache ignores and prunes entries older than its retention", async () => {
    const client = await db.migrated(space);
    const cache = new PostgresQueryEmbeddingCache(client, { retentionDays: 7, maxRows: 1000 });
    const old = { model: "m", dimension: 2, text: "old" };
    const recent = { ...old, text: "recent" };
    cache.put(old, [1, 0]);
    cache.put(recent, [0, 1]);
    await cache.flush();
    await client.query(
      "UPDATE query_embeddings SET created_at = now() - interval '8 days' WHERE embedding = vector_send('[1,0]'::vector)",
    );
    expect(await cache.get(old)).toBeNull();
    expect(await cache.get(recent)).toEqual([0, 1]);
    expect(await cache.prune()).toBe(1);
    const [count] = await client.query<{ n: number | string }>("SELECT count(*) AS n FROM query_embeddings");
    expect(Number(count?.n)).toBe(1);
  });

  test("the query cache keeps at most maxRows entries, pruning the oldest in the background down to nine tenths of it", async () => {
    const client = await db.migrated(space);
    const cache = new PostgresQueryEmbeddingCache(client, { retentionDays: 30, maxRows: 10, pruneEvery: 12 });
    for (let i = 0; i < 12; i++) {
      cache.put({ model: "m", dimension: 2, text: `q${i}` }, [1, i + 1]);
      await cache.flush();
      await cache.settled();
      await client.query("UPDATE query_embeddings SET created_at = created_at - make_interval(secs => $1)", [1]);
    }
    await cache.settled();
    const rows = await client.query<{ embedding: Uint8Array }>(
      "SELECT embedding FROM query_embeddings ORDER BY created_at",
    );
    // Pruned at the 12th put: the nine newest of the twelve remain.
    expect(rows.map((row) => decodeVector(row.embedding))).toEqual(Array.from({ length: 9 }, (_, i) => [1, i + 4]));
  });

  /**
   * A query cache on a fresh database that has read the keys it holds (so a prune knows how many
   * there are), its surplus scans (the statements sorting for the oldest) counted.
   */
  async function cacheKnowingItsKeys(options: { maxRows: number; pruneEvery?: number }) {
    const client = await db.migrated(space);
    const surplusScans = countingStatements(client, "OFFSET");
    const cache = new PostgresQueryEmbeddingCache(surplusScans.client, {
      retentionDays: 30,
      keysRefreshMs: 3_600_000,
      ...options,
    });
    const key = (text: string) => ({ model: "m", dimension: 2, text });
    expect(await cache.get(key("first"))).toBeNull(); // starts reading the keys
    await cache.refreshKeys();
    return { client, cache, surplusScans, key };
  }

  test("a full query cache sorts its entries for a surplus once per tenth of maxRows stored, not at every prune", async () => {
    const { client, cache, surplusScans, key } = await cacheKnowingItsKeys({ maxRows: 20, pruneEvery: 1 });
    for (let i = 0; i < 26; i++) {
      cache.put(key(`q${i}`), [1, i + 1]);
      await cache.flush();
      await cache.settled();
    }
    // The 21st passes 20: 18 are left; the 22nd and 23rd fit; the 24th passes it again: 18; the 25th and 26th fit.
    expect(surplusScans.count()).toBe(2);
    const left = await client.query<{ n: number | string }>("SELECT count(*) AS n FROM query_embeddings");
    expect(Number(left[0]?.n)).toBe(20);
    await cache.close();
  });

  test("the query cache does not sort its entries for a surplus while it knows of no more than maxRows", async () => {
    const { client, cache, surplusScans, key } = await cacheKnowingItsKeys({ maxRows: 3 });
    for (const text of ["a", "b", "c"]) cache.put(key(text), [1, text.charCodeAt(0)]);
    await cache.flush();
    expect(await cache.prune()).toBe(0);
    expect(surplusScans.count()).toBe(0);

    await client.query("UPDATE query_embeddings SET created_at = created_at - interval '1 second'");
    cache.put(key("d"), [1, 100]);
    await cache.flush();
    expect(await cache.prune()).toBe(2); // four known: the oldest go, down to nine tenths of three
    expect(surplusScans.count()).toBe(1);
    const left = await client.query<{ n: number | string }>("SELECT count(*) AS n FROM query_embeddings");
    expect(Number(left[0]?.n)).toBe(2);
    expect(await cache.prune()).toBe(0);
    expect(surplusScans.count()).toBe(1);
    await cache.close();
  });

  test("the query cache writes behind: its own process finds an entry at once, a restart once it is stored", async () => {
    const client = await db.migrated(space);
    const options = { retentionDays: 30, maxRows: 1000, flushDelayMs: 3_600_000 };
    const cache = new PostgresQueryEmbeddingCache(client, options);
    const key = { model: "m", dimension: 2, text: "cafetera" };
    cache.put(key, [1, 2]);
    cache.put({ ...key, text: "tetera" }, [2, 1]);
    // Not stored yet (the answer did not wait for it), but this process already finds it.
    const stored = async () =>
      Number((await client.query<{ n: number | string }>("SELECT count(*) AS n FROM query_embeddings"))[0]?.n);
    expect(await stored()).toBe(0);
    expect(await cache.get(key)).toEqual([1, 2]);
    expect(await new PostgresQueryEmbeddingCache(client, options).get(key)).toBeNull();

    await cache.close(); // as the service does when it stops: both stored, in one statement
    expect(await stored()).toBe(2);
    const restarted = new PostgresQueryEmbeddingCache(client, options);
    expect(await restarted.get(key)).toEqual([1, 2]);
    expect(await restarted.get({ ...key, text: "tetera" })).toEqual([2, 1]);
  });

  test("the query cache answers a query it does not hold without a round trip, once it has read its keys", async () => {
    const client = await db.migrated(space);
    const lookups = countingStatements(client, "SELECT embedding FROM query_embeddings");
    const options = { retentionDays: 30, maxRows: 1000, keysRefreshMs: 3_600_000 };
    const key = (text: string) => ({ model: "m", dimension: 2, text });
    const other = new PostgresQueryEmbeddingCache(client, options); // another replica
    other.put(key("tetera"), [1, 2]);
    await other.flush();

    const cache = new PostgresQueryEmbeddingCache(lookups.client, options);
    expect(await cache.get(key("tetera"))).toEqual([1, 2]); // keys not read yet: asked
    await cache.refreshKeys();
    expect(await cache.get(key("tetera"))).toEqual([1, 2]);
    expect(lookups.count()).toBe(2);
    expect(await cache.get(key("cafetera"))).toBeNull(); // not held: no round trip
    expect(lookups.count()).toBe(2);

    other.put(key("cafetera"), [2, 1]);
    await other.flush();
    expect(await cache.get(key("cafetera"))).toBeNull(); // stored elsewhere since the last read
    await cache.refreshKeys();
    expect(await cache.get(key("cafetera"))).toEqual([2, 1]);
    cache.put(key("jarra"), [1, 1]);
    await cache.flush();
    expect(await new PostgresQueryEmbeddingCache(client, options).get(key("jarra"))).toEqual([1, 1]);
    await cache.close();
    await other.close();
  });

  test("the query cache stores a full batch without waiting, and a failure to store is logged, never thrown", async () => {
    const client = await db.migrated(space);
    const events: Record<string, unknown>[] = [];
    let inserts = 0;
    let failing = true;
    const flaky: SqlClient = {
      ...client,
      query: (text, params) => {
        if (!text.trimStart().startsWith("INSERT")) return client.query(text, params);
        inserts++;
        return failing ? Promise.reject(new DatabaseUnavailable()) : client.query(text, params);
      },
    };
    const cache = new PostgresQueryEmbeddingCache(flaky, {
      retentionDays: 30,
      maxRows: 1000,
      flushDelayMs: 3_600_000,
      maxBatch: 3,
      log: (event) => events.push(event),
    });
    const key = (text: string) => ({ model: "m", dimension: 2, text });
    for (const text of ["a", "b", "c"]) cache.put(key(text), [1, 1]);
    await cache.flush();
    expect(inserts).toBe(1);
    expect(events).toEqual([
      { event: "query_cache_failed", operation: "put", entries: 3, error: expect.any(DatabaseUnavailable) },
    ]);
    // Lost, not stored, and nothing else broke: the cache still answers and stores.
    expect(await cache.get(key("a"))).toBeNull();
    failing = false;
    for (const text of ["d", "e", "f"]) cache.put(key(text), [1, 2]);
    await cache.flush();
    expect(inserts).toBe(2);
    expect(await new PostgresQueryEmbeddingCache(client, { retentionDays: 30, maxRows: 1000 }).get(key("f"))).toEqual([
      1, 2,
    ]);
  });

  test("reembedProducts converts 4-dimension products to the embedder's 3 dimensions", async () => {
    const { client, added } = await withFiveProducts();

    const embedder = new FakeEmbedder();
    const progress: number[] = [];
    const result = await reembedProducts(client, embedder, {
      batchSize: 2,
      onEvent: (event) => event.type === "progress" && progress.push(event.done),
    });
    expect(result).toEqual({ products: 5 });
    expect(progress).toEqual([2, 4, 5]);
    expect(embedder.calls).toBe(3);

    await prepareDatabase(client, { model: "fake-3", dimension: 3 });
    // The old column and its half-precision copy are gone; the new one took the name.
    const columns = await tableColumns(client, "products");
    expect(columns.filter((column) => column.startsWith("embedding"))).toEqual(["embedding"]);
    const hits = await new PostgresProducts(client, 3)
      .in("default")
      .searchByVector([embeddingText(mug, []).length, 1, mug.name.charCodeAt(0)], { limit: 5 });
    expect(hits).toHaveLength(5);
    expect(hits[0]).toMatchObject({ id: added[2]?.id, ...mug });
    expect(hits[0]?.score).toBeCloseTo(1, 5);
    await expect(
      client.query(
        "INSERT INTO products (name, description, category, content_digest, embedding) VALUES ('a','b','c','d','[0,0,0]')",
      ),
    ).rejects.toMatchObject({ code: "23514" });
  });

  test("3072-d embeddings keep a half-precision copy in the row; reembed adds and removes it with the dimension", async () => {
    const { client } = await withFiveProducts();

    const long = new DimensionEmbedder(3072);
    await reembedProducts(client, long);
    expect(await tableColumns(client, "products")).toContain("embedding_half");
    // The rows are in the default catalogue's partition (schema.ts, migration 16).
    const [storage] = await client.query<{ attstorage: string }>(
      "SELECT attstorage FROM pg_attribute WHERE attrelid = 'products_c1'::regclass AND attname = 'embedding_half'",
    );
    expect(storage?.attstorage).toBe("m");
    // One 6 kB copy per row, in the row: five rows need five 8 kB heap pages (out of the row, one page holds them all).
    const [heap] = await client.query<{ bytes: number | string }>("SELECT pg_relation_size('products_c1') AS bytes");
    expect(Number(heap?.bytes)).toBeGreaterThanOrEqual(5 * 8192);

    const repository = new PostgresProducts(client, long.dimension).in("default");
    const added = await stored(repository.add(row(mug, (await long.embed(["fresh"], "document"))[0] as Vector)));
    const [half] = await client.query<{ n: number | string }>(
      "SELECT count(*) AS n FROM products WHERE embedding_half IS NULL",
    );
    expect(Number(half?.n)).toBe(0);
    const hits = await repository.searchByVector((await long.embed(["fresh"], "query"))[0] as Vector, { limit: 3 });
    expect(hits[0]).toMatchObject({ id: added.id, score: expect.closeTo(1, 5) });

    await reembedProducts(client, new FakeEmbedder());
    expect(await tableColumns(client, "products")).not.toContain("embedding_half");
    expect(await new PostgresProducts(client, 3).in("default").searchByVector([1, 1, 1], { limit: 10 })).toHaveLength(
      6,
    );
  });

  test("after a re-embed to another dimension and back, a filtered search still ranks its products (the view it ranks them in is defined again)", async () => {
    const { client } = await withFiveProducts();
    const filteredBy = async (dimension: number, query: Vector) =>
      (
        await new PostgresProducts(client, dimension)
          .in("default")
          .searchByVector(query, { limit: 5, categories: [mug.category] })
      ).map((hit) => hit.name);

    const long = new DimensionEmbedder(3072);
    await reembedProducts(client, long);
    expect(await filteredBy(3072, (await long.embed(["any"], "query"))[0] as Vector)).toEqual([mug.name]);
    await reembedProducts(client, new FakeEmbedder());
    expect(await filteredBy(3, [1, 1, 1])).toEqual([mug.name]);
  });

  test("a re-embed leaves each product with the digest of its current text, as contentDigest computes it", async () => {
    const client = await db.migrated(space);
    const repository = new PostgresProducts(client, space.dimension).in("default");
    const products = [shoe, { ...lamp, description: "" }, { ...mug, name: 'Taza "térmica"\tñ 😀' }];
    const added = [];
    for (const [i, product] of products.entries()) added.push(await stored(repository.add(row(product, [1, i, 0, 0]))));
    // `row` stores made-up digests, as a catalogue embedded before the category was in the text has stale ones.
    const embedder = new FakeEmbedder();
    await reembedProducts(client, embedder);
    expect(embedder.calls).toBe(1);
    await prepareDatabase(client, { model: "fake-3", dimension: 3 });
    const after = new PostgresProducts(client, 3).in("default");
    for (const [i, product] of products.entries()) {
      expect((await after.get(added[i]?.id as number))?.contentDigest).toBe(await contentDigest(product, []));
    }
  });

  test("with a catalogue's embedded attributes, a re-embed embeds the domain's text and stores its digest", async () => {
    const client = await db.migrated(space);
    await new PostgresCatalogueRepository(client).create("tienda");
    const embedded = ["brand", "color", "in_stock", "note", "price", "sizes"];
    expect(await new PostgresCatalogueRepository(client).setEmbeddedAttributes("tienda", embedded)).toBe(true);
    const repository = new PostgresProducts(client, space.dimension).in("tienda");
    // Every kind of value, the numbers JavaScript writes with an exponent among them.
    const products: NormalizedProduct[] = [
      { ...shoe, attributes: { brand: "Acme «ñ» 😀", color: ["rojo", "", "azul"], in_stock: true, price: 59.9 } },
      { ...lamp, description: "", attributes: { price: 1e21, note: "", sizes: [], in_stock: false } },
      { ...mug, attributes: { price: -2.5e-7, weight: 3 } },
      { ...mug, name: "Taza sin atributos" },
      { ...shoe, attributes: { price: 0.1 + 0.2, sizes: ["42"], color: "verde" } },
    ];
    const added = [];
    for (const [i, product] of products.entries()) added.push(await stored(repository.add(row(product, [1, i, 0, 0]))));
    const texts: string[] = [];
    const recording: Embedder = {
      model: "fake-3",
      dimension: 3,
      embed: async (batch) => {
        texts.push(...batch);
        return batch.map((text) => [text.length, 1, text.charCodeAt(0)]);
      },
    };
    await reembedProducts(client, recording);
    expect(texts).toEqual(products.map((product) => embeddingText(product, embedded)));
    expect(texts[1]).toBe("Lámpara de escritorio. hogar. in_stock: false. price: 1000000000000000000000");
    await prepareDatabase(client, { model: "fake-3", dimension: 3 });
    const after = new PostgresProducts(client, 3).in("tienda");
    for (const [i, product] of products.entries()) {
      expect((await after.get(added[i]?.id as number))?.contentDigest).toBe(await contentDigest(product, embedded));
    }
  });

  test("a re-embed that fails midway leaves the live embeddings as they were; the next run resumes and switches", async () => {
    const { client, repository } = await withFiveProducts();

    const failing = new FakeEmbedder("fake-3", 2);
    const failure = reembedProducts(client, failing, { batchSize: 2 });
    await expect(failure).rejects.toBeInstanceOf(EmbeddingUnavailable);
    await expect(failure).rejects.toMatchObject({ cause: { message: expect.stringContaining("provider down") } });

    // The database still serves the old space, its vectors untouched.
    await prepareDatabase(client, space);
    const hits = await repository.searchByVector([1, 0, 0, 0], { limit: 10 });
    expect(hits).toHaveLength(5);
    expect(hits[0]?.score).toBeCloseTo(1, 5);

    // The next run for the same model embeds only the three products not staged before the failure.
    const embedder = new FakeEmbedder("fake-3");
    const started: number[] = [];
    const result = await reembedProducts(client, embedder, {
      batchSize: 2,
      onEvent: (event) => event.type === "started" && started.push(event.staged),
    });
    expect(started).toEqual([2]);
    expect(embedder.calls).toBe(2);
    expect(result).toEqual({ products: 5 });
    await prepareDatabase(client, { model: "fake-3", dimension: 3 });
    const columns = await tableColumns(client, "products");
    expect(columns.filter((column) => column.startsWith("embedding"))).toEqual(["embedding"]);
  });
}

describe("memory fakes", () => {
  repositoryContract(async (dimension) => ({
    products: new MemoryProductRepository(dimension).in("default"),
    users: new MemoryUserRepository(),
    apiKeys: new MemoryApiKeyRepository(),
    health: new MemoryDatabaseHealth(),
    queryCache: new MemoryQueryEmbeddingCache(),
    watches: true,
  }));

  test("down makes every call fail with DatabaseUnavailable", async () => {
    const store = new MemoryProductRepository();
    const products = store.in("default");
    const users = new MemoryUserRepository();
    const health = new MemoryDatabaseHealth();
    const queryCache = new MemoryQueryEmbeddingCache();
    store.down = users.down = health.down = queryCache.down = true;
    await expect(health.ping()).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(queryCache.get({ model: "m", dimension: 1, text: "q" })).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(users.count()).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(products.searchByVector([1], { limit: 1 })).rejects.toBeInstanceOf(DatabaseUnavailable);
  });
});

forEachDatabase((db, engine) => {
  repositoryContract(sqlRepositories(db));
  databaseContract(db, engine);
});

describe("PGlite on disk", () => {
  let dir: string;
  beforeAll(async () => {
    // A new database's files already there, as a first start unpacks them (initdb is the cli tests' `serve`).
    dir = await withNewDatabase(makeTempDir("pglite"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test("keeps its data across close and reopen; closed, it is unavailable", async () => {
    const space = { model: "test-model", dimension: 4 };
    const first = await openPglite(dir);
    await prepareDatabase(first, space);
    const added = await stored(new PostgresProducts(first, space.dimension).in("default").add(row(shoe, [1, 2, 3, 4])));
    await new PostgresUserRepository(first).create("ana", "h", "admin");
    await first.close();
    await expect(first.query("SELECT 1")).rejects.toBeInstanceOf(DatabaseUnavailable);

    const second = await openPglite(dir);
    try {
      await prepareDatabase(second, space);
      expect(
        await new PostgresProducts(second, space.dimension).in("default").searchByVector([1, 2, 3, 4], { limit: 5 }),
      ).toEqual([{ ...added, version: 1, score: expect.closeTo(1, 5) }]);
      expect(await new PostgresUserRepository(second).count()).toBe(1);
    } finally {
      await second.close();
    }
  }, 30_000);
});

describe("postgres.js client", () => {
  test("an unreachable server is DatabaseUnavailable", async () => {
    const client = connectPostgres("postgres://nobody@127.0.0.1:1/nothing", { connectTimeoutSeconds: 2 });
    try {
      await expect(client.query("SELECT 1")).rejects.toBeInstanceOf(DatabaseUnavailable);
      await expect(new PostgresDatabaseHealth(client).ping()).rejects.toBeInstanceOf(DatabaseUnavailable);
      await expect(client.transaction(async () => 1)).rejects.toBeInstanceOf(DatabaseUnavailable);
    } finally {
      await client.close();
    }
  });
});

describe.skipIf(!POSTGRES_URL)("PostgreSQL server: connections", () => {
  let admin: SqlClient;
  blockHooks(!POSTGRES_URL, {
    beforeAll() {
      admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
    },
    afterAll: () => admin.close(),
  });

  test("a backend killed mid-query is DatabaseUnavailable, and the client recovers", async () => {
    // closeTimeoutSeconds 0: postgres.js may wait for a killed connection until the timeout.
    const client = connectPostgres(POSTGRES_URL, { maxConnections: 1, closeTimeoutSeconds: 0 });
    try {
      const tag = `victim_${process.pid}`;
      // Long enough that it is still running when found, however loaded the machine: it is killed, never waited for.
      const running = client.query(`SELECT pg_sleep(60) AS ${tag}`).catch((error: unknown) => error);
      for (let killed = 0; killed === 0; await Bun.sleep(20)) {
        const rows = await admin.query<{ ok: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
             WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%AS ${tag}%`],
        );
        killed = rows.length;
      }
      expect(await running).toBeInstanceOf(DatabaseUnavailable);
      let answer: unknown;
      for (let attempt = 0; attempt < 3 && answer === undefined; attempt++) {
        answer = await client.query<{ one: number }>("SELECT 1 AS one").then(
          (rows) => rows[0]?.one,
          (error: unknown) => expect(error).toBeInstanceOf(DatabaseUnavailable),
        );
      }
      expect(answer).toBe(1);
    } finally {
      await client.close();
    }
  });
});
