/**
 * Search per catalogue: recall@10 and latency when a deployment holds one large catalogue or many
 * small ones, through the service's own repository (PostgresProducts: each search a transaction in
 * its catalogue, as CATALOGUE_ROLE under row-level security, the catalogue named in its SQL), on
 * PostgreSQL + pgvector, 3072 dimensions.
 *
 * For each layout (`--one 100000`: one catalogue of 100,000 products; `--many 100x1000`: 100
 * catalogues of 1,000), in a schema of its own:
 * 1. the catalogues are made (each a partition of `products`) and their products written through
 *    the repository's bulk path (writeMany), with clustered, embedding-like 3072-d vectors
 *    (bench/vectors.ts: a sub-category's products vary along 16 of 256 shared directions);
 * 2. the index policy looks at each catalogue after its load (MaintainCatalogueIndexes, as `import`
 *    does): a catalogue of at least `--min-rows` (VECTOR_INDEX_MIN_ROWS, 5,000) gets its HNSW index,
 *    a smaller one stays an exact scan of its own products;
 * 3. queries near each catalogue's products: the exact top 10 of the catalogue (an exact cosine scan
 *    of the full vectors) is the reference; the repository's searchByVector (limit 10, as the service
 *    calls it, one at a time, `--passes` times) is timed: p50 / p95 and recall@10, overall and the
 *    worst catalogue's; its hybridCandidates too (the lexical side through the words view).
 * Then what the catalogue wall costs every statement: a transaction that enters the catalogue (its
 * role, its setting, the catalogue checked) around `SELECT 1`, against `SELECT 1` alone.
 *
 * Run by hand (figures in README "Keys and catalogues"):
 *   bun bench/catalogues.ts [--database-url postgres://postgres@127.0.0.1:55432/sku_test] [--one 100000]
 *     [--many 100x1000] [--queries 200] [--passes 3] [--min-rows 5000] [--probes auto,8,10] [--keep]
 *   bun bench/catalogues.ts --quick      # 1 × 3,000 and 10 × 300, 40 queries: a minute, for CI
 * The server needs pgvector; the bench works in the schemas bench_catalogues_one and _many, dropped
 * before and after (`--keep` leaves them). Give it shared_buffers of at least the large catalogue's
 * index (781 MB at 100,000 × 3072), as the README advises for the service. Last line: one JSON object.
 */
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { PostgresCatalogueRepository } from "../src/adapters/postgres/catalogue-repository.ts";
import { DEFAULT_SEARCH_PLAN, PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { CATALOGUE_ROLE, CATALOGUE_SETTING, prepareDatabase, vectorParam } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import {
  IndexesInUse,
  indexTarget,
  SqlVectorIndexes,
  vectorSessionSettings,
} from "../src/adapters/postgres/vector-index.ts";
import { MaintainCatalogueIndexes } from "../src/domain/maintain-vector-index.ts";
import type { BulkWrite } from "../src/ports/product-repository.ts";
import { type CatalogueProduct, DEFAULT_PRODUCTS_FILE, loadCatalogue, SyntheticSpace } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: "postgres://postgres@127.0.0.1:55432/sku_test" },
    one: { type: "string" },
    many: { type: "string" },
    queries: { type: "string" },
    passes: { type: "string", default: "3" },
    "min-rows": { type: "string", default: "5000" },
    "ef-search": { type: "string", default: "100" },
    probes: { type: "string", default: "auto" },
    quick: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});

const QUICK = args.quick === true;
const DIMENSION = 3072;
const ONE = Number(args.one ?? (QUICK ? 3_000 : 100_000));
const [MANY_CATALOGUES, MANY_SIZE] = (args.many ?? (QUICK ? "10x300" : "100x1000")).split("x").map(Number) as [
  number,
  number,
];
const QUERIES = Number(args.queries ?? (QUICK ? 40 : 200));
const PASSES = Number(args.passes);
const MIN_ROWS = Number(args["min-rows"] ?? 5000) > ONE ? ONE : Number(args["min-rows"]);
const EF_SEARCH = Number(args["ef-search"]);
/** VECTOR_IVF_PROBES values to search with, each on the same index: "auto" or numbers, comma-separated. */
const PROBES = (args.probes as string)
  .split(",")
  .map((value) => (value === "auto" ? ("auto" as const) : Number(value)));
const WRITE_CHUNK = 500;
const LIMIT = 10;

const out = (line: string) => console.log(line);
const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(" ");
const fmt = (ms: number) => ms.toFixed(2);

/**
 * The eval catalogue's texts when it is there (realistic sizes and categories), else made-up ones
 * in skewed categories (CI has no eval set).
 */
function texts(): CatalogueProduct[] {
  if (existsSync(DEFAULT_PRODUCTS_FILE)) return loadCatalogue();
  return Array.from({ length: 12_000 }, (_, i) => {
    const category = `Categoría ${Math.floor(Math.sqrt(i) / 3)}`;
    const sub = `${category} > Grupo ${i % 7}`;
    return { name: `Producto ${i}`, description: `Descripción del producto ${i}`, category, keys: [category, sub] };
  });
}

interface Layout {
  name: "one" | "many";
  catalogues: { name: string; size: number; firstRow: number }[];
}

const layouts: Layout[] = [
  { name: "one", catalogues: [{ name: "grande", size: ONE, firstRow: 0 }] },
  {
    name: "many",
    catalogues: Array.from({ length: MANY_CATALOGUES }, (_, i) => ({
      name: `tienda-${String(i).padStart(3, "0")}`,
      size: MANY_SIZE,
      firstRow: i * MANY_SIZE,
    })),
  },
];

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

const space = new SyntheticSpace(texts(), DIMENSION);
const admin = connectPostgres(args["database-url"] as string, { maxConnections: 1 });
const summary: Record<string, unknown> = {
  dimension: DIMENSION,
  efSearch: EF_SEARCH,
  minRows: MIN_ROWS,
  quick: QUICK,
};
out(
  `bench/catalogues: ${DIMENSION} dimensions, ef_search ${EF_SEARCH}, index from ${MIN_ROWS} products, ` +
    `${QUERIES} queries × ${PASSES} passes; load average ${load()}`,
);

try {
  for (const layout of layouts) {
    const schema = `bench_catalogues_${layout.name}`;
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(args["database-url"] as string);
    url.searchParams.set("search_path", `${schema},public`);
    const db = connectPostgres(url.toString(), {
      maxConnections: 2,
      sessionSettings: vectorSessionSettings({ efSearch: EF_SEARCH, probes: PROBES[0] ?? "auto" }),
    });
    try {
      summary[layout.name] = await runLayout(layout, db, url.toString());
    } finally {
      await db.close();
      if (!args.keep) await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  }
  summary.wall = await wallCost();
} finally {
  await admin.close();
}
out(JSON.stringify(summary));

async function runLayout(layout: Layout, db: SqlClient, url: string) {
  const total = layout.catalogues.reduce((sum, catalogue) => sum + catalogue.size, 0);
  out(
    `\n== ${layout.name}: ${layout.catalogues.length} × ${layout.catalogues[0]?.size} products (load average ${load()})`,
  );
  await prepareDatabase(db, { model: "bench", dimension: DIMENSION });
  const catalogues = new PostgresCatalogueRepository(db);
  const indexesInUse = new IndexesInUse(db, DIMENSION, indexTarget(DIMENSION));
  const products = new PostgresProducts(
    db,
    DIMENSION,
    { ...DEFAULT_SEARCH_PLAN, efSearch: EF_SEARCH, probes: PROBES[0] ?? "auto" },
    undefined,
    {
      indexesInUse,
    },
  );

  const loading = await timed(async () => {
    for (const { name, size, firstRow } of layout.catalogues) {
      await catalogues.create(name);
      for (let start = 0; start < size; start += WRITE_CHUNK) {
        const writes: BulkWrite[] = [];
        for (let row = firstRow + start; row < firstRow + Math.min(size, start + WRITE_CHUNK); row++) {
          const { name: productName, description, category } = space.text(row);
          writes.push({
            kind: "insert",
            row: {
              product: { name: productName, description, category },
              embedding: Array.from(space.productLowRank(row)),
              contentDigest: `d${row}`,
            },
          });
        }
        await products.in(name).writeMany(writes);
      }
    }
  });
  await db.query("VACUUM ANALYZE products");
  out(`loaded ${total} products in ${(loading.ms / 1000).toFixed(1)} s (${Math.round(total / (loading.ms / 1000))}/s)`);

  const indexes = new SqlVectorIndexes(db, DIMENSION, { server: true, buildMemory: "auto", inUse: indexesInUse });
  const maintain = new MaintainCatalogueIndexes({ indexes, policy: { mode: "auto", minRows: MIN_ROWS } });
  const building = await timed(async () => {
    const decisions = new Map<string, string>();
    for (const { name } of layout.catalogues) decisions.set(name, await maintain.afterLoad(name));
    return decisions;
  });
  const built = [...building.value.values()].filter((decision) => decision === "built").length;
  out(
    `index policy: ${built} of ${layout.catalogues.length} catalogues indexed in ${(building.ms / 1000).toFixed(1)} s ` +
      `(${[...new Set(building.value.values())].join(", ")})`,
  );

  // Queries near products of each catalogue, spread over the catalogues.
  const perCatalogue = Math.max(1, Math.round(QUERIES / layout.catalogues.length));
  const queries = layout.catalogues.flatMap(({ name, size, firstRow }) =>
    Array.from({ length: perCatalogue }, (_, i) => ({
      catalogue: name,
      vector: space.queryLowRank(firstRow + ((i * 7919) % size), `query:${name}:${i}`),
    })),
  );
  // The reference: the catalogue's exact top 10 by the full vectors (no index serves this order).
  const truth = await Promise.all(
    queries.map(async ({ catalogue, vector }) =>
      (
        await db.query<{ id: number | string }>(
          "SELECT id FROM products WHERE catalogue = $2 ORDER BY embedding <=> $1::vector, id LIMIT 10",
          [vectorParam(vector), catalogue],
        )
      ).map((row) => Number(row.id)),
    ),
  );

  const semantic = await measure(queries, truth, (catalogue, vector) =>
    products.in(catalogue).searchByVector(vector, { limit: LIMIT }),
  );
  out(
    `search: p50 ${fmt(semantic.p50)} ms, p95 ${fmt(semantic.p95)} ms, recall@10 ${semantic.recall.toFixed(3)} ` +
      `(worst catalogue ${semantic.worstRecall.toFixed(3)}), every result of its own catalogue: ${semantic.own}`,
  );
  // The same searches with other probes (--probes), on the same index: the trade-off side by side.
  const byProbes: Record<string, { p50: number; p95: number; recall: number }> = {};
  for (const probes of PROBES.slice(1)) {
    const probing = connectPostgres(url, {
      maxConnections: 2,
      sessionSettings: vectorSessionSettings({ efSearch: EF_SEARCH, probes }),
    });
    try {
      const other = new PostgresProducts(
        probing,
        DIMENSION,
        { ...DEFAULT_SEARCH_PLAN, efSearch: EF_SEARCH, probes },
        undefined,
        {
          indexesInUse: new IndexesInUse(probing, DIMENSION, indexTarget(DIMENSION)),
        },
      );
      const measured = await measure(queries, truth, (catalogue, vector) =>
        other.in(catalogue).searchByVector(vector, { limit: LIMIT }),
      );
      byProbes[String(probes)] = { p50: round(measured.p50), p95: round(measured.p95), recall: measured.recall };
      out(
        `search with probes ${probes}: p50 ${fmt(measured.p50)} ms, p95 ${fmt(measured.p95)} ms, recall@10 ${measured.recall.toFixed(3)}`,
      );
    } finally {
      await probing.close();
    }
  }
  const words = ["cafetera", "zapatillas", "reloj", "camiseta", "lámpara"];
  const hybrid = await measure(queries, truth, (catalogue, vector, i) =>
    products
      .in(catalogue)
      .hybridCandidates(vector, { texts: [words[i % words.length] as string], expansions: [] }, { candidates: 40 }),
  );
  out(`hybrid candidates (40 each side): p50 ${fmt(hybrid.p50)} ms, p95 ${fmt(hybrid.p95)} ms`);
  const [size] = await db.query<{ bytes: number | string }>(
    `SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) AS bytes FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname LIKE '%embedding\\_%' AND c.relnamespace = current_schema()::regnamespace`,
  );
  return {
    catalogues: layout.catalogues.length,
    productsEach: layout.catalogues[0]?.size,
    loadPerSecond: Math.round(total / (loading.ms / 1000)),
    indexed: built,
    indexSeconds: Math.round(building.ms / 100) / 10,
    indexBytes: Number(size?.bytes ?? 0),
    search: {
      p50: round(semantic.p50),
      p95: round(semantic.p95),
      recall: semantic.recall,
      worstRecall: semantic.worstRecall,
    },
    hybrid: { p50: round(hybrid.p50), p95: round(hybrid.p95) },
    byProbes,
    ownCatalogueOnly: semantic.own && hybrid.own,
    loadAverage: load(),
  };
}

/** Times `search` over the queries (a warm-up pass, then PASSES), its recall against `truth`, per catalogue too. */
async function measure(
  queries: readonly { catalogue: string; vector: number[] }[],
  truth: readonly number[][],
  search: (catalogue: string, vector: number[], i: number) => Promise<{ id: number }[]>,
) {
  const owners = new Map<number, string>();
  const ms: number[] = [];
  const found = new Map<string, { hits: number; asked: number }>();
  let own = true;
  for (let pass = 0; pass <= PASSES; pass++) {
    for (const [i, { catalogue, vector }] of queries.entries()) {
      const { ms: took, value: hits } = await timed(() => search(catalogue, vector, i));
      if (pass === 0) {
        for (const id of truth[i] ?? []) owners.set(id, catalogue);
        continue;
      }
      ms.push(took);
      if (pass !== 1) continue;
      // Every hit must be one of this catalogue's: the reference ids are, and so must any other be.
      const expected = truth[i] ?? [];
      const ids = hits.map((hit) => hit.id);
      if (ids.some((id) => owners.has(id) && owners.get(id) !== catalogue)) own = false;
      const top = ids.slice(0, LIMIT);
      const entry = found.get(catalogue) ?? { hits: 0, asked: 0 };
      entry.hits += top.filter((id) => expected.includes(id)).length;
      entry.asked += Math.min(LIMIT, expected.length);
      found.set(catalogue, entry);
    }
  }
  ms.sort((a, b) => a - b);
  const entries = [...found.values()];
  const recall =
    entries.reduce((sum, entry) => sum + entry.hits, 0) / entries.reduce((sum, entry) => sum + entry.asked, 0);
  const worstRecall = Math.min(...entries.map((entry) => entry.hits / entry.asked));
  return {
    p50: percentile(ms, 0.5),
    p95: percentile(ms, 0.95),
    recall: round3(recall),
    worstRecall: round3(worstRecall),
    own,
  };
}

/**
 * What entering a catalogue costs a statement: BEGIN, the statement that checks the catalogue and
 * sets the role and setting, the statement, COMMIT (three more round trips than the statement
 * alone), measured around `SELECT 1`, interleaved so that load falls on both alike.
 */
async function wallCost() {
  const schema = "bench_catalogues_wall";
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(args["database-url"] as string);
  url.searchParams.set("search_path", `${schema},public`);
  const db = connectPostgres(url.toString(), { maxConnections: 1 });
  try {
    await prepareDatabase(db, { model: "bench", dimension: 4 });
    const bare: number[] = [];
    const walled: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const plain = await timed(() => db.query("SELECT 1"));
      const inside = await timed(() =>
        db.transaction(async (tx) => {
          await tx.query(
            `SELECT set_config('${CATALOGUE_SETTING}', name, true), set_config('role', '${CATALOGUE_ROLE}', true)
             FROM catalogues WHERE name = $1`,
            ["default"],
          );
          return tx.query("SELECT 1");
        }),
      );
      if (i >= 200) {
        bare.push(plain.ms);
        walled.push(inside.ms);
      }
    }
    bare.sort((a, b) => a - b);
    walled.sort((a, b) => a - b);
    const cost = {
      bareP50: round(percentile(bare, 0.5)),
      walledP50: round(percentile(walled, 0.5)),
      addedP50: round(percentile(walled, 0.5) - percentile(bare, 0.5)),
      addedP95: round(percentile(walled, 0.95) - percentile(bare, 0.95)),
    };
    out(
      `\n== the catalogue wall: SELECT 1 p50 ${fmt(cost.bareP50)} ms alone, ${fmt(cost.walledP50)} ms inside its ` +
        `catalogue (+${fmt(cost.addedP50)} ms p50, +${fmt(cost.addedP95)} ms p95) (load average ${load()})`,
    );
    return cost;
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
