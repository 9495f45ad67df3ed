/**
 * The approximate vector index (vector-index.ts) and the search plans that use it
 * (product-repository.ts), on PGlite and a PostgreSQL server: a few thousand clustered vectors,
 * checked against a brute-force reference.
 */
import { describe, expect, test } from "bun:test";
import { vacuumWhereChanged } from "../../src/adapters/pglite/pglite-client.ts";
import { PostgresCatalogueRepository } from "../../src/adapters/postgres/catalogue-repository.ts";
import { type PostgresProductRepository, PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import {
  CATALOGUE_ROLE,
  CATALOGUE_SETTING,
  cataloguePartition,
  indexedNumberAttributes,
  prepareDatabase,
} from "../../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import {
  buildMemoryFor,
  IndexesInUse,
  type IndexTarget,
  indexTarget,
  ivfLists,
  probesFor,
  SqlVectorIndex,
  type SqlVectorIndexOptions,
  type VectorIndexKindSetting,
  vectorSessionSettings,
} from "../../src/adapters/postgres/vector-index.ts";
import { type AttributeCondition, meetsConditions } from "../../src/domain/attribute-filter.ts";
import { MaintainVectorIndex } from "../../src/domain/maintain-vector-index.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { BulkWrite } from "../../src/ports/product-repository.ts";
import { cosineSimilarity } from "../fakes/memory-product-repository.ts";
import { outOfRowValues } from "../support/out-of-row.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { forEachDatabase, POSTGRES_URL, type TestDatabase } from "../support/test-databases.ts";

/**
 * Clustered vectors as embeddings are: `clusters` centres, each product near one of them. With
 * `directions`, a cluster's products differ along that many directions of its own (plus a little
 * noise in all): sentence embeddings have a low intrinsic dimension. Noise alone in 512 dimensions
 * would put every product of a cluster about equally far from a query, a flat neighbour profile
 * that no approximate index ranks well (README "Vector index").
 */
function clusteredSpace(dimension: number, clusters: number, seed: number, directions?: number) {
  const random = seededRandom(seed);
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const centres = Array.from({ length: clusters }, () => Array.from({ length: dimension }, gaussian));
  const bases = centres.map(() =>
    Array.from({ length: directions ?? 0 }, () => Array.from({ length: dimension }, gaussian)),
  );
  return {
    near(cluster: number, spread: number): number[] {
      const centre = centres[cluster % clusters] as number[];
      const basis = bases[cluster % clusters] as number[][];
      if (basis.length === 0) return centre.map((value) => value + spread * gaussian());
      const weights = basis.map(() => (spread * gaussian()) / Math.sqrt(basis.length));
      // Plain loops (the vectors of the 512-dimension tests took a tenth of their time as closures).
      const vector = new Array<number>(dimension);
      for (let j = 0; j < dimension; j++) {
        let sum = 0;
        for (let k = 0; k < basis.length; k++) sum += (weights[k] as number) * ((basis[k] as number[])[j] as number);
        vector[j] = (centre[j] as number) + sum + 0.1 * spread * gaussian();
      }
      return vector;
    },
  };
}

const DIMENSION = 32;
/** From 512 dimensions the index is on the half-precision copy: its bits (ivf-bq, hnsw-bq) or itself (halfvec). */
const LONG_DIMENSION = 512;
/** Products a test loads unless it says otherwise. */
const PRODUCTS = 2000;
/** The default catalogue's partition (schema.ts): the products these tests load, and its indexes. */
const TABLE = "products_c1";
const INDEX_NAME = `${TABLE}_embedding_hnsw`;
const CLUSTERS = 30;
/** Product i lies near cluster i % CLUSTERS: category `apart` holds clusters 0 to 8 (600 of 2,000 products), `main` the rest. */
const categoryOf = (i: number) => (i % CLUSTERS < 9 ? "apart" : "main");
/**
 * Product i's attributes: `zone` the same as its category (an attribute filter selecting 30 % or
 * 70 %), `rare` for one in 100 (1 %, every cluster); `withSize`, also `size` 0 to 99 (a number with
 * no index of its own; only then: the planner's choices for the others depend on how alike the
 * products' attributes are).
 */
const attributesOf = (i: number, withSize = false): { zone: string; rare: boolean; size?: number } => ({
  zone: categoryOf(i),
  rare: i % 100 === 9,
  ...(withSize ? { size: i % 100 } : {}),
});
/** Queries near the clusters of `main`, far from those of `apart`. */
const mainQuery = (space: ReturnType<typeof clusteredSpace>, i: number) => space.near(9 + (i % 21), 0.8);

/** A statement a repository sent: its parameters, and the transaction it ran in (0: none). */
interface Sent {
  text: string;
  params: readonly unknown[];
  transaction: number;
}

interface Loaded {
  db: SqlClient;
  /** The plan of the last statement the repository sent (a search's own SQL), as the repository runs it: as the catalogue's role. */
  planOfLastSearch(): Promise<string>;
  /** Every statement the repository sent, with its parameters, in the order it sent them. */
  sent(): Sent[];
  engine: "pglite" | "postgres";
  dimension: number;
  products: PostgresProductRepository;
  index: SqlVectorIndex;
  vectors: Map<number, Vector>;
  categories: Map<number, string>;
  attributes: Map<number, ReturnType<typeof attributesOf>>;
  space: ReturnType<typeof clusteredSpace>;
}

interface LoadOptions {
  filterExactMaxRows?: number;
  filterFarExactMaxRows?: number;
  dimension?: number;
  /** VECTOR_INDEX_KIND of the index (and of the repository's view of it). */
  kind?: VectorIndexKindSetting;
  /** How many products to load (PRODUCTS unless told). */
  products?: number;
  /** Products with a `size` too (attributesOf). */
  withSize?: boolean;
  /** INDEXED_NUMBER_ATTRIBUTES: prepareDatabase indexes them, the repository knows they are. */
  numberIndexes?: string[];
}

/**
 * The adapter, and a repository that sees its index within 20 ms (IndexInUse's reading) and
 * remembers the last statement it sent, so a test can EXPLAIN a search's own SQL.
 */
async function indexAndProducts(db: SqlClient, engine: "pglite" | "postgres", options: LoadOptions) {
  const dimension = options.dimension ?? DIMENSION;
  const indexesInUse = new IndexesInUse(db, dimension, indexTarget(dimension, options.kind), 20);
  const inUse = indexesInUse.of(TABLE);
  const settings: SqlVectorIndexOptions = {
    server: engine === "postgres",
    kind: options.kind ?? "ivf-bq",
    inUse,
    table: TABLE,
  };
  if (engine === "postgres") {
    // A build on a server runs on a connection of its own: its advisory lock is the session's.
    const url = await urlOfSchema(db);
    settings.openBuilder = (onNotice) => connectPostgres(url, { maxConnections: 1, onNotice });
  }
  let last: { text: string; params: readonly unknown[] } = { text: "SELECT 1", params: [] };
  const sent: Sent[] = [];
  let transactions = 0;
  // `transaction`: which transaction (or savepoint) a statement ran in, 0 outside any.
  const recording = (client: SqlClient, transaction = 0): SqlClient => ({
    query: <T>(text: string, params: readonly unknown[] = []) => {
      sent.push({ text, params, transaction });
      if (!text.includes("set_config")) last = { text, params };
      return client.query<T>(text, params);
    },
    transaction: (fn) => client.transaction((tx) => fn(recording(tx, ++transactions))),
    copyIn: (table, columns, data) => client.copyIn(table, columns, data),
    close: () => client.close(),
  });
  return {
    index: new SqlVectorIndex(db, dimension, settings),
    products: new PostgresProducts(
      recording(db),
      dimension,
      {
        filterExactMaxRows: options.filterExactMaxRows ?? 100,
        filterFarExactMaxRows: options.filterFarExactMaxRows ?? 100_000,
        efSearch: 100,
        probes: "auto",
        rerankDepth: 100,
        indexedNumberAttributes: options.numberIndexes ?? [],
      },
      undefined,
      { indexesInUse },
    ).in("default"),
    async planOfLastSearch(): Promise<string> {
      const rows = await db.transaction(async (tx) => {
        await tx.query(
          `SELECT set_config('role', '${CATALOGUE_ROLE}', true), set_config('${CATALOGUE_SETTING}', 'default', true)`,
        );
        return tx.query<Record<string, string>>(`EXPLAIN ${last.text}`, last.params);
      });
      return rows.map((row) => Object.values(row)[0]).join("\n");
    },
    /** Every statement the repository sent, with its parameters. */
    sent: () => [...sent],
  };
}

async function load(database: TestDatabase, engine: "pglite" | "postgres", options: LoadOptions = {}): Promise<Loaded> {
  const dimension = options.dimension ?? DIMENSION;
  const db = await database.migrated({ model: "test", dimension }, { numberIndexes: options.numberIndexes ?? [] });
  // The service sets these when a connection opens; the test's connection is already open.
  for (const [name, value] of Object.entries(vectorSessionSettings({ efSearch: 100, probes: "auto" }))) {
    await db.query("SELECT set_config($1, $2, false)", [name, value]);
  }
  const { index, products, planOfLastSearch, sent } = await indexAndProducts(db, engine, options);
  const space = clusteredSpace(dimension, CLUSTERS, 7, dimension >= LONG_DIMENSION ? 8 : undefined);
  const writes: BulkWrite[] = [];
  const pending: { vector: Vector; category: string }[] = [];
  for (let i = 0; i < (options.products ?? PRODUCTS); i++) {
    const vector = space.near(i, 0.6);
    const category = categoryOf(i);
    pending.push({ vector, category });
    writes.push({
      kind: "insert",
      row: {
        product: { name: `producto ${i}`, description: "", category, attributes: attributesOf(i, options.withSize) },
        embedding: vector,
        contentDigest: `d${i}`,
      },
    });
  }
  const outcomes = await products.writeMany(writes);
  const vectors = new Map<number, Vector>();
  const categories = new Map<number, string>();
  const attributes = new Map<number, ReturnType<typeof attributesOf>>();
  outcomes.forEach((outcome, i) => {
    if (!("written" in outcome)) throw new Error(`not written: ${JSON.stringify(outcome)}`);
    vectors.set(outcome.written.id, (pending[i] as { vector: Vector }).vector);
    categories.set(outcome.written.id, (pending[i] as { category: string }).category);
    attributes.set(outcome.written.id, attributesOf(i, options.withSize));
  });
  return { db, planOfLastSearch, sent, engine, dimension, products, index, vectors, categories, attributes, space };
}

/** The exact top `k` ids by cosine (ties by id), of `categories` (or those meeting `conditions`) when given. */
function bruteForce(
  loaded: Loaded,
  query: Vector,
  k: number,
  categories?: string[],
  conditions: readonly AttributeCondition[] = [],
): number[] {
  return [...loaded.vectors.entries()]
    .filter(([id]) => !categories || categories.includes(loaded.categories.get(id) as string))
    .filter(([id]) => meetsConditions(loaded.attributes.get(id), conditions))
    .map(([id, vector]) => ({ id, score: cosineSimilarity(query, vector) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, k)
    .map((hit) => hit.id);
}

/**
 * Searches near `queries` and returns recall@10 against the brute-force top 10; every hit's score
 * must be the exact cosine of its stored vector, in descending order, and every answer full.
 */
async function recallAt10(loaded: Loaded, queries: readonly Vector[]): Promise<number> {
  let found = 0;
  for (const query of queries) {
    const hits = await loaded.products.searchByVector(query, { limit: 10 });
    expect(hits).toHaveLength(10);
    const truth = bruteForce(loaded, query, 10);
    found += hits.filter((hit) => truth.includes(hit.id)).length;
    for (const hit of hits) {
      expect(hit.score).toBeCloseTo(cosineSimilarity(query, loaded.vectors.get(hit.id) as Vector), 5);
    }
    const scores = hits.map((hit) => hit.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  }
  if (Bun.env.SHOW_RECALL) console.log("recall@10", found / (queries.length * 10));
  return found / (queries.length * 10);
}

/**
 * The server URL of `db`'s database and schema (tests each have their own schema, or through
 * pgbouncer their own database): a connection straight to the server, as a build's is.
 */
async function urlOfSchema(db: SqlClient): Promise<string> {
  const [where] = await db.query<{ schema: string; database: string }>(
    "SELECT current_schema() AS schema, current_database() AS database",
  );
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${where?.database}`;
  url.searchParams.set("search_path", `${where?.schema},public`);
  return url.toString();
}

/** The names of the vector indexes on products. */
async function indexNames(db: SqlClient): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = '${TABLE}'::regclass AND c.relname LIKE '${TABLE}_embedding_%' ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}

/**
 * Sequential and bitmap scans off for the session: at 2,000 rows the planner would rather sort than
 * read an index. JIT off too: a plan that must still scan is costed past `jit_above_cost` by the
 * disabled scans' penalty, and a server compiled each such search first (200 of 210 ms).
 */
async function withoutPlainScans(db: SqlClient): Promise<void> {
  await db.query("SELECT set_config('enable_seqscan', 'off', false)");
  await db.query("SELECT set_config('enable_bitmapscan', 'off', false)");
  await db.query("SELECT set_config('jit', 'off', false)");
}

/**
 * Gives the session back the scan settings a test changed (PGlite is one session for every test of
 * a file, and pgbouncer hands a server connection on): a later scan would stop after 150 tuples.
 */
async function resetScanLimits(db: SqlClient): Promise<void> {
  for (const setting of ["hnsw.max_scan_tuples", "enable_seqscan", "enable_bitmapscan", "jit"]) {
    await db.query(`RESET ${setting}`);
  }
}

/** The plan PostgreSQL chose for the search's candidates. */
async function planOf(db: SqlClient, query: Vector, categories?: string[]): Promise<string> {
  const vector = `[${query.join(",")}]`;
  const sql = categories
    ? "EXPLAIN SELECT id FROM products WHERE category = ANY($2::text[]) ORDER BY embedding <=> $1::vector LIMIT 200"
    : "EXPLAIN SELECT id FROM products ORDER BY embedding <=> $1::vector LIMIT 40";
  const rows = await db.query<Record<string, string>>(sql, categories ? [vector, categories] : [vector]);
  return rows.map((row) => Object.values(row)[0]).join("\n");
}

describe("the lists an IVFFlat search reads (VECTOR_IVF_PROBES=auto)", () => {
  test("0.7 × √lists, at least 10: 14 at 100,000 products (400 lists), 39 at 1,000,000 (3,000 lists)", () => {
    expect([3, 100, 400, 2000, 3000].map(probesFor)).toEqual([10, 10, 14, 32, 39]);
  });
});

describe("the lists of an IVFFlat index", () => {
  test("one per 250 products, 3 × √n past 562,500, at most 3,500", () => {
    expect([100, 1_500, 100_000, 562_500, 1_000_000, 1_500_000, 4_000_000].map(ivfLists)).toEqual([
      1, 6, 400, 2250, 3000, 3500, 3500,
    ]);
  });
});

describe("the memory an index build is given (VECTOR_INDEX_BUILD_MEMORY=auto)", () => {
  test("holds an HNSW graph, or an IVFFlat build's k-means, with room to spare, from 64 MB to 4 GB", () => {
    const bq = indexTarget(3072, "hnsw-bq") as IndexTarget;
    expect(buildMemoryFor(bq, 3_000)).toBe("64MB");
    // 1,000,000 × 3072: 1,164 bytes an element were measured; 1 GB spilled at about 920,000.
    expect(buildMemoryFor(bq, 1_000_000)).toBe("1230MB");
    // IVFFlat: its k-means sample (50 rows a list) and a float per sample and list, which pgvector
    // checks before it starts (227 MB asked for 1,000 lists at 1,000,000 × 3072, 2.3 GB taken by 3,000).
    expect(buildMemoryFor(indexTarget(3072) as IndexTarget, 1_000_000)).toBe("2268MB");
    expect(buildMemoryFor(indexTarget(3072) as IndexTarget, 100_000)).toBe("64MB");
    expect(buildMemoryFor(indexTarget(3072) as IndexTarget, 4_000_000)).toBe("3071MB");
    expect(buildMemoryFor(indexTarget(3072, "halfvec") as IndexTarget, 1_000_000)).toBe("4096MB");
    expect(buildMemoryFor(indexTarget(384) as IndexTarget, 100_000)).toBe("244MB");
  });
});

forEachDatabase((database, engine, route) => {
  /**
   * A test of building and replacing the index. The service builds over a connection of its own,
   * straight to the server even when its queries go through a transaction pooler (openBuilder, as
   * here), and the searches these tests make after a build are the other tests' statements: through
   * pgbouncer they would repeat the server block's builds and add nothing, so they run on PGlite and
   * on the server only.
   */
  function buildTest(name: string, fn: () => Promise<void>, timeout: number): void {
    if (route !== "pooler") test(name, fn, timeout);
  }

  describe("vector index", () => {
    test("built, the index answers the search, which keeps the exact top results and exact scores", async () => {
      // 3,000 products: at 2,000 of 32 dimensions the planner scans the table rather than use the index.
      const loaded = await load(database, engine, { products: 3000 });
      try {
        expect((await loaded.index.status()).present).toBe(false);
        expect(await loaded.index.build()).toBe(true);
        const status = await loaded.index.status();
        expect(status).toMatchObject({ column: "embedding", present: true, valid: true });
        expect(status.bytes).toBeGreaterThan(0);
        const queries = Array.from({ length: 20 }, (_, i) => loaded.space.near(i * 7, 0.8));
        expect(await planOf(loaded.db, queries[0] as Vector)).toContain(INDEX_NAME);
        expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);
      } finally {
        await database.cleanup();
      }
    }, 120_000);

    test("a deleted or changed product is not found through the index by its old vector", async () => {
      const loaded = await load(database, engine);
      try {
        await loaded.index.build();
        const query = loaded.space.near(3, 0.8);
        const [first] = await loaded.products.searchByVector(query, { limit: 1 });
        if (!first) throw new Error("no hit");
        expect(await loaded.products.remove(first.id)).toBe(true);
        const after = await loaded.products.searchByVector(query, { limit: 10 });
        expect(after.map((hit) => hit.id)).not.toContain(first.id);
        expect(after).toHaveLength(10);
      } finally {
        await database.cleanup();
      }
    }, 120_000);

    test("a filter on up to filterExactMaxRows products scans them exactly; one on more uses the index and still fills the limit", async () => {
      const loaded = await load(database, engine, { filterExactMaxRows: 1000 });
      try {
        await loaded.index.build();
        // An iterative index scan stops after hnsw.max_scan_tuples (20,000 by default): at 100,000
        // products a category far from the query is then missed. Scaled down to 2,000 here.
        await loaded.db.query("SELECT set_config('hnsw.max_scan_tuples', '150', false)");
        // And at that size the planner prefers the index for a filtered query as soon as it can use
        // it (bench/index.ts); at 2,000 it would still scan, unless scans cost it more.
        await withoutPlainScans(loaded.db);
        let foundMain = 0;
        const queries = Array.from({ length: 10 }, (_, i) => mainQuery(loaded.space, i * 2));
        for (const query of queries) {
          const apart = await loaded.products.searchByVector(query, { limit: 10, categories: ["apart"] });
          expect(apart.map((hit) => hit.id)).toEqual(bruteForce(loaded, query, 10, ["apart"]));
          const main = await loaded.products.searchByVector(query, { limit: 10, categories: ["main"] });
          expect(main).toHaveLength(10);
          expect(main.every((hit) => loaded.categories.get(hit.id) === "main")).toBe(true);
          const truth = bruteForce(loaded, query, 10, ["main"]);
          foundMain += main.filter((hit) => truth.includes(hit.id)).length;
          // Hybrid candidates take the same plans.
          const hybrid = await loaded.products.hybridCandidates(
            query,
            { texts: ["producto"], expansions: [] },
            {
              candidates: 40,
              categories: ["apart"],
            },
          );
          expect(hybrid.every((hit) => loaded.categories.get(hit.id) === "apart")).toBe(true);
          expect(hybrid.map((hit) => hit.id)).toEqual(expect.arrayContaining(bruteForce(loaded, query, 10, ["apart"])));
        }
        expect(foundMain / (queries.length * 10)).toBeGreaterThanOrEqual(0.95);
        expect(await planOf(loaded.db, queries[0] as Vector, ["main"])).toContain(INDEX_NAME);
        // A browsing search asks the index for many candidates (1,000 a side, 4,000 for hybrid's
        // dense side): more than the ef_search pgvector takes (1,000), and still answered.
        const many = await loaded.products.hybridCandidates(
          queries[0] as Vector,
          { texts: ["producto"], expansions: [] },
          { candidates: 4000, categories: ["main"] },
        );
        expect(many.length).toBeGreaterThan(1000);
        expect(many.every((hit) => loaded.categories.get(hit.id) === "main")).toBe(true);
      } finally {
        await resetScanLimits(loaded.db);
        await database.cleanup();
      }
    }, 120_000);

    for (const dimension of [DIMENSION, LONG_DIMENSION]) {
      test(`a query far from a large filter's products (none of them in its neighbourhood) is answered by an exact scan of them, up to filterFarExactMaxRows; past it, still from the filter (${dimension} dimensions)`, async () => {
        // `main` (2,800 products) and `apart` (1,200) are both past filterExactMaxRows: through the
        // index. 133 products a cluster: a query's nearest few dozen are all of its own cluster.
        const loaded = await load(database, engine, {
          dimension,
          filterExactMaxRows: 500,
          products: 4000,
        });
        try {
          await loaded.index.build();
          // Scaled down as above: an iterative scan gives up after 150 rows.
          await loaded.db.query("SELECT set_config('hnsw.max_scan_tuples', '150', false)");
          // Queries near the clusters of `apart`, filtered to `main`, and the other way round.
          const cases = Array.from({ length: 8 }, (_, i) =>
            i % 2 === 0
              ? { query: loaded.space.near(i, 0.8), categories: ["main"] }
              : { query: mainQuery(loaded.space, i), categories: ["apart"] },
          );
          for (const { query, categories } of cases) {
            const hits = await loaded.products.searchByVector(query, { limit: 10, categories });
            expect(hits.map((hit) => hit.id)).toEqual(bruteForce(loaded, query, 10, categories));
            const hybrid = await loaded.products.hybridCandidates(
              query,
              { texts: ["producto"], expansions: [] },
              { candidates: 40, categories },
            );
            expect(hybrid.map((hit) => hit.id)).toEqual(
              expect.arrayContaining(bruteForce(loaded, query, 40, categories)),
            );
          }
          // With filterFarExactMaxRows below the filter's size, the index scan filtered as it goes:
          // the limit is still filled from the filter.
          const { products } = await indexAndProducts(loaded.db, engine, {
            dimension,
            filterExactMaxRows: 500,
            filterFarExactMaxRows: 1000,
          });
          for (const { query, categories } of cases) {
            const hits = await products.searchByVector(query, { limit: 10, categories });
            expect(hits).toHaveLength(10);
            expect(hits.every((hit) => categories.includes(loaded.categories.get(hit.id) ?? ""))).toBe(true);
          }
        } finally {
          await resetScanLimits(loaded.db);
          await database.cleanup();
        }
      }, 120_000);
    }

    test("a filter independent of where products lie, past filterExactMaxRows and too rare for the neighbourhood to hold the candidates, goes through the index scan filtered as it goes", async () => {
      const loaded = await load(database, engine, { filterExactMaxRows: 100, withSize: true });
      try {
        await loaded.index.build();
        // `size` below 10: 200 products, one in ten of every cluster.
        const tenth: AttributeCondition[] = [{ key: "size", op: "range", lt: 10 }];
        let found = 0;
        const queries = Array.from({ length: 10 }, (_, i) => mainQuery(loaded.space, i * 2));
        for (const query of queries) {
          const hits = await loaded.products.searchByVector(query, { limit: 10, attributes: tenth });
          expect(hits).toHaveLength(10);
          expect(hits.every((hit) => (loaded.attributes.get(hit.id)?.size ?? 100) < 10)).toBe(true);
          const truth = bruteForce(loaded, query, 10, undefined, tenth);
          found += hits.filter((hit) => truth.includes(hit.id)).length;
        }
        expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.95);
      } finally {
        await database.cleanup();
      }
    }, 120_000);

    test("an attribute filter is planned by the planner's estimate: few matches are found through the attribute index under row-level security and ranked exactly, many through the vector index", async () => {
      const loaded = await load(database, engine, { filterExactMaxRows: 1000 });
      try {
        // The build runs ANALYZE: the statistics the estimates come from. A GIN index's own (how
        // many entries it holds, what a search through it reads) come from VACUUM: autovacuum's on
        // a server, the service's own on PGlite (vacuumWhereChanged), after a load.
        await loaded.index.build();
        if (engine === "pglite") await vacuumWhereChanged(loaded.db);
        const zone = (value: string): AttributeCondition[] => [{ key: "zone", op: "anyOf", values: [value] }];
        const rare: AttributeCondition[] = [{ key: "rare", op: "anyOf", values: [true] }];
        const queries = Array.from({ length: 10 }, (_, i) => mainQuery(loaded.space, i * 2));
        // 900 and 30 products: scanned exactly, so exactly the brute-force top 10, found through
        // the GIN index on attributes (as the catalogue's role: under the policy, `@>` alone
        // never used it: a scan of the whole partition).
        for (const conditions of [zone("apart"), rare]) {
          for (const query of queries) {
            const hits = await loaded.products.searchByVector(query, { limit: 10, attributes: conditions });
            expect(hits.map((hit) => hit.id)).toEqual(bruteForce(loaded, query, 10, undefined, conditions));
            for (const hit of hits) {
              expect(hit.score).toBeCloseTo(cosineSimilarity(query, loaded.vectors.get(hit.id) as Vector), 5);
            }
          }
          const plan = await loaded.planOfLastSearch();
          expect(plan).toContain(`${TABLE}_attributes_idx`);
          expect(plan).not.toContain(`Seq Scan on ${TABLE}`);
        }
        // With a category too: both conditions hold.
        const both = await loaded.products.searchByVector(queries[0] as Vector, {
          limit: 10,
          attributes: rare,
          categories: ["apart"],
        });
        expect(both.map((hit) => hit.id)).toEqual(bruteForce(loaded, queries[0] as Vector, 10, ["apart"], rare));
        // 2,100 products: through the vector index (as in the category test above, scaled down).
        await loaded.db.query("SELECT set_config('hnsw.max_scan_tuples', '150', false)");
        await withoutPlainScans(loaded.db);
        let found = 0;
        for (const query of queries) {
          const hits = await loaded.products.searchByVector(query, { limit: 10, attributes: zone("main") });
          expect(hits).toHaveLength(10);
          expect(hits.every((hit) => loaded.attributes.get(hit.id)?.zone === "main")).toBe(true);
          const truth = bruteForce(loaded, query, 10, undefined, zone("main"));
          found += hits.filter((hit) => truth.includes(hit.id)).length;
        }
        expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.95);
        expect(await loaded.planOfLastSearch()).toContain(INDEX_NAME);
      } finally {
        await resetScanLimits(loaded.db);
        await database.cleanup();
      }
    }, 120_000);

    test("a range on a number with no index of its own is planned by a sample of the rows: a small one is scanned exactly", async () => {
      // 500: PostgreSQL's own guess for such a range, a third of the 2,000 rows, is past it.
      const loaded = await load(database, engine, { filterExactMaxRows: 500, withSize: true });
      try {
        await loaded.index.build();
        // The planner would rather sort 2,000 short rows than read the index: told not to, so that
        // the plan shows which way the search went.
        await withoutPlainScans(loaded.db);
        const small: AttributeCondition[] = [{ key: "size", op: "range", lt: 5 }]; // 100 products
        for (const query of Array.from({ length: 5 }, (_, i) => mainQuery(loaded.space, i * 3))) {
          const hits = await loaded.products.searchByVector(query, { limit: 10, attributes: small });
          expect(hits.map((hit) => hit.id)).toEqual(bruteForce(loaded, query, 10, undefined, small));
        }
        expect(await loaded.planOfLastSearch()).not.toContain(INDEX_NAME);
        // 1,400 products: through the vector index, as any large filter.
        const large: AttributeCondition[] = [{ key: "size", op: "range", gte: 30 }];
        const hits = await loaded.products.searchByVector(mainQuery(loaded.space, 1), { limit: 10, attributes: large });
        expect(hits).toHaveLength(10);
        expect(hits.every((hit) => (loaded.attributes.get(hit.id)?.size ?? 0) >= 30)).toBe(true);
        expect(await loaded.planOfLastSearch()).toContain(INDEX_NAME);
      } finally {
        await resetScanLimits(loaded.db);
        await database.cleanup();
      }
    }, 120_000);

    test("a number named in INDEXED_NUMBER_ATTRIBUTES gets an index once; its ranges are estimated by the planner and found through it", async () => {
      const loaded = await load(database, engine, {
        filterExactMaxRows: 500,
        withSize: true,
        numberIndexes: ["size", "price"],
      });
      try {
        await loaded.index.build(); // runs ANALYZE
        // Again, as the next start does: nothing more is made.
        await prepareDatabase(loaded.db, { model: "test", dimension: DIMENSION }, { numberIndexes: ["size"] });
        const indexes = await loaded.db.query<{ name: string }>(
          "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'products' AND indexname LIKE 'products\\_attribute\\_%' ORDER BY 1",
        );
        expect(indexes.map((row) => row.name)).toEqual(["products_attribute_price", "products_attribute_size"]);
        // What a service takes from the database: the named numbers whose index it holds.
        expect(await indexedNumberAttributes(loaded.db, ["weight", "size"])).toEqual(["size"]);
        expect(await indexedNumberAttributes(loaded.db, [])).toEqual([]);
        await loaded.db.query("SELECT set_config('enable_seqscan', 'off', false)");
        await loaded.db.query("SELECT set_config('jit', 'off', false)"); // as withoutPlainScans says
        const small: AttributeCondition[] = [{ key: "size", op: "range", lt: 5 }];
        for (const query of Array.from({ length: 3 }, (_, i) => mainQuery(loaded.space, i * 3))) {
          const hits = await loaded.products.searchByVector(query, { limit: 10, attributes: small });
          expect(hits.map((hit) => hit.id)).toEqual(bruteForce(loaded, query, 10, undefined, small));
        }
        expect(await loaded.planOfLastSearch()).toMatch(/Index Cond: \(CASE WHEN .*'size'/);
        expect(loaded.sent().some(({ text }) => text.includes("TABLESAMPLE"))).toBe(false);
      } finally {
        await resetScanLimits(loaded.db);
        await database.cleanup();
      }
    }, 120_000);

    for (const dimension of [DIMENSION, LONG_DIMENSION]) {
      test(`a browsing search's window of 1,000 from the index: ranked by the scanned column, its first ten the exact search's, every score within 1e-4 of the exact cosine (${dimension} dimensions)`, async () => {
        const loaded = await load(database, engine, { dimension, filterExactMaxRows: 1000 });
        try {
          await loaded.index.build();
          const apart: AttributeCondition[] = [{ key: "zone", op: "anyOf", values: ["apart"] }];
          let found = 0;
          const queries = Array.from({ length: 5 }, (_, i) => loaded.space.near(i * 7, 0.8));
          for (const query of queries) {
            const window = await loaded.products.searchByVector(query, { limit: 1000, window: true });
            expect(window).toHaveLength(1000);
            expect(new Set(window.map((hit) => hit.id)).size).toBe(1000);
            for (const hit of window) {
              expect(Math.abs(hit.score - cosineSimilarity(query, loaded.vectors.get(hit.id) as Vector))).toBeLessThan(
                1e-4,
              );
            }
            const scores = window.map((hit) => hit.score);
            expect(scores).toEqual([...scores].sort((a, b) => b - a));
            const exact = await loaded.products.searchByVector(query, { limit: 10 });
            expect(window.slice(0, 10).map((hit) => hit.id)).toEqual(exact.map((hit) => hit.id));
            const truth = new Set(bruteForce(loaded, query, 1000));
            found += window.filter((hit) => truth.has(hit.id)).length;
            // A hybrid browsing search's candidates: the window's, scored alike, with the lexical side's.
            const hybrid = await loaded.products.hybridCandidates(
              query,
              { texts: ["producto"], expansions: [] },
              { candidates: 1000, window: true },
            );
            expect(hybrid.map((hit) => hit.id)).toEqual(expect.arrayContaining(window.map((hit) => hit.id)));
            for (const hit of hybrid) {
              expect(Math.abs(hit.score - cosineSimilarity(query, loaded.vectors.get(hit.id) as Vector))).toBeLessThan(
                1e-4,
              );
            }
            // A filter of 900 products: scanned exactly, every one of them.
            const filtered = await loaded.products.searchByVector(query, {
              limit: 1000,
              window: true,
              attributes: apart,
            });
            expect(filtered.map((hit) => hit.id).sort((a, b) => a - b)).toEqual(
              bruteForce(loaded, query, 1000, undefined, apart).sort((a, b) => a - b),
            );
          }
          if (Bun.env.SHOW_RECALL) console.log("window recall@1000", dimension, found / (queries.length * 1000));
          expect(found / (queries.length * 1000)).toBeGreaterThanOrEqual(0.9);
        } finally {
          await database.cleanup();
        }
      }, 120_000);
    }

    for (const [kind, name] of [
      ["ivf-bq", `${TABLE}_embedding_ivf_8`],
      ["hnsw-bq", `${TABLE}_embedding_bq`],
    ] as const) {
      test(`binary-quantized, ${kind} (from 512 dimensions): the index's candidates, re-ranked, keep the exact top results and exact scores`, async () => {
        const loaded = await load(database, engine, { dimension: LONG_DIMENSION, kind });
        try {
          expect(await loaded.index.status()).toMatchObject({ kind, present: false, outdated: false });
          expect(await loaded.index.build()).toBe(true);
          const status = await loaded.index.status();
          expect(status).toMatchObject({ kind, present: true, valid: true, outdated: false });
          expect(status.bytes).toBeGreaterThan(0);
          expect(await indexNames(loaded.db)).toEqual([name]);
          const queries = Array.from({ length: 20 }, (_, i) => loaded.space.near(i * 7, 0.8));
          expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);
          expect(await loaded.planOfLastSearch()).toContain(name);
          if (kind === "ivf-bq") {
            // VECTOR_IVF_PROBES=auto: the search reads probesFor(its lists) of the 8, the setting sent
            // for its own transaction before its statement (the session keeps pgvector's 1 probe).
            const sent = loaded.sent();
            const search = sent.findLastIndex(({ text }) => text.includes("<~>"));
            const probes = sent.findLastIndex(({ params }) => params.includes("ivfflat.probes"));
            expect(probes).toBeGreaterThan(-1);
            expect(probes).toBeLessThan(search);
            const [setting, statement] = [sent[probes] as Sent, sent[search] as Sent];
            expect(setting.transaction).toBeGreaterThan(0);
            expect(setting.transaction).toBe(statement.transaction);
            expect(setting.params[setting.params.indexOf("ivfflat.probes") + 1]).toBe(String(probesFor(8)));
          }
          // Filtered to a category too large to scan exactly: the index's iterative scan.
          const filtered = await loaded.products.searchByVector(mainQuery(loaded.space, 1), {
            limit: 10,
            categories: ["main"],
          });
          expect(filtered).toHaveLength(10);
          expect(filtered.every((hit) => loaded.categories.get(hit.id) === "main")).toBe(true);
          expect(await loaded.planOfLastSearch()).toContain(name);
        } finally {
          await database.cleanup();
        }
      }, 120_000);
    }

    for (const dimension of [384, 3072]) {
      test(`a product's row, in the default catalogue and in one made since, keeps its text, attributes and (at ${dimension} dimensions) ${dimension < LONG_DIMENSION ? "its vector: nothing is stored out of it" : "its half-precision copy: only the full vector is stored out of it"}`, async () => {
        const db = await database.migrated({ model: "test", dimension });
        // A catalogue made after the migrations, whose partition is made by createCataloguePartition.
        expect(await new PostgresCatalogueRepository(db).create("outlet")).toBe(true);
        const [outlet] = await db.query<{ id: number }>("SELECT id FROM catalogues WHERE name = 'outlet'");
        const random = seededRandom(5);
        // Text that does not compress (PostgreSQL would otherwise shrink it rather than move it).
        const words = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 1e9).toString(36)).join(" ");
        for (const [catalogue, table] of [
          ["default", TABLE],
          ["outlet", cataloguePartition(Number(outlet?.id))],
        ] as const) {
          const written = await new PostgresProducts(db, dimension).in(catalogue).writeMany(
            Array.from({ length: 20 }, (_, i) => ({
              kind: "insert" as const,
              row: {
                product: {
                  name: `Cafetera ${words(4)}`,
                  description: words(30),
                  category: "Cocina y menaje",
                  attributes: { brand: words(2), color: words(1), price: 59.9, in_stock: true },
                },
                embedding: Array.from({ length: dimension }, () => random() - 0.5),
                contentDigest: `digest-${i}`.padEnd(64, "0"),
              },
            })),
          );
          expect(written.every((outcome) => "written" in outcome)).toBe(true);
          // Past 512 dimensions, one value a product: the full vector.
          expect(await outOfRowValues(db, table)).toEqual(
            dimension < LONG_DIMENSION ? [] : Array(20).fill(4 + 4 * dimension),
          );
        }
        await database.cleanup();
      });
    }

    buildTest(
      "a database from before the stored bits (migration 20): its binary-quantized indexes are made again on them, under their names, with the memory their builds need, and search keeps finding the exact top results through them",
      async () => {
        const loaded = await load(database, engine, { dimension: LONG_DIMENSION, products: 1000 });
        const name = `${TABLE}_embedding_ivf_1`;
        try {
          // The schema and index as version 19 left them: no bits column, the index on the expression.
          await loaded.db.query("ALTER TABLE products DROP COLUMN embedding_bits");
          await loaded.db.query(
            `CREATE INDEX ${name} ON ${TABLE} USING ivfflat ((binary_quantize(embedding_half)::bit(${LONG_DIMENSION})) bit_hamming_ops) WITH (lists = 1)`,
          );
          // One whose k-means needs more than the 1 MB the migration's session starts with.
          const large = `${TABLE}_embedding_ivf_300`;
          await loaded.db.query(
            `CREATE INDEX ${large} ON ${TABLE} USING ivfflat ((binary_quantize(embedding_half)::bit(${LONG_DIMENSION})) bit_hamming_ops) WITH (lists = 300)`,
          );
          await loaded.db.query("DELETE FROM schema_migrations WHERE version = 20");

          const littleMemory: SqlClient = {
            ...loaded.db,
            transaction: (fn) =>
              loaded.db.transaction(async (tx) => {
                await tx.query("SET LOCAL maintenance_work_mem = '1MB'");
                return fn(tx);
              }),
          };
          await prepareDatabase(littleMemory, { model: "test", dimension: LONG_DIMENSION });

          const definitions = await loaded.db.query<{ definition: string }>(
            "SELECT pg_get_indexdef(to_regclass(name)) AS definition FROM unnest($1::text[]) AS name",
            [[name, large]],
          );
          expect(definitions.map((row) => row.definition)).toEqual([
            expect.stringContaining("USING ivfflat (embedding_bits bit_hamming_ops) WITH (lists='1')"),
            expect.stringContaining("USING ivfflat (embedding_bits bit_hamming_ops) WITH (lists='300')"),
          ]);
          await loaded.db.query(`DROP INDEX ${large}`);
          const [bits] = await loaded.db.query<{ rows: number | string; same: number | string }>(
            `SELECT count(*) AS rows, count(*) FILTER (WHERE embedding_bits = binary_quantize(embedding_half)::bit(${LONG_DIMENSION})) AS same FROM products`,
          );
          expect(Number(bits?.same)).toBe(1000);
          expect(Number(bits?.rows)).toBe(1000);
          expect(await loaded.index.status()).toMatchObject({ kind: "ivf-bq", present: true, valid: true });
          await withoutPlainScans(loaded.db);
          const queries = Array.from({ length: 10 }, (_, i) => loaded.space.near(i * 7, 0.8));
          expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);
          expect(await loaded.planOfLastSearch()).toContain(name);
        } finally {
          await resetScanLimits(loaded.db);
          await database.cleanup();
        }
      },
      120_000,
    );

    buildTest(
      "switching the index kind builds the new one beside the old and drops the old: search answers throughout",
      async () => {
        // 1,000 products: an HNSW build on halfvec is slow in PGlite (7 s of CPU at 3,000 × 512 here).
        const loaded = await load(database, engine, { dimension: LONG_DIMENSION, kind: "halfvec", products: 1000 });
        const { db } = loaded;
        try {
          expect(await loaded.index.build()).toBe(true);
          expect(await indexNames(db)).toEqual([`${TABLE}_embedding_hnsw`]);
          const queries = Array.from({ length: 20 }, (_, i) => loaded.space.near(i * 7, 0.8));
          expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);

          // The setting now says ivf-bq: the service's next look (or `index build`) switches.
          const switched = await indexAndProducts(db, engine, { dimension: LONG_DIMENSION, kind: "ivf-bq" });
          expect(await switched.index.status()).toMatchObject({ kind: "ivf-bq", present: false, outdated: true });
          const searcher = { ...loaded, products: switched.products };
          const building = switched.index.build();
          let answeredDuringBuild = 0;
          // A server builds concurrently: searches go on meanwhile (on PGlite they wait their turn).
          for (let done = false; !done; ) {
            const race = await Promise.race([building.then(() => "built"), Bun.sleep(1).then(() => "running")]);
            done = race === "built";
            const hits = await switched.products.searchByVector(queries[answeredDuringBuild % 20] as Vector, {
              limit: 10,
            });
            expect(hits).toHaveLength(10);
            if (!done) answeredDuringBuild++;
          }
          expect(await building).toBe(true);
          if (engine === "postgres") expect(answeredDuringBuild).toBeGreaterThan(0);
          expect(await indexNames(db)).toEqual([`${TABLE}_embedding_ivf_4`]);
          expect(await switched.index.status()).toMatchObject({
            kind: "ivf-bq",
            present: true,
            valid: true,
            outdated: false,
          });
          expect(await recallAt10(searcher, queries)).toBeGreaterThanOrEqual(0.95);
          expect(await switched.planOfLastSearch()).toContain(`${TABLE}_embedding_ivf_4`);
        } finally {
          await database.cleanup();
        }
      },
      180_000,
    );

    test("a live binary-quantized index takes bulk writes, and the new products are found through it", async () => {
      const loaded = await load(database, engine, { dimension: LONG_DIMENSION });
      try {
        await loaded.index.build();
        // 300 more products of the same clusters, written by the bulk path while the index is there.
        const added = Array.from({ length: 300 }, (_, i) => loaded.space.near(i, 0.6));
        const outcomes = await loaded.products.writeMany(
          added.map((vector, i) => ({
            kind: "insert" as const,
            row: {
              product: { name: `nuevo ${i}`, description: "", category: "nuevo" },
              embedding: vector,
              contentDigest: `n${i}`,
            },
          })),
        );
        const ids = outcomes.map((outcome) => ("written" in outcome ? outcome.written.id : Number.NaN));
        ids.forEach((id, i) => {
          loaded.vectors.set(id, added[i] as Vector);
          loaded.categories.set(id, "nuevo");
        });
        for (const i of [0, 37, 150, 299]) {
          const [first] = await loaded.products.searchByVector(added[i] as Vector, { limit: 10 });
          expect(first?.id).toBe(ids[i]);
        }
        expect(await loaded.planOfLastSearch()).toContain(`${TABLE}_embedding_ivf_8`);
        const queries = Array.from({ length: 20 }, (_, i) => loaded.space.near(i * 7, 0.8));
        expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);
        expect((await loaded.index.status()).valid).toBe(true);
      } finally {
        await database.cleanup();
      }
    }, 120_000);

    buildTest(
      "an IVFFlat index built before stop 30 (a list per 1,000 products) is outdated; its rebuild has a list per 250 and replaces it",
      async () => {
        const loaded = await load(database, engine, { dimension: LONG_DIMENSION });
        const before = `${TABLE}_embedding_ivf_2`;
        try {
          await loaded.db.query(
            `CREATE INDEX ${before} ON ${TABLE} USING ivfflat (embedding_bits bit_hamming_ops) WITH (lists = 2)`,
          );
          await loaded.db.query("ANALYZE products");
          expect(await loaded.index.status()).toMatchObject({ present: true, valid: true, outdated: true });
          expect(await loaded.index.build()).toBe(true);
          expect(await indexNames(loaded.db)).toEqual([`${TABLE}_embedding_ivf_8`]);
          expect(await loaded.index.status()).toMatchObject({ present: true, valid: true, outdated: false });
        } finally {
          await database.cleanup();
        }
      },
      120_000,
    );

    buildTest(
      "an IVFFlat index whose catalogue has doubled is outdated; its rebuild has lists for the new size and replaces it",
      async () => {
        const loaded = await load(database, engine, { dimension: LONG_DIMENSION });
        try {
          await loaded.index.build();
          expect(await indexNames(loaded.db)).toEqual([`${TABLE}_embedding_ivf_8`]);
          const added = Array.from({ length: 3000 }, (_, i) => loaded.space.near(i, 0.6));
          const outcomes = await loaded.products.writeMany(
            added.map((vector, i) => ({
              kind: "insert" as const,
              row: {
                product: { name: `más ${i}`, description: "", category: "main" },
                embedding: vector,
                contentDigest: "m",
              },
            })),
          );
          outcomes.forEach((outcome, i) => {
            if (!("written" in outcome)) throw new Error("not written");
            loaded.vectors.set(outcome.written.id, added[i] as Vector);
            loaded.categories.set(outcome.written.id, "main");
          });
          await loaded.db.query("ANALYZE products");
          expect(await loaded.index.status()).toMatchObject({ present: true, valid: true, outdated: true });
          expect(await loaded.index.build()).toBe(true);
          expect(await indexNames(loaded.db)).toEqual([`${TABLE}_embedding_ivf_20`]);
          expect(await loaded.index.status()).toMatchObject({ present: true, valid: true, outdated: false });
          const queries = Array.from({ length: 20 }, (_, i) => loaded.space.near(i * 7, 0.8));
          expect(await recallAt10(loaded, queries)).toBeGreaterThanOrEqual(0.95);
          expect(await loaded.planOfLastSearch()).toContain(`${TABLE}_embedding_ivf_20`);
        } finally {
          await database.cleanup();
        }
      },
      120_000,
    );

    if (engine === "postgres") {
      buildTest(
        "a build under way is visible in the status, phase and fraction, from another connection",
        async () => {
          const loaded = await load(database, engine, { dimension: LONG_DIMENSION });
          const watcher = new SqlVectorIndex(await database.another(), LONG_DIMENSION, { server: true, table: TABLE });
          const writer = await database.another();
          try {
            // A transaction that wrote to products holds the concurrent build at its first phase.
            let building: Promise<boolean> | undefined;
            await writer.transaction(async (tx) => {
              await tx.query("UPDATE products SET version = version WHERE id = (SELECT min(id) FROM products)");
              building = loaded.index.build();
              let progress = (await watcher.status()).progress;
              for (let tries = 0; !progress?.phase.includes("waiting for writers") && tries < 200; tries++) {
                await Bun.sleep(25);
                progress = (await watcher.status()).progress;
              }
              expect(progress?.phase).toContain("waiting for writers");
              expect(progress?.fraction).toBe(0);
            });
            expect(await building).toBe(true);
            expect((await watcher.status()).progress).toBeUndefined();
          } finally {
            await database.cleanup();
          }
        },
        120_000,
      );

      buildTest(
        "a build whose graph outgrows its memory says so in the log",
        async () => {
          // 1,000 products of 512 dimensions: a graph of over 1 MB.
          const loaded = await load(database, engine, {
            dimension: LONG_DIMENSION,
            kind: "halfvec",
            products: 1000,
          });
          const events: Record<string, unknown>[] = [];
          const url = await urlOfSchema(loaded.db);
          const index = new SqlVectorIndex(loaded.db, LONG_DIMENSION, {
            server: true,
            table: TABLE,
            kind: "halfvec",
            buildMemory: "1MB",
            openBuilder: (onNotice) => connectPostgres(url, { maxConnections: 1, onNotice }),
            log: (event) => events.push(event),
          });
          expect(await index.build()).toBe(true);
          expect(events.map((event) => event.event)).toContain("vector_index_build_spilled");
        },
        120_000,
      );
    }

    buildTest(
      "the index policy on the real database builds only from minRows and after a look with no writes; drop removes it",
      async () => {
        const loaded = await load(database, engine);
        const policy = (mode: "auto" | "off", minRows: number) =>
          new MaintainVectorIndex({ index: loaded.index, policy: { mode, minRows } });
        try {
          expect(await policy("auto", PRODUCTS + 1).afterLoad()).toBe("too-small");
          expect(await policy("off", 1).afterLoad()).toBe("not-automatic");
          const maintain = policy("auto", PRODUCTS);
          // A backend reports its writes to the statistics up to a second after it is idle again (and
          // through pgbouncer the load's backend is not this one): wait until every row of the load is
          // counted, or a later look would see writes "since" the first one.
          for (let waited = 0; (await loaded.index.writeCount()) < PRODUCTS && waited < 30_000; waited += 100) {
            await Bun.sleep(100);
          }
          // The first look only records the writes so far; the next one with none since builds.
          expect(await maintain.check()).toBe("writes-under-way");
          expect(await maintain.check()).toBe("built");
          expect((await loaded.index.status()).valid).toBe(true);
          expect(await maintain.check()).toBe("ready");
          expect(await loaded.index.drop()).toBe(true);
          expect((await loaded.index.status()).present).toBe(false);
          expect(await loaded.index.drop()).toBe(false);
        } finally {
          await database.cleanup();
        }
      },
      120_000,
    );
  });
});
