/**
 * The two walls between catalogues on the real databases (PGlite, PostgreSQL, and through
 * pgbouncer's transaction pooling): every statement names its catalogue, and row-level security
 * confines the role those statements run as to the catalogue its transaction names, so a statement
 * that forgot its condition still finds nothing of another. Then migration 16 on a database with
 * products, and each catalogue's own vector index and recall.
 */
import { describe, expect, test } from "bun:test";
import { PostgresCatalogueRepository } from "../../src/adapters/postgres/catalogue-repository.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import {
  applyMigrations,
  CATALOGUE_ROLE,
  CATALOGUE_SETTING,
  CATALOGUE_VOCABULARY_VIEW,
  CATALOGUE_WORDS_VIEW,
  prepareDatabase,
} from "../../src/adapters/postgres/schema.ts";
import { PostgresSearchAnalytics } from "../../src/adapters/postgres/search-analytics-store.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { PostgresSynonymStore } from "../../src/adapters/postgres/synonym-store.ts";
import {
  IndexesInUse,
  indexTarget,
  SqlVectorIndexes,
  vectorSessionSettings,
} from "../../src/adapters/postgres/vector-index.ts";
import type { Attributes } from "../../src/domain/attributes.ts";
import { MaintainCatalogueIndexes } from "../../src/domain/maintain-vector-index.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { BulkWrite, ProductRepository } from "../../src/ports/product-repository.ts";
import { cosineSimilarity } from "../fakes/memory-product-repository.ts";
import { openNewPglite } from "../support/new-database.ts";
import { seededRandom } from "../support/seeded-random.ts";
import { forEachDatabase } from "../support/test-databases.ts";

const SPACE = { model: "test-model", dimension: 4 };
const shoe = { name: "Zapatilla de running", description: "Ligera", category: "calzado" };
const lamp = { name: "Lámpara", description: "LED regulable", category: "hogar" };

async function add(
  products: ProductRepository,
  product: typeof shoe & { sku?: string; attributes?: Attributes },
  embedding: Vector,
) {
  const result = await products.add({ product, embedding, contentDigest: "d" });
  if (!("created" in result)) throw new Error(`not created: ${JSON.stringify(result)}`);
  return result.created;
}

/** Two catalogues, `tienda` and `outlet`, with a product each, in a database migrated for SPACE. */
async function twoCatalogues(client: SqlClient) {
  const catalogues = new PostgresCatalogueRepository(client);
  await catalogues.create("tienda");
  await catalogues.create("outlet");
  const products = new PostgresProducts(client, SPACE.dimension);
  const mine = await add(products.in("tienda"), { ...shoe, sku: "Z-1" }, [1, 0, 0, 0]);
  const theirs = await add(products.in("outlet"), { ...lamp, sku: "L-1" }, [0, 1, 0, 0]);
  return { products, catalogues, mine, theirs };
}

/**
 * Runs `statements` as the product statements run (product-repository.ts's inCatalogue): in a
 * transaction, as CATALOGUE_ROLE, with CATALOGUE_SETTING naming `catalogue` (none when null).
 */
function asCatalogue<T>(client: SqlClient, catalogue: string | null, statements: (tx: SqlClient) => Promise<T>) {
  return client.transaction(async (tx) => {
    await tx.query(`SELECT set_config('role', '${CATALOGUE_ROLE}', true)`);
    if (catalogue !== null) await tx.query(`SELECT set_config('${CATALOGUE_SETTING}', $1, true)`, [catalogue]);
    return statements(tx);
  });
}

const count = async (tx: SqlClient, sql: string, params: unknown[] = []) =>
  Number((await tx.query<{ n: number | string }>(sql, params))[0]?.n);

forEachDatabase((db) => {
  describe("row-level security, the second wall", () => {
    test("with the wrong catalogue's setting, statements that leave out their condition find 0 rows of the other", async () => {
      const client = await db.migrated(SPACE);
      const { mine, theirs } = await twoCatalogues(client);
      await asCatalogue(client, "outlet", async (tx) => {
        // No `catalogue = ...` anywhere: only the policy stands between these and the tienda's product.
        expect(await count(tx, "SELECT count(*) AS n FROM products")).toBe(1);
        expect(await count(tx, "SELECT count(*) AS n FROM products WHERE id = $1", [mine.id])).toBe(0);
        expect(await count(tx, "SELECT count(*) AS n FROM products WHERE sku = 'Z-1'")).toBe(0);
        expect(await count(tx, "SELECT count(*) AS n FROM products WHERE catalogue = 'tienda'")).toBe(0);
        expect(
          (await tx.query("UPDATE products SET name = 'robado' WHERE id = $1 RETURNING id", [mine.id])).length,
        ).toBe(0);
        expect((await tx.query("DELETE FROM products WHERE id = $1 RETURNING id", [mine.id])).length).toBe(0);
        expect(await count(tx, `SELECT count(*) AS n FROM ${CATALOGUE_WORDS_VIEW} WHERE id = $1`, [mine.id])).toBe(0);
        expect(await count(tx, "SELECT count(*) AS n FROM products WHERE id = $1", [theirs.id])).toBe(1);
      });
      // Nor can it write a row into another catalogue.
      const written = await asCatalogue(client, "outlet", (tx) =>
        tx.query(
          `INSERT INTO products (catalogue, name, description, category, content_digest, embedding)
           VALUES ('tienda', 'intruso', '', 'x', 'd', '[1,1,1,1]')`,
        ),
      ).catch((error: Error) => error);
      expect(String((written as Error).message)).toMatch(/row-level security/);
      // The tienda's product is as it was.
      expect(await new PostgresProducts(client, SPACE.dimension).in("tienda").get(mine.id)).toMatchObject({
        name: shoe.name,
        version: 1,
      });
    });

    test("a filtered search (through either plan, or as a browsing window) and a filtered list whose statements forgot their catalogue find nothing of another catalogue than their transaction's", async () => {
      const client = await db.migrated(SPACE);
      const catalogues = new PostgresCatalogueRepository(client);
      await catalogues.create("tienda");
      await catalogues.create("outlet");
      const acme = { brand: "Acme" };
      const mine = await add(
        new PostgresProducts(client, SPACE.dimension).in("tienda"),
        { ...shoe, attributes: acme },
        [1, 0, 0, 0],
      );
      const theirs = await add(
        new PostgresProducts(client, SPACE.dimension).in("outlet"),
        { ...lamp, attributes: acme },
        [0, 1, 0, 0],
      );
      const filter = { limit: 10, attributes: [{ key: "brand", op: "anyOf" as const, values: ["Acme"] }] };
      // The exact plan (the filter's ids read through CATALOGUE_WORDS_VIEW, its products by id) and the
      // index's plan (the filter applied to the products the scan yields).
      for (const filterExactMaxRows of [30_000, 0]) {
        const search = async (entered: string) => {
          const products = new PostgresProducts(forgetfulClient(client, { enters: entered }), SPACE.dimension, {
            filterExactMaxRows,
            filterFarExactMaxRows: 300_000,
            efSearch: 100,
            probes: "auto",
            rerankDepth: 40,
          });
          const tienda = products.in("tienda");
          const listed = await tienda.list({ limit: 10, order: "id", attributes: filter.attributes });
          return {
            found: (await tienda.searchByVector([1, 0.5, 0, 0], filter)).map((hit) => hit.id),
            browsed: (await tienda.searchByVector([1, 0.5, 0, 0], { ...filter, window: true })).map((hit) => hit.id),
            listed: listed.items.map((product) => product.id),
            total: listed.total,
          };
        };
        // Entering its own catalogue, the tienda's search finds its product without any catalogue condition...
        const own = { found: [mine.id], browsed: [mine.id], listed: [mine.id], total: 1 };
        expect({ filterExactMaxRows, ...(await search("tienda")) }).toEqual({ filterExactMaxRows, ...own });
        // ...and entering the outlet, only what the outlet's setting lets through: never the tienda's.
        const other = { found: [theirs.id], browsed: [theirs.id], listed: [theirs.id], total: 1 };
        expect({ filterExactMaxRows, ...(await search("outlet")) }).toEqual({ filterExactMaxRows, ...other });
      }
    });

    test("the index's plans of a large filter (the query's neighbourhood, the scan filtered as it goes, the exact scan of a filter far from the query) find nothing of another catalogue than their transaction's when their statements forgot their catalogue", async () => {
      const client = await db.migrated(SPACE);
      for (const [name, value] of Object.entries(vectorSessionSettings({ efSearch: 100, probes: "auto" }))) {
        await client.query("SELECT set_config($1, $2, false)", [name, value]);
      }
      const catalogues = new PostgresCatalogueRepository(client);
      const store = new PostgresProducts(client, SPACE.dimension);
      const random = seededRandom(5);
      const jitter = () => 0.1 * (random() - 0.5);
      const acme = [{ key: "brand", op: "anyOf" as const, values: ["Acme"] }];
      // In each catalogue, 60 Acme products near [1, 0, 0, 0] and 100 others near [0, 0, 1, 0].
      const acmeOf = new Map<string, Set<number>>();
      for (const name of ["tienda", "outlet"]) {
        await catalogues.create(name);
        const writes: BulkWrite[] = Array.from({ length: 160 }, (_, i) => ({
          kind: "insert",
          row: {
            product: { ...shoe, name: `${name} ${i}`, attributes: i < 60 ? { brand: "Acme" } : { brand: "Otra" } },
            embedding: i < 60 ? [1, jitter(), jitter(), jitter()] : [jitter(), jitter(), 1, jitter()],
            contentDigest: "d",
          },
        }));
        const outcomes = await store.in(name).writeMany(writes);
        acmeOf.set(
          name,
          new Set(outcomes.slice(0, 60).map((outcome) => ("written" in outcome ? outcome.written.id : 0))),
        );
      }
      const indexesInUse = new IndexesInUse(client, SPACE.dimension, indexTarget(SPACE.dimension), 0);
      const indexes = new SqlVectorIndexes(client, SPACE.dimension, { server: false, inUse: indexesInUse });
      for (const name of ["tienda", "outlet"]) expect(await (await indexes.of(name))?.build()).toBe(true);
      const plans = [
        // Near its filter: the neighbourhood holds its candidates.
        { query: [1, 0, 0, 0], filterFarExactMaxRows: 300_000 },
        // Far from it: the neighbourhood holds none; an exact scan of the filter...
        { query: [0, 0, 1, 0], filterFarExactMaxRows: 300_000 },
        // ...or, past filterFarExactMaxRows, the index scan filtered as it goes.
        { query: [0, 0, 1, 0], filterFarExactMaxRows: 0 },
      ];
      for (const { query, filterFarExactMaxRows } of plans) {
        for (const entered of ["tienda", "outlet"]) {
          const products = new PostgresProducts(
            forgetfulClient(client, { enters: entered }),
            SPACE.dimension,
            { filterExactMaxRows: 0, filterFarExactMaxRows, efSearch: 100, probes: "auto", rerankDepth: 40 },
            undefined,
            { indexesInUse },
          );
          const hits = await products.in("tienda").searchByVector(query, { limit: 10, attributes: acme });
          const ids = hits.map((hit) => hit.id);
          // Always ten of the entered catalogue's Acme products: never the tienda's from the outlet.
          expect({
            entered,
            query,
            filterFarExactMaxRows,
            ids: ids.length,
            foreign: ids.filter((id) => !acmeOf.get(entered)?.has(id)),
          }).toEqual({
            entered,
            query,
            filterFarExactMaxRows,
            ids: 10,
            foreign: [],
          });
        }
      }
    });

    test("the search vocabulary: the role reads only the setting's catalogue's words, and cannot read the table", async () => {
      const client = await db.migrated(SPACE);
      await twoCatalogues(client);
      // "zapatilla" is a word of the tienda's names, "lámpara" of the outlet's (each added by the trigger).
      const words = (catalogue: string | null) =>
        asCatalogue(client, catalogue, async (tx) =>
          (await tx.query<{ word: string }>(`SELECT word FROM ${CATALOGUE_VOCABULARY_VIEW} ORDER BY word`)).map(
            (row) => row.word,
          ),
        );
      expect(await words("tienda")).toEqual(["calzado", "running", "zapatilla"]);
      expect(await words("outlet")).toEqual(["hogar", "lámpara"]);
      expect(await words(null)).toEqual([]);
      const direct = await asCatalogue(client, "outlet", (tx) => tx.query("SELECT word FROM search_vocabulary")).catch(
        (error: Error) => error,
      );
      expect(String((direct as Error).message)).toMatch(/permission denied/);
      // As the session user: each word under its own catalogue.
      const all = await client.query<{ catalogue: string; word: string }>(
        "SELECT catalogue, word FROM search_vocabulary ORDER BY catalogue, word",
      );
      expect(all).toEqual([
        { catalogue: "outlet", word: "hogar" },
        { catalogue: "outlet", word: "lámpara" },
        { catalogue: "tienda", word: "calzado" },
        { catalogue: "tienda", word: "running" },
        { catalogue: "tienda", word: "zapatilla" },
      ]);
    });

    test("without a catalogue setting nothing is there; as the session user, not the role, everything is", async () => {
      const client = await db.migrated(SPACE);
      await twoCatalogues(client);
      expect(await asCatalogue(client, null, (tx) => count(tx, "SELECT count(*) AS n FROM products"))).toBe(0);
      expect(
        await asCatalogue(client, null, (tx) => count(tx, `SELECT count(*) AS n FROM ${CATALOGUE_WORDS_VIEW}`)),
      ).toBe(0);
      // The tests connect as a superuser, as the service often does: row-level security never
      // confines one, which is why the product statements run as CATALOGUE_ROLE.
      expect(await count(client, "SELECT count(*) AS n FROM products")).toBe(2);
    });

    test("a bulk write inside a job's transaction leaves it as it found it: role and setting back", async () => {
      const client = await db.migrated(SPACE);
      await twoCatalogues(client);
      const inJob = (tx: SqlClient) =>
        new PostgresProducts(tx, SPACE.dimension, undefined, undefined, { insideTransaction: true });
      const after = await client.transaction(async (tx) => {
        const writes: BulkWrite[] = [
          { kind: "insert", row: { product: lamp, embedding: [0, 0, 1, 0], contentDigest: "d" } },
        ];
        await inJob(tx).in("tienda").writeMany(writes);
        const [who] = await tx.query<{ role: string; session: string; setting: string | null }>(
          `SELECT current_user AS role, session_user AS session, current_setting('${CATALOGUE_SETTING}', true) AS setting`,
        );
        return who;
      });
      expect(after?.role).toBe(after?.session as string);
      expect(after?.setting ?? "").toBe("");
    });
  });

  describe("migration 16: an existing catalogue becomes the default one", () => {
    for (const dimension of [4, 768]) {
      test(`every product stays, in default, with its id and its embedding; ids go on after the old ones (${dimension} dimensions)`, async () => {
        const client = await db.fresh();
        const space = { model: "test-model", dimension };
        await applyMigrations(client, space, { through: 15 });
        const vector = (i: number) => `[${Array.from({ length: dimension }, (_, j) => ((i + j) % 7) + 1).join(",")}]`;
        for (let i = 1; i <= 5; i++) {
          await client.query(
            `INSERT INTO products (name, description, category, sku, content_digest, embedding)
             VALUES ($1, 'd', 'c', $2, 'x', $3::vector)`,
            [`producto ${i}`, `S-${i}`, vector(i)],
          );
        }
        // Ids 4 and 5 were given once: no product may get them again.
        await client.query("DELETE FROM products WHERE id > 3");
        await client.query("CREATE INDEX products_embedding_hnsw ON products USING hnsw (embedding vector_cosine_ops)");
        // The relevance tables of migrations 13 to 15, each with the default catalogue's rows.
        await client.query("INSERT INTO synonym_sets (position, terms) VALUES (0, ARRAY['producto', 'artículo'])");
        const searchId = "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e";
        await client.query(
          "INSERT INTO searches (search_id, query, mode, results, searched_at) VALUES ($1, 'producto', 'hybrid', 3, now())",
          [searchId],
        );
        await client.query(
          "INSERT INTO search_events (search_id, product_id, type, happened_at) VALUES ($1, 1, 'click', now())",
          [searchId],
        );
        const before = await client.query<{ id: number; embedding: string }>(
          "SELECT id, embedding::text AS embedding FROM products ORDER BY id",
        );

        await prepareDatabase(client, space);
        const after = await client.query<{ id: number; embedding: string; catalogue: string }>(
          "SELECT id, embedding::text AS embedding, catalogue FROM products ORDER BY id",
        );
        expect(after.map(({ id, embedding }) => ({ id: Number(id), embedding }))).toEqual(
          before.map(({ id, embedding }) => ({ id: Number(id), embedding })),
        );
        expect(new Set(after.map((row) => row.catalogue))).toEqual(new Set(["default"]));
        const products = new PostgresProducts(client, dimension).in("default");
        const next = await add(products, shoe, JSON.parse(vector(9)) as number[]);
        expect(next.id).toBe(6);
        expect(
          await products.add({
            product: { ...lamp, sku: "S-1" },
            embedding: JSON.parse(vector(2)),
            contentDigest: "d",
          }),
        ).toEqual({ skuTaken: "S-1" });
        const indexes = await client.query<{ name: string }>(
          "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%embedding_hnsw'",
        );
        expect(indexes.map((index) => index.name)).toEqual(["products_c1_embedding_hnsw"]);
        expect(
          (await new PostgresCatalogueRepository(client).list()).map(({ name, products }) => ({ name, products })),
        ).toEqual([{ name: "default", products: 4 }]);
        const hits = await products.searchByVector(JSON.parse(vector(2)) as number[], { limit: 1 });
        expect(hits[0]).toMatchObject({ id: 2, score: expect.closeTo(1, 5) });
        // The vocabulary, synonyms and analytics so far are the default catalogue's; new words join it.
        expect(await products.knowsAnyWord(["producto"])).toBe(true);
        expect(await products.knowsAnyWord(["zapatilla"])).toBe(true);
        expect(await new PostgresSynonymStore(client).get("default")).toEqual([["producto", "artículo"]]);
        const report = await new PostgresSearchAnalytics(client, { retentionDays: 7 }).report(
          "default",
          new Date(Date.now() - 86_400_000),
          5,
        );
        expect(report).toMatchObject({ searches: 1, clicks: 1 });
      }, 60_000);
    }
  });

  describe("each catalogue's vector index", () => {
    test("a large catalogue gets its index, a small one stays exact; both keep recall@10 ≥ 0.98, each within itself", async () => {
      const client = await db.migrated({ model: "test", dimension: 32 });
      for (const [name, value] of Object.entries(vectorSessionSettings({ efSearch: 100, probes: "auto" }))) {
        await client.query("SELECT set_config($1, $2, false)", [name, value]);
      }
      const catalogues = new PostgresCatalogueRepository(client);
      await catalogues.create("grande");
      await catalogues.create("pequeno");
      const store = new PostgresProducts(client, 32);
      const space = clusteredSpace(32, 40, 11);
      // The two catalogues draw from the same clusters: one index over both would mix them.
      const loaded = new Map<string, Map<number, Vector>>();
      for (const [name, size] of [
        ["grande", 2400],
        ["pequeno", 300],
      ] as const) {
        const vectors = Array.from({ length: size }, (_, i) => space.near(i, 0.6));
        const outcomes = await store.in(name).writeMany(
          vectors.map((embedding, i) => ({
            kind: "insert" as const,
            row: { product: { name: `${name} ${i}`, description: "", category: "c" }, embedding, contentDigest: "d" },
          })),
        );
        loaded.set(
          name,
          new Map(
            outcomes.map((outcome, i) => {
              if (!("written" in outcome)) throw new Error("not written");
              return [outcome.written.id, vectors[i] as Vector];
            }),
          ),
        );
      }
      const indexes = new SqlVectorIndexes(client, 32, { server: false });
      const maintain = new MaintainCatalogueIndexes({ indexes, policy: { mode: "auto", minRows: 1000 } });
      expect(await maintain.afterLoad("grande")).toBe("built");
      expect(await maintain.afterLoad("pequeno")).toBe("too-small");
      expect(await maintain.afterLoad("default")).toBe("too-small");
      expect((await (await indexes.of("grande"))?.status())?.present).toBe(true);
      expect((await (await indexes.of("pequeno"))?.status())?.present).toBe(false);

      for (const [name, vectors] of loaded) {
        let found = 0;
        const queries = Array.from({ length: 20 }, (_, i) => space.near(i * 3, 0.8));
        for (const query of queries) {
          const hits = await store.in(name).searchByVector(query, { limit: 10 });
          expect(hits.every((hit) => vectors.has(hit.id))).toBe(true);
          const truth = [...vectors]
            .map(([id, vector]) => ({ id, score: cosineSimilarity(query, vector) }))
            .sort((a, b) => b.score - a.score || a.id - b.id)
            .slice(0, 10)
            .map((hit) => hit.id);
          found += hits.filter((hit) => truth.includes(hit.id)).length;
        }
        expect({ name, recall: found / (queries.length * 10) }).toEqual({ name, recall: expect.any(Number) });
        expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.98);
      }
      // Removing the catalogue takes its products and its index with it.
      expect(await catalogues.remove("grande")).toBe(true);
      expect(await indexes.of("grande")).toBeUndefined();
      // This test's schema only: another file's test may hold an index of that name on the same server.
      expect(
        await count(
          client,
          "SELECT count(*) AS n FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%embedding_hnsw'",
        ),
      ).toBe(0);
    }, 120_000);
  });
});

describe("the first wall", () => {
  test("every statement the repository sends about products names its catalogue", async () => {
    const client = await openNewPglite();
    try {
      await prepareDatabase(client, SPACE);
      await new PostgresCatalogueRepository(client).create("tienda");
      const sent: string[] = [];
      const recording = recordingClient(client, sent);
      const products = new PostgresProducts(recording, SPACE.dimension).in("tienda");
      const added = await add(products, { ...shoe, sku: "Z-1" }, [1, 0, 0, 0]);
      await products.get(added.id);
      await products.list({ limit: 5, order: "id", categories: ["calzado"], after: 0 });
      const current = await products.get(added.id, { latest: true });
      await products.update(added.id, current?.version ?? 1, { fields: { ...shoe, name: "Otra" } });
      await products.update(999_999, 1, { fields: shoe });
      await products.categories();
      await products.productsAfter(0, 5, { withEmbeddings: true });
      await products.findBySkus(["Z-1"]);
      await products.writeMany([
        { kind: "insert", row: { product: lamp, embedding: [0, 1, 0, 0], contentDigest: "d" } },
        { kind: "update", id: 999_999, expectedVersion: 1, update: { fields: lamp } },
      ]);
      await products.searchByVector([1, 0, 0, 0], { limit: 5 });
      await products.searchByVector([1, 0, 0, 0], { limit: 5, categories: ["calzado"] });
      await products.hybridCandidates(
        [1, 0, 0, 0],
        { texts: ["zapatila"], expansions: ["bota"] },
        { candidates: 5, categories: ["calzado"] },
      );
      await products.knowsAnyWord(["zapatila", "otra"]);
      await products.versions([added.id]);
      await products.exactScores([1, 0, 0, 0], [added.id]);
      await products.remove(added.id);
      // Each read or change of products (or of their words, or of the search vocabulary) comes with
      // its own `catalogue = $n`; each insert names the catalogue of its rows.
      const reads = (sql: string) =>
        (sql.match(/\b(FROM|UPDATE)\s+(products|product_words)\b/gi)?.length ?? 0) +
        (sql.match(/\b(search_vocabulary|catalogue_vocabulary)\s+v\b/gi)?.length ?? 0);
      const named = (sql: string) => sql.match(/\bcatalogue = \$\d+/g)?.length ?? 0;
      const inserts = sent.filter((sql) => /\bINSERT INTO products\b/.test(sql));
      expect(inserts).toHaveLength(2);
      for (const sql of inserts) expect(sql).toMatch(/INSERT INTO products \(catalogue,/);
      const aboutProducts = sent.filter((sql) => reads(sql) > 0);
      expect(aboutProducts.length).toBeGreaterThan(15);
      for (const sql of aboutProducts) {
        expect({ sql, unnamed: reads(sql) - named(sql) > 0 }).toEqual({ sql, unnamed: false });
      }
    } finally {
      await client.close();
    }
  });
});

/**
 * `client` with the first wall taken down: every `catalogue = $n` of a statement holds for any row, and a
 * repository's transaction enters the catalogue `enters` whatever catalogue it asks for (its
 * statement that reads `catalogues` by name is given that name), so only row-level security and the
 * views' own conditions on the transaction's setting stand.
 */
function forgetfulClient(client: SqlClient, { enters }: { enters: string }): SqlClient {
  const forget = (text: string, params: readonly unknown[] = []) =>
    /\bFROM catalogues WHERE name = \$1/.test(text)
      ? ([text, [enters, ...params.slice(1)]] as const)
      : ([text.replace(/\bcatalogue = (\$\d+)/g, "$1::text IS NOT NULL"), params] as const);
  return {
    query: (text, params) => client.query(...forget(text, params)),
    transaction: (fn) => client.transaction((tx) => fn(forgetfulClient(tx, { enters }))),
    copyIn: (table, columns, data) => client.copyIn(table, columns, data),
    close: () => client.close(),
  };
}

/** `client`, recording the text of every statement sent through it (transactions included) into `sent`. */
function recordingClient(client: SqlClient, sent: string[]): SqlClient {
  return {
    query: (text, params) => {
      sent.push(text);
      return client.query(text, params);
    },
    transaction: (fn) => client.transaction((tx) => fn(recordingClient(tx, sent))),
    copyIn: (table, columns, data) => client.copyIn(table, columns, data),
    close: () => client.close(),
  };
}

function clusteredSpace(dimension: number, clusters: number, seed: number) {
  const random = seededRandom(seed);
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const centres = Array.from({ length: clusters }, () => Array.from({ length: dimension }, gaussian));
  return {
    near(cluster: number, spread: number): number[] {
      const centre = centres[cluster % clusters] as number[];
      return centre.map((value) => value + spread * gaussian());
    },
  };
}
