/**
 * Which approximate vector index search should use, from when, with which settings: measured on
 * PostgreSQL + pgvector and on PGlite, at several catalogue sizes and dimensions.
 *
 * For every engine × dimension × size (the rows are loaded with binary COPY, then VACUUM ANALYZE):
 * 1. ground truth: the exact top 10 (`ORDER BY embedding <=> q, id` on `vector`, no ANN index yet)
 *    of every unfiltered and filtered query;
 * 2. today's exact search (PostgresProductRepository.searchByVector) and the exact scan of the
 *    filtered rows (btree on category; at ≥ 512 dims through the in-row half-precision copy);
 * 3. HNSW on the vector (`vector_cosine_ops` up to 2,000 dims, else the halfvec expression): build
 *    time and size, then recall@10 / p50 / p95 at several hnsw.ef_search and candidate depths,
 *    the candidates always re-ranked by the exact cosine of the full vectors;
 * 4. filtered queries (categories of ~0.1 %, 0.5 %, 5 %, 30 % of the rows; queries near the
 *    category and far from it): iterative index scan (relaxed_order, max_scan_tuples) against the
 *    exact filtered scan and against the planner's own choice, with the count of short answers;
 * 5. planner behaviour through the app's query paths (postgres.js `unsafe(..., { prepare: true })`,
 *    PGlite `query`): whether the index is used, by scenario;
 * 6. binary quantization (`binary_quantize(embedding)::bit(D)`, bit_hamming_ops) + exact re-rank;
 * 7. write rates with the indexes present and absent: single-row INSERTs (the app's add path, vector
 *    as text) and binary COPY; those rows belong to the next size.
 *
 * Run by hand, one engine / dimension / size list at a time if you like:
 *   bun bench/index.ts [--engines pg,pglite] [--dims 384,3072] [--pg-sizes 1000,5000,12430,50000,100000]
 *     [--pglite-sizes 1000,5000,12430] [--queries 100] [--filtered-queries 20]
 *     [--database-url postgres://postgres@127.0.0.1:55432/sku_indexbench] [--skip bq,inserts,planner,filtered]
 *     [--m 16] [--ef-construction 64] [--repeat 1] [--model-dir models/all-MiniLM-L6-v2]
 * With --model-dir the rows are the offline model's real embeddings of the catalogue (384 dims, at
 * most 12,430 rows) instead of the synthetic ones, to check the synthetic recall against real data.
 * The server database must exist with the vector extension available; the bench works in its own
 * schema `bench_index`, dropped before and after. PGlite runs in memory.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import postgres from "postgres";
import { PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { HALF_PRECISION_COPY_FROM_DIMENSION, prepareDatabase, vectorParam } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, insideTransaction, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { embeddingText } from "../src/domain/product.ts";
import {
  type CatalogueProduct,
  DEFAULT_PRODUCTS_FILE,
  gaussians,
  loadCatalogue,
  normalize,
  SyntheticSpace,
  seedOf,
} from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    engines: { type: "string", default: "pg,pglite" },
    dims: { type: "string", default: "384,3072" },
    "pg-sizes": { type: "string", default: "1000,5000,12430,50000,100000" },
    "pglite-sizes": { type: "string", default: "1000,5000,12430" },
    queries: { type: "string", default: "100" },
    "filtered-queries": { type: "string", default: "20" },
    warmup: { type: "string", default: "10" },
    repeat: { type: "string", default: "1" },
    "database-url": { type: "string", default: "postgres://postgres@127.0.0.1:55432/sku_indexbench" },
    skip: { type: "string", default: "" },
    m: { type: "string", default: "16" },
    "model-dir": { type: "string" },
    "ef-construction": { type: "string", default: "64" },
    products: { type: "string", default: DEFAULT_PRODUCTS_FILE },
  },
});

const positiveInts = (text: string) =>
  text
    .split(",")
    .filter((part) => part.trim() !== "")
    .map((part) => {
      const n = Number(part.trim().replaceAll("_", ""));
      if (!Number.isInteger(n) || n < 1) throw new Error(`not a positive integer: "${part}"`);
      return n;
    });
const sizesOf = (text: string) => [...new Set(positiveInts(text))].sort((a, b) => a - b);
const ENGINES = args.engines.split(",").map((e) => e.trim());
const DIMS = positiveInts(args.dims);
const [QUERIES = 100] = positiveInts(args.queries);
const [FILTERED_QUERIES = 20] = positiveInts(args["filtered-queries"]);
const [WARMUP = 10] = positiveInts(args.warmup);
const [REPEAT = 1] = positiveInts(args.repeat);
/** HNSW build parameters (pgvector's defaults). */
const [HNSW_M = 16] = positiveInts(args.m);
const [HNSW_EF_CONSTRUCTION = 64] = positiveInts(args["ef-construction"]);
const SKIP = new Set(args.skip.split(",").map((s) => s.trim()));
const LIMIT = 10;
const SCHEMA = "bench_index";

/** Rows per COPY chunk handed to the engine. */
const COPY_CHUNK = 2_000;
/** Rows written one INSERT at a time (the app's add path) and by one COPY, per index condition. */
const SINGLE_INSERTS = 100;
const COPY_INSERTS = 500;

/** HNSW candidate stage: [hnsw.ef_search, candidates re-ranked exactly]. */
const HNSW_CONFIGS: readonly [number, number][] = [
  [40, 10],
  [40, 40],
  [100, 40],
  [200, 40],
  [400, 40],
  [800, 40],
];
/** Binary quantization: [hnsw.ef_search, candidates re-ranked exactly]. */
const BQ_CONFIGS: readonly [number, number][] = [
  [100, 40],
  [100, 100],
  [200, 200],
  [400, 400],
  [1000, 1000],
];
/**
 * Iterative scans for filters: hnsw.ef_search, hnsw.max_scan_tuples, candidates re-ranked exactly,
 * hnsw.iterative_scan.
 */
const ITERATIVE_CONFIGS: readonly [number, number, number, "relaxed_order" | "strict_order"][] = [
  [100, 20_000, 40, "relaxed_order"],
  [400, 20_000, 40, "relaxed_order"],
  [400, 20_000, 200, "relaxed_order"],
  [1000, 50_000, 1000, "relaxed_order"],
  [100, 20_000, 40, "strict_order"],
];
const FILTER_CANDIDATES = 40;

/** Category filters by size: ~0.1 %, ~0.5 %, ~5 %, ~30 % of the catalogue (a list for the last). */
const FILTERS: readonly string[][] = [
  ["Pet Supplies"],
  ["Cameras & Accessories"],
  ["Kitchen & Dining"],
  ["Clothing", "Footwear"],
];

const catalogue = loadCatalogue(args.products);
const DEV_QUERIES_FILE = resolve(import.meta.dir, "../../shared/eval/queries-dev.json");

// ---------------------------------------------------------------------------------------------
// Engines: the app's query path (SqlClient) plus binary COPY for loading

interface Engine {
  name: "PostgreSQL" | "PGlite";
  /** The app's query path: postgres.js `unsafe(text, params, { prepare: true })`, or PGlite `query`. */
  client: SqlClient;
  /** Binary COPY of (name, description, category, embedding) rows, header and trailer included. */
  copy(chunks: readonly Uint8Array[]): Promise<void>;
  close(): Promise<void>;
}

async function openPostgres(url: string): Promise<Engine> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.unsafe(`CREATE SCHEMA ${SCHEMA}`);
  await admin.unsafe("CREATE EXTENSION IF NOT EXISTS vector");
  await admin.unsafe("CREATE EXTENSION IF NOT EXISTS pg_trgm");
  const inSchema = new URL(url);
  inSchema.searchParams.set("search_path", `${SCHEMA},public`);
  // One connection: session settings and prepared statements stay on it, as on one pooled connection.
  const client = connectPostgres(inSchema.href, { maxConnections: 1 });
  const loader = postgres(inSchema.href, { max: 1, onnotice: () => {} });
  return {
    name: "PostgreSQL",
    client,
    async copy(chunks) {
      const writable =
        await loader`COPY products (name, description, category, embedding) FROM STDIN WITH (FORMAT binary)`.writable();
      await pipeline(Readable.from(chunks), writable);
    },
    async close() {
      await client.close();
      await loader.end();
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await admin.end();
    },
  };
}

/**
 * PGlite in memory, opened as openPglite (src/adapters/pglite/pglite-client.ts) does, but kept at
 * hand: binary COPY needs the instance (`/dev/blob`). Queries go through `db.query` as in the app.
 */
async function openPgliteEngine(): Promise<Engine> {
  const db = await PGlite.create({ extensions: { vector } });
  const executor = (run: (text: string, params: unknown[]) => Promise<{ rows: unknown[] }>) => ({
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      return (await run(text, [...params])).rows as T[];
    },
    copyIn: () => Promise.reject(new Error("the bench copies through engine.copy")),
  });
  const client: SqlClient = {
    ...executor((text, params) => db.query(text, params)),
    transaction: (fn) =>
      db.transaction((tx) =>
        fn(
          insideTransaction({
            ...executor((text, params) => tx.query(text, params)),
            transaction: () => Promise.reject(new Error("no nested transactions in this bench")),
          }),
        ),
      ),
    close: () => db.close(),
  };
  return {
    name: "PGlite",
    client,
    async copy(chunks) {
      await db.query(
        "COPY products (name, description, category, embedding) FROM '/dev/blob' WITH (FORMAT binary)",
        [],
        {
          blob: new Blob(chunks as Uint8Array<ArrayBuffer>[]),
        },
      );
    },
    close: () => db.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Binary COPY rows

const COPY_HEADER = Buffer.concat([Buffer.from("PGCOPY\n\xff\r\n\0", "latin1"), Buffer.alloc(8)]);
const COPY_TRAILER = Buffer.from([0xff, 0xff]);

/** Rows [from, to) of the synthetic catalogue in binary COPY tuple format (no header, no trailer). */
function copyTuples(space: VectorSource, from: number, to: number): Buffer {
  const parts: Buffer[] = [];
  for (let row = from; row < to; row++) {
    const product = space.text(row);
    const texts = [product.name, product.description, product.category].map((t) => Buffer.from(t, "utf8"));
    const v = space.product(row);
    const size = 2 + texts.reduce((sum, t) => sum + 4 + t.length, 0) + 4 + 4 + 4 * v.length;
    const buf = Buffer.allocUnsafe(size);
    let at = buf.writeInt16BE(4, 0);
    for (const t of texts) {
      at = buf.writeInt32BE(t.length, at);
      at += t.copy(buf, at);
    }
    // pgvector's binary form: int16 dimensions, int16 unused, then float4 components.
    at = buf.writeInt32BE(4 + 4 * v.length, at);
    at = buf.writeInt16BE(v.length, at);
    at = buf.writeInt16BE(0, at);
    for (let j = 0; j < v.length; j++) at = buf.writeFloatBE(v[j] as number, at);
    parts.push(buf);
  }
  return Buffer.concat(parts);
}

/** Loads rows [from, to) by binary COPY; returns rows per second in the database (not making them). */
async function copyRows(engine: Engine, space: VectorSource, from: number, to: number): Promise<number> {
  let seconds = 0;
  for (let start = from; start < to; start += COPY_CHUNK * 5) {
    const end = Math.min(to, start + COPY_CHUNK * 5);
    const chunks: Uint8Array[] = [COPY_HEADER];
    for (let s = start; s < end; s += COPY_CHUNK) chunks.push(copyTuples(space, s, Math.min(end, s + COPY_CHUNK)));
    chunks.push(COPY_TRAILER);
    const started = performance.now();
    await engine.copy(chunks);
    seconds += (performance.now() - started) / 1000;
  }
  return (to - from) / seconds;
}

/** The app's add path: one INSERT per product, its vector as text. Rows per second. */
async function insertRows(engine: Engine, space: VectorSource, from: number, to: number): Promise<number> {
  const params = Array.from({ length: to - from }, (_, i) => {
    const p = space.text(from + i);
    return [p.name, p.description, p.category, vectorParam(space.product(from + i))];
  });
  const started = performance.now();
  for (const row of params) {
    await engine.client.query(
      "INSERT INTO products (name, description, category, embedding) VALUES ($1, $2, $3, $4::vector) RETURNING id",
      row,
    );
  }
  return (to - from) / ((performance.now() - started) / 1000);
}

// ---------------------------------------------------------------------------------------------
// SQL forms

type IndexKind = "hnsw" | "bq";

/** The ORDER BY expression of the candidate stage: exactly the indexed expression, as the planner needs. */
function annOrder(kind: IndexKind, d: number): string {
  if (kind === "bq") return `binary_quantize(embedding)::bit(${d}) <~> binary_quantize($1::vector)`;
  // $1 is cast to vector first: a parameter takes the type of its first use in parse order, and the
  // FROM subquery is parsed before the outer SELECT, so `$1::halfvec(D)` here would make the outer
  // "exact" distance compare with a half-precision query vector.
  return d <= 2000 ? "embedding <=> $1::vector" : `embedding::halfvec(${d}) <=> $1::vector::halfvec(${d})`;
}

function annIndexDdl(kind: IndexKind, d: number): string {
  const on =
    kind === "bq"
      ? `(binary_quantize(embedding)::bit(${d})) bit_hamming_ops`
      : d <= 2000
        ? "embedding vector_cosine_ops"
        : `(embedding::halfvec(${d})) halfvec_cosine_ops`;
  return `CREATE INDEX products_${kind} ON products USING hnsw (${on}) WITH (m = ${HNSW_M}, ef_construction = ${HNSW_EF_CONSTRUCTION})`;
}

/**
 * The category filter of the candidate stage. "plain" lets the planner choose (the btree on
 * category, or the ANN index with an iterative scan); "ann" hides the filter from the btree
 * (`category || ''`), so the only ordered path left is the ANN index (enable_bitmapscan and
 * enable_indexscan alone cannot say "this index, not that one").
 */
const FILTER_WHERE = {
  none: "",
  plain: "WHERE category = ANY($3::text[])",
  ann: "WHERE category || '' = ANY($3::text[])",
} as const;
const COLUMNS = "id, name, description, category";

/** Candidates from the index ($2 of them), re-ranked by the exact cosine of the full vectors. */
function annQuery(kind: IndexKind, d: number, filter: keyof typeof FILTER_WHERE = "none"): string {
  return `SELECT ${COLUMNS}, embedding <=> $1::vector AS distance
    FROM (SELECT ${COLUMNS}, embedding FROM products ${FILTER_WHERE[filter]}
          ORDER BY ${annOrder(kind, d)} LIMIT $2) AS candidates
    ORDER BY distance, id LIMIT ${LIMIT}`;
}

/** Exact top `limit`, the ground truth (run before any ANN index exists). */
function truthQuery(filtered: boolean, limit = LIMIT): string {
  return `SELECT id, embedding <=> $1::vector AS distance FROM products ${filtered ? "WHERE category = ANY($2::text[])" : ""}
    ORDER BY distance, id LIMIT ${limit}`;
}

/** How far apart the neighbours are: the closer rank 10 is to rank 100, the harder for any ANN index. */
const PROFILE_RANKS = [1, 10, 100] as const;

/**
 * Exact scan of the filtered rows only (the btree on category finds them). OFFSET 0 keeps the
 * planner from ordering through an ANN index on `embedding`; at ≥ 512 dims the in-row half copy
 * picks 40 candidates, re-ranked exactly, as today's unfiltered search does.
 */
function exactFilteredQuery(d: number): string {
  if (d >= HALF_PRECISION_COPY_FROM_DIMENSION) {
    return `SELECT ${COLUMNS}, embedding <=> $1::vector AS distance
      FROM (SELECT ${COLUMNS}, embedding FROM products WHERE category = ANY($2::text[])
            ORDER BY embedding_half <=> $1::vector::halfvec, id LIMIT ${FILTER_CANDIDATES}) AS candidates
      ORDER BY distance, id LIMIT ${LIMIT}`;
  }
  return `SELECT ${COLUMNS}, embedding <=> $1::vector AS distance
    FROM (SELECT ${COLUMNS}, embedding FROM products WHERE category = ANY($2::text[]) OFFSET 0) AS filtered
    ORDER BY distance, id LIMIT ${LIMIT}`;
}

/** Today's exact unfiltered query, as PostgresProductRepository writes it (for EXPLAIN). */
function todaysExactQuery(d: number): string {
  return d >= HALF_PRECISION_COPY_FROM_DIMENSION
    ? `SELECT ${COLUMNS}, embedding <=> $1::vector AS distance FROM (SELECT ${COLUMNS}, embedding FROM products
         ORDER BY embedding_half <=> $1::vector::halfvec, id LIMIT 40) AS candidates ORDER BY distance, id LIMIT $2`
    : `SELECT ${COLUMNS}, embedding <=> $1::vector AS distance FROM products ORDER BY distance, id LIMIT $2`;
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Hit {
  id: number | string;
  distance: number;
}

/** The machine is shared: the 1-minute load average tells how much the latencies may be inflated. */
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0] ?? "?";
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number;
const mb = (bytes: number | string) => Number(bytes) / 1024 / 1024;
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

/** The exact answer of one query: its ids, and the distance of its last (10th) row. */
interface Truth {
  ids: number[];
  kth: number;
}
const truthOf = (rows: readonly Hit[]): Truth => ({
  ids: rows.map((r) => Number(r.id)),
  kth: rows.length === 0 ? Number.POSITIVE_INFINITY : Number((rows.at(-1) as Hit).distance),
});

interface Timing {
  p50: number;
  p95: number;
  recall: number;
  /**
   * Recall counting ties: a returned row is right when its exact distance is no more than that of
   * the exact 10th row (products with equal vectors are interchangeable).
   */
  tieRecall: number;
  /** Answers with fewer rows than the truth has (min(10, matching rows)). */
  short: number;
}

/**
 * Runs `search` on every query after `WARMUP` warm-up calls; recall against `truth`. With
 * --repeat R the timed pass runs R times and the pass with the lowest median is kept (the machine
 * is shared: the best pass is the one least disturbed by other processes).
 */
async function measure(
  queries: readonly number[][],
  truth: readonly Truth[],
  search: (
    q: number[],
    i: number,
  ) => Promise<readonly ({ id: number | string } & ({ distance: number } | { score: number }))[]>,
  warmup = WARMUP,
): Promise<Timing> {
  for (let i = 0; i < Math.min(warmup, queries.length); i++) await search(queries[i] as number[], i);
  let best: Timing | undefined;
  for (let pass = 0; pass < REPEAT; pass++) {
    const timing = await timedPass(queries, truth, search);
    if (!best || timing.p50 < best.p50) best = timing;
  }
  return best as Timing;
}

async function timedPass(
  queries: readonly number[][],
  truth: readonly Truth[],
  search: (
    q: number[],
    i: number,
  ) => Promise<readonly ({ id: number | string } & ({ distance: number } | { score: number }))[]>,
): Promise<Timing> {
  const latencies: number[] = [];
  let recall = 0;
  let tieRecall = 0;
  let short = 0;
  for (const [i, q] of queries.entries()) {
    const started = performance.now();
    const hits = await search(q, i);
    latencies.push(performance.now() - started);
    const { ids: expected, kth } = truth[i] as Truth;
    const got = new Set(hits.map((h) => Number(h.id)));
    recall += expected.length === 0 ? 1 : expected.filter((id) => got.has(id)).length / expected.length;
    const within = hits.filter((h) => ("distance" in h ? Number(h.distance) : 1 - h.score) <= kth + 1e-9).length;
    tieRecall += expected.length === 0 ? 1 : Math.min(1, within / expected.length);
    if (hits.length < expected.length) short++;
  }
  latencies.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 0.5),
    p95: percentile(latencies, 0.95),
    recall: recall / queries.length,
    tieRecall: tieRecall / queries.length,
    short,
  };
}

async function setAll(client: SqlClient, settings: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(settings)) {
    await client.query("SELECT set_config($1, $2, false)", [name, value]);
  }
}
const TUNABLES = [
  "hnsw.ef_search",
  "hnsw.iterative_scan",
  "hnsw.max_scan_tuples",
  "enable_seqscan",
  "enable_bitmapscan",
  "plan_cache_mode",
];
async function resetAll(engine: Engine): Promise<void> {
  for (const name of TUNABLES) await engine.client.query(`RESET ${name}`);
  if (engine.name === "PostgreSQL") await engine.client.query("RESET jit");
}
/** What the candidate stage runs with: the index, never a sequential scan that casts every row. */
const ANN_SETTINGS = (engine: Engine): Record<string, string> =>
  engine.name === "PostgreSQL" ? { enable_seqscan: "off", jit: "off" } : { enable_seqscan: "off" };

/** Plan nodes of EXPLAIN (FORMAT JSON), as "Node Type[index]" joined by " > ". */
async function planOf(client: SqlClient, text: string, params: readonly unknown[]): Promise<string> {
  const [row] = await client.query<Record<string, unknown>>(`EXPLAIN (FORMAT JSON) ${text}`, params);
  const raw = row ? Object.values(row)[0] : undefined;
  const parsed = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const nodes: string[] = [];
  const walk = (node: PlanNode) => {
    if (!["Limit", "Subquery Scan", "Result"].includes(node["Node Type"])) {
      nodes.push(node["Index Name"] ? `${node["Node Type"]}(${node["Index Name"]})` : node["Node Type"]);
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  if (parsed[0]) walk(parsed[0].Plan);
  return nodes.join(" > ");
}
interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

// ---------------------------------------------------------------------------------------------
// Results

interface UnfilteredRow {
  engine: string;
  dims: number;
  n: number;
  method: string;
  build: string;
  timing: Timing;
  plan: string;
}
interface FilteredRow {
  engine: string;
  dims: number;
  n: number;
  filter: string;
  matches: number;
  where: "near" | "far";
  plan: string;
  timing: Timing;
  used: string;
}
interface WriteRow {
  engine: string;
  dims: number;
  n: number;
  indexes: string;
  single: number;
  copy: number;
}
const unfilteredRows: UnfilteredRow[] = [];
const filteredRows: FilteredRow[] = [];
const writeRows: WriteRow[] = [];
const loadRows: string[] = [];
const plannerLines: string[] = [];
const profileLines: string[] = [];

function logUnfiltered(row: UnfilteredRow): void {
  unfilteredRows.push(row);
  const t = row.timing;
  console.log(
    `  ${row.method.padEnd(34)} recall ${t.recall.toFixed(3)} (ties ${t.tieRecall.toFixed(3)})  p50 ${fmt(t.p50)} ms  p95 ${fmt(t.p95)} ms` +
      `${t.short ? `  short ${t.short}` : ""}  [${row.plan}]${row.build ? `  ${row.build}` : ""}`,
  );
}

// ---------------------------------------------------------------------------------------------
// One engine × dimension: every size

interface FilterCase {
  categories: string[];
  where: "near" | "far";
  queries: number[][];
}

/** Per filter: queries near products inside the category, and near products outside it (far from it). */
async function filterCases(source: VectorSource): Promise<FilterCase[]> {
  const cases: FilterCase[] = [];
  for (const categories of FILTERS) {
    const inside = new Set(categories);
    const rows = catalogue.map((p, row) => ({ row, inside: inside.has(p.category) }));
    for (const where of ["near", "far"] as const) {
      const pool = rows.filter((r) => r.inside === (where === "near")).map((r) => r.row);
      const picks = Array.from({ length: FILTERED_QUERIES }, (_, j) => {
        const label = `filtered:${source.dimension}:${where}:${categories.join("|")}:${j}`;
        return { row: pool[seedOf(label) % pool.length] as number, label };
      });
      cases.push({ categories, where, queries: await source.queriesNear(picks) });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Where the vectors come from: synthetic (any size, any dimension) or the offline model (384 dims,
// one row per catalogue product)

interface VectorSource {
  readonly dimension: number;
  readonly label: string;
  /** How many distinct rows it can make. */
  readonly rows: number;
  text(row: number): CatalogueProduct;
  product(row: number): Float32Array | Float64Array;
  /** The unfiltered queries. */
  queries(count: number): Promise<number[][]>;
  /** A query near each picked catalogue row (the label seeds it). */
  queriesNear(picks: readonly { row: number; label: string }[]): Promise<number[][]>;
}

function syntheticSource(dimension: number): VectorSource {
  const space = new SyntheticSpace(catalogue, dimension);
  return {
    dimension,
    label: "synthetic",
    rows: Number.MAX_SAFE_INTEGER,
    text: (row) => space.text(row),
    product: (row) => space.product(row),
    queries: async (count) => Array.from({ length: count }, (_, i) => space.query(i)),
    queriesNear: async (picks) => picks.map(({ row, label }) => space.queryNear(row, label)),
  };
}

/**
 * The offline model's real vectors of the 12,430 catalogue products (embedded once, ~5 min on 2
 * cores, then cached in /tmp), so recall can be checked on real embeddings instead of the synthetic
 * ones (whose neighbours are nearly equidistant: see the cosine profile the bench prints).
 *
 * Rows past the catalogue are variants of its products (as a shop has sizes and colours): row r is
 * product r mod 12,430 plus seeded Gaussian noise (cosine ≈ 0.9 to the product; none for the first
 * 12,430 rows), so a 100k catalogue keeps the real vectors' structure. For a longer `dimension`
 * (a multiple of 1,024) each vector is mapped by an exact isometry: zero-padded to 1,024 and, per
 * block of 1,024, sign-flipped (seeded, per block) and Walsh–Hadamard transformed (scaled): the
 * cosines between rows and queries are exactly the 384-d ones, spread over every component like a
 * provider model's vectors. Queries: the 40 labelled dev queries, then the first three words of
 * seeded product names (short, as shoppers type); "near" a row: the first three words of its name.
 */
async function minilmSource(modelDir: string, dimension: number): Promise<VectorSource> {
  const embedder = new LocalEmbedder(modelDir);
  const base = embedder.dimension;
  const cacheFile = join(tmpdir(), `sku-indexbench-minilm-${catalogue.length}.f32`);
  let data: Float32Array;
  if (existsSync(cacheFile) && statSync(cacheFile).size === catalogue.length * base * 4) {
    data = new Float32Array(readFileSync(cacheFile).buffer.slice(0));
  } else {
    const started = performance.now();
    console.log(`embedding ${catalogue.length} products with ${embedder.model} (cached in ${cacheFile}) ...`);
    const vectors = await embedder.embed(
      catalogue.map((product) => embeddingText(product, [])),
      "document",
    );
    data = new Float32Array(catalogue.length * base);
    vectors.forEach((v, row) => {
      data.set(v, row * base);
    });
    writeFileSync(cacheFile, Buffer.from(data.buffer));
    console.log(`  ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  const lift = isometry(base, dimension);
  const variant = (row: number): Float64Array => {
    const product = row % catalogue.length;
    const v = Float64Array.from(data.subarray(product * base, (product + 1) * base));
    if (row < catalogue.length) return v;
    const gauss = gaussians(`variant:${row}`);
    const scale = VARIANT_NOISE / Math.sqrt(base);
    for (let j = 0; j < base; j++) v[j] = (v[j] as number) + scale * gauss();
    return normalize(v);
  };
  const shortName = (row: number) => (catalogue[row] as CatalogueProduct).name.split(/\s+/).slice(0, 3).join(" ");
  const embedQueries = async (texts: string[]) =>
    (await embedder.embed(texts, "query")).map((v) => Array.from(lift(Float64Array.from(v))));
  return {
    dimension,
    label: dimension === base ? embedder.model : `${embedder.model} lifted to ${dimension}`,
    rows: catalogue.length * VARIANTS,
    text: (row) => catalogue[row % catalogue.length] as CatalogueProduct,
    product: (row) => lift(variant(row)),
    async queries(count) {
      const dev = (JSON.parse(readFileSync(DEV_QUERIES_FILE, "utf8")) as { query: string }[]).map((q) => q.query);
      const names = Array.from({ length: Math.max(0, count - dev.length) }, (_, i) =>
        shortName(seedOf(`pick:${i}`) % catalogue.length),
      );
      return embedQueries([...dev, ...names].slice(0, count));
    },
    queriesNear: (picks) => embedQueries(picks.map(({ row }) => shortName(row))),
  };
}

/** Rows per catalogue product with --model-dir: the product and its variants (9 × 12,430 ≥ 100k). */
const VARIANTS = 9;
/** Noise of a variant, relative to its unit product vector: cosine ≈ 1/√(1 + 0.5²) ≈ 0.9. */
const VARIANT_NOISE = 0.5;

/** An exact isometry from `from` dims into `to` dims (identity when equal); see minilmSource. */
function isometry(from: number, to: number): (v: Float64Array) => Float64Array {
  if (to === from) return (v) => v;
  const block = 1024;
  if (to % block !== 0 || from > block) throw new Error(`cannot map ${from} dims to ${to} (a multiple of ${block})`);
  const blocks = to / block;
  const gauss = gaussians(`isometry:${from}:${to}`);
  const signs = Array.from({ length: blocks }, () => Array.from({ length: block }, () => (gauss() < 0 ? -1 : 1)));
  const scale = 1 / Math.sqrt(block * blocks);
  return (v) => {
    const out = new Float64Array(to);
    for (let b = 0; b < blocks; b++) {
      const x = out.subarray(b * block, (b + 1) * block);
      const sign = signs[b] as number[];
      for (let i = 0; i < from; i++) x[i] = (v[i] as number) * (sign[i] as number);
      // In-place fast Walsh–Hadamard transform (unnormalised: scaled below).
      for (let h = 1; h < block; h *= 2) {
        for (let i = 0; i < block; i += 2 * h) {
          for (let j = i; j < i + h; j++) {
            const a = x[j] as number;
            const c = x[j + h] as number;
            x[j] = a + c;
            x[j + h] = a - c;
          }
        }
      }
      for (let i = 0; i < block; i++) x[i] = (x[i] as number) * scale;
    }
    return out;
  };
}

async function benchEngine(open: () => Promise<Engine>, space: VectorSource, sizes: readonly number[]): Promise<void> {
  const { dimension } = space;
  const queries = await space.queries(QUERIES);
  const cases = await filterCases(space);
  const engine = await open();
  const { client } = engine;
  const repository = new PostgresProducts(client, dimension).in("default");
  try {
    await prepareDatabase(client, { model: "bench", dimension });
    // The bench copies rows without the digest of their text (it never re-embeds them).
    await client.query("ALTER TABLE products ALTER COLUMN content_digest SET DEFAULT ''");
    let loaded = 0;
    for (const n of sizes) {
      if (n < loaded || n > space.rows) continue;
      console.log(`\n== ${engine.name} ${dimension}d ${space.label}, ${n} products (load average ${loadAverage()})`);
      const rate = await copyRows(engine, space, loaded, n);
      loaded = n;
      const vacuumStarted = performance.now();
      await client.query("VACUUM ANALYZE products");
      const [size] = await client.query<{ b: string }>(
        "SELECT sum(pg_total_relation_size(inhrelid)) AS b FROM pg_inherits WHERE inhparent = 'products'::regclass",
      );
      const line = `| ${engine.name} | ${dimension} | ${n} | ${rate.toFixed(0)} | ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} | ${mb(size?.b ?? 0).toFixed(0)} |`;
      loadRows.push(line);
      console.log(`  binary COPY ${rate.toFixed(0)} rows/s; table ${mb(size?.b ?? 0).toFixed(0)} MB`);
      const base = {
        engine: space.label === "synthetic" ? engine.name : `${engine.name} (${space.label})`,
        dims: dimension,
        n,
      };

      // 1. Ground truth, no ANN index present.
      const truthStarted = performance.now();
      const truth: Truth[] = [];
      const cosines: number[][] = PROFILE_RANKS.map(() => []);
      for (const q of queries) {
        const rows = await client.query<Hit>(truthQuery(false, 100), [vectorParam(q)]);
        truth.push(truthOf(rows.slice(0, LIMIT)));
        PROFILE_RANKS.forEach((rank, i) => {
          const row = rows[rank - 1];
          if (row) cosines[i]?.push(1 - Number(row.distance));
        });
      }
      const profile = cosines
        .map(
          (values, i) =>
            `${PROFILE_RANKS[i]}: ${percentile(
              values.sort((a, b) => a - b),
              0.5,
            ).toFixed(3)}`,
        )
        .join(", ");
      profileLines.push(`| ${engine.name} | ${dimension} | ${space.label} | ${n} | ${profile} |`);
      console.log(`  median cosine of the exact neighbour at rank ${profile}`);
      const filteredTruth: Truth[][] = [];
      const matches: number[] = [];
      for (const c of cases) {
        const [count] = await client.query<{ n: string | number }>(
          "SELECT count(*) AS n FROM products WHERE category = ANY($1::text[])",
          [c.categories],
        );
        matches.push(Number(count?.n ?? 0));
        const t: Truth[] = [];
        for (const q of c.queries) {
          t.push(truthOf(await client.query<Hit>(truthQuery(true), [vectorParam(q), c.categories])));
        }
        filteredTruth.push(t);
      }
      console.log(`  ground truth: ${((performance.now() - truthStarted) / 1000).toFixed(0)} s`);

      // 2. Today's exact search; the exact filtered scan.
      logUnfiltered({
        ...base,
        method: "exact (today)",
        build: "",
        plan: await planOf(client, todaysExactQuery(dimension), [vectorParam(queries[0] as number[]), LIMIT]),
        timing: await measure(queries, truth, (q) => repository.searchByVector(q, { limit: LIMIT })),
      });
      if (engine.name === "PostgreSQL" && n >= 50_000) {
        await setAll(client, { jit: "off" });
        logUnfiltered({
          ...base,
          method: "exact (today), jit off",
          build: "",
          plan: "",
          timing: await measure(queries, truth, (q) => repository.searchByVector(q, { limit: LIMIT })),
        });
        await resetAll(engine);
      }
      if (!SKIP.has("filtered")) {
        for (const [k, c] of cases.entries()) {
          const text = exactFilteredQuery(dimension);
          const timing = await measure(
            c.queries,
            filteredTruth[k] as Truth[],
            (q) => client.query<Hit>(text, [vectorParam(q), c.categories]),
            3,
          );
          const plan = await planOf(client, text, [vectorParam(c.queries[0] as number[]), c.categories]);
          filteredRows.push({
            ...base,
            filter: c.categories.join("+"),
            matches: matches[k] as number,
            where: c.where,
            plan: "exact filtered (btree)",
            timing,
            used: plan,
          });
          console.log(
            `  filter ${c.categories.join("+")} (${matches[k]} rows, ${c.where}) exact: recall ${timing.recall.toFixed(3)} (ties ${timing.tieRecall.toFixed(3)}) p50 ${fmt(timing.p50)} p95 ${fmt(timing.p95)} ms [${plan}]`,
          );
        }
        const countTiming = await measure(
          cases.map((c) => c.queries[0] as number[]),
          cases.map(() => truthOf([])),
          async (_q, i) => {
            await client.query("SELECT count(*) FROM products WHERE category = ANY($1::text[])", [
              (cases[i] as FilterCase).categories,
            ]);
            return [];
          },
          2,
        );
        console.log(
          `  count(*) of the filtered rows: p50 ${fmt(countTiming.p50)} ms, max p95 ${fmt(countTiming.p95)} ms`,
        );
      }

      // 3. HNSW on the vector (halfvec expression past 2,000 dims).
      const hnswBuild = await buildIndex(engine, "hnsw", dimension);
      console.log(`  HNSW ${hnswBuild}`);
      for (const [ef, k] of HNSW_CONFIGS) {
        await setAll(client, { ...ANN_SETTINGS(engine), "hnsw.ef_search": String(ef) });
        const text = annQuery("hnsw", dimension);
        logUnfiltered({
          ...base,
          method: `HNSW ef_search ${ef}, re-rank ${k}`,
          build: ef === HNSW_CONFIGS[0]?.[0] && k === HNSW_CONFIGS[0]?.[1] ? hnswBuild : "",
          plan: await planOf(client, text, [vectorParam(queries[0] as number[]), k]),
          timing: await measure(queries, truth, (q) => client.query<Hit>(text, [vectorParam(q), k])),
        });
      }
      await resetAll(engine);
      // The same through a transaction with SET LOCAL, as a per-request setting would be sent.
      {
        const text = annQuery("hnsw", dimension);
        // All settings in one statement: BEGIN, one set_config row, the query, COMMIT.
        const locals = Object.entries({ ...ANN_SETTINGS(engine), "hnsw.ef_search": "100" });
        const setLocal = `SELECT ${locals.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(", ")}`;
        logUnfiltered({
          ...base,
          method: "HNSW ef 100, re-rank 40, SET LOCAL in tx",
          build: "",
          plan: "",
          timing: await measure(queries, truth, (q) =>
            client.transaction(async (tx) => {
              await tx.query(setLocal, locals.flat());
              return tx.query<Hit>(text, [vectorParam(q), 40]);
            }),
          ),
        });
      }

      if (!SKIP.has("filtered")) await benchFiltered(engine, dimension, base, cases, filteredTruth, matches);
      if (!SKIP.has("planner")) await benchPlanner(engine, dimension, n, queries, truth);

      // 6. Binary quantization + exact re-rank (the HNSW index stays: it cannot serve these queries).
      if (!SKIP.has("bq")) {
        const bqBuild = await buildIndex(engine, "bq", dimension);
        console.log(`  BQ ${bqBuild}`);
        for (const [ef, k] of BQ_CONFIGS) {
          await setAll(client, { ...ANN_SETTINGS(engine), "hnsw.ef_search": String(ef) });
          const text = annQuery("bq", dimension);
          logUnfiltered({
            ...base,
            method: `BQ ef_search ${ef}, re-rank ${k}`,
            build: ef === BQ_CONFIGS[0]?.[0] && k === BQ_CONFIGS[0]?.[1] ? bqBuild : "",
            plan: await planOf(client, text, [vectorParam(queries[0] as number[]), k]),
            timing: await measure(queries, truth, (q) => client.query<Hit>(text, [vectorParam(q), k])),
          });
        }
        await resetAll(engine);
      }

      // 7. Writes with the indexes present, then absent: rows of the next size.
      if (!SKIP.has("inserts") && loaded + 3 * (SINGLE_INSERTS + COPY_INSERTS) <= space.rows) {
        const conditions = SKIP.has("bq") ? ["hnsw", "none"] : ["hnsw+bq", "hnsw", "none"];
        for (const indexes of conditions) {
          if (indexes === "hnsw") await client.query("DROP INDEX IF EXISTS products_bq");
          if (indexes === "none") await client.query("DROP INDEX IF EXISTS products_hnsw");
          const single = await insertRows(engine, space, loaded, loaded + SINGLE_INSERTS);
          loaded += SINGLE_INSERTS;
          const copy = await copyRows(engine, space, loaded, loaded + COPY_INSERTS);
          loaded += COPY_INSERTS;
          writeRows.push({ ...base, indexes, single, copy });
          console.log(
            `  writes with ${indexes}: single INSERT ${single.toFixed(0)} rows/s, COPY ${copy.toFixed(0)} rows/s`,
          );
        }
      }
      await client.query("DROP INDEX IF EXISTS products_bq");
      await client.query("DROP INDEX IF EXISTS products_hnsw");
    }
  } finally {
    await engine.close();
  }
}

/** Builds one ANN index; "12.3 s, 45 MB, maintenance_work_mem X". */
async function buildIndex(engine: Engine, kind: IndexKind, dimension: number): Promise<string> {
  const memory = engine.name === "PostgreSQL" ? "2GB" : "512MB";
  await engine.client.query(`SET maintenance_work_mem = '${memory}'`);
  const started = performance.now();
  await engine.client.query(annIndexDdl(kind, dimension));
  const seconds = (performance.now() - started) / 1000;
  await engine.client.query("RESET maintenance_work_mem");
  await engine.client.query(`ANALYZE products`);
  const [size] = await engine.client.query<{ b: string }>(`SELECT pg_relation_size('products_${kind}') AS b`);
  return `build ${seconds.toFixed(1)} s, ${mb(size?.b ?? 0).toFixed(0)} MB`;
}

// ---------------------------------------------------------------------------------------------
// 4. Filtered queries, with the HNSW index present

async function benchFiltered(
  engine: Engine,
  dimension: number,
  base: { engine: string; dims: number; n: number },
  cases: readonly FilterCase[],
  truth: readonly Truth[][],
  matches: readonly number[],
): Promise<void> {
  const { client } = engine;
  const plans: { label: string; text: string; candidates: number; settings: Record<string, string> }[] =
    ITERATIVE_CONFIGS.map(([ef, max, candidates, order]) => ({
      label: `iterative ${order} ef ${ef}, max_scan_tuples ${max}, re-rank ${candidates}`,
      text: annQuery("hnsw", dimension, "ann"),
      candidates,
      settings: {
        ...ANN_SETTINGS(engine),
        "hnsw.iterative_scan": order,
        "hnsw.ef_search": String(ef),
        "hnsw.max_scan_tuples": String(max),
      },
    }));
  plans.push({
    label: "planner's choice (iterative ef 100 on)",
    text: annQuery("hnsw", dimension, "plain"),
    candidates: FILTER_CANDIDATES,
    settings: { "hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "100" },
  });
  for (const plan of plans) {
    await resetAll(engine);
    await setAll(client, plan.settings);
    for (const [k, c] of cases.entries()) {
      const params = (q: number[]) => [vectorParam(q), plan.candidates, c.categories];
      const { text } = plan;
      const used = await planOf(client, text, params(c.queries[0] as number[]));
      const timing = await measure(c.queries, truth[k] as Truth[], (q) => client.query<Hit>(text, params(q)), 3);
      filteredRows.push({
        ...base,
        filter: c.categories.join("+"),
        matches: matches[k] as number,
        where: c.where,
        plan: plan.label,
        timing,
        used,
      });
      console.log(
        `  filter ${c.categories.join("+")} (${matches[k]}, ${c.where}) ${plan.label}: recall ${timing.recall.toFixed(3)} (ties ${timing.tieRecall.toFixed(3)}) ` +
          `p50 ${fmt(timing.p50)} p95 ${fmt(timing.p95)} ms short ${timing.short}/${c.queries.length} [${used}]`,
      );
    }
  }
  await resetAll(engine);
}

// ---------------------------------------------------------------------------------------------
// 5. Planner behaviour: does the candidate stage use the index?

/**
 * Without iterative scans an HNSW scan returns at most hnsw.ef_search rows: asking for ef + 10
 * tells an index scan (ef rows) from a sequential scan (ef + 10), execution by execution, through
 * the app's own query path (a prepared statement on postgres.js, reused by its text).
 */
async function benchPlanner(
  engine: Engine,
  dimension: number,
  n: number,
  queries: readonly number[][],
  truth: readonly Truth[],
): Promise<void> {
  const { client } = engine;
  const order = annOrder("hnsw", dimension);
  const scenarios: { label: string; settings: Record<string, string> }[] = [
    { label: "defaults", settings: {} },
    { label: "enable_seqscan off", settings: { enable_seqscan: "off" } },
  ];
  if (engine.name === "PostgreSQL") {
    scenarios.push({ label: "plan_cache_mode force_custom_plan", settings: { plan_cache_mode: "force_custom_plan" } });
  }
  const head = `${engine.name} ${dimension}d ${n}`;
  for (const ef of [40, 400]) {
    if (n <= ef + 10) continue;
    for (const scenario of scenarios) {
      await resetAll(engine);
      await setAll(engine.client, { ...scenario.settings, "hnsw.ef_search": String(ef) });
      // A distinct text per scenario: postgres.js reuses a prepared statement by its text.
      const text = `SELECT id FROM products ORDER BY ${order} LIMIT $2 /* ${scenario.label} ${ef} */`;
      let pattern = "";
      for (let i = 0; i < 10; i++) {
        const rows = await client.query(text, [vectorParam(queries[i] as number[]), ef + 10]);
        pattern += rows.length === ef + 10 ? "S" : rows.length <= ef ? "I" : "?";
      }
      const line = `${head}: ef_search ${ef}, ${scenario.label}: ${pattern} (I index, S seq scan; 10 executions)`;
      plannerLines.push(line);
      console.log(`  planner ${line}`);
    }
  }
  // hnsw.ef_search set by SET LOCAL in a transaction reaches a reused (possibly generic) plan.
  await resetAll(engine);
  if (n > 60) {
    const text = `SELECT id FROM products ORDER BY ${order} LIMIT $2 /* set local */`;
    let pattern = "";
    for (let i = 0; i < 10; i++) {
      const ef = i % 2 === 0 ? 20 : 40;
      const rows = await client.transaction(async (tx) => {
        await tx.query("SELECT set_config('enable_seqscan', 'off', true)");
        await tx.query("SELECT set_config('hnsw.ef_search', $1, true)", [String(ef)]);
        return tx.query(text, [vectorParam(queries[i] as number[]), 50]);
      });
      pattern += rows.length === 50 ? "S" : rows.length <= ef ? "I" : "?";
    }
    const line = `${head}: SET LOCAL ef_search 20/40 alternating + SET LOCAL enable_seqscan off in a transaction: ${pattern}`;
    plannerLines.push(line);
    console.log(`  planner ${line}`);
  }
  // Today's exact query with the ANN index present: does it turn approximate?
  const exactPlan = await planOf(client, todaysExactQuery(dimension), [vectorParam(queries[0] as number[]), LIMIT]);
  const repository = new PostgresProducts(client, dimension).in("default");
  const exact = await measure(queries, truth, (q) => repository.searchByVector(q, { limit: LIMIT }));
  const line =
    `${head}: today's exact query with the HNSW index present: [${exactPlan}], ` +
    `recall ${exact.recall.toFixed(3)}, p50 ${fmt(exact.p50)} ms`;
  plannerLines.push(line);
  console.log(`  planner ${line}`);
  await resetAll(engine);
}

// ---------------------------------------------------------------------------------------------

const started = performance.now();
for (const engineName of ENGINES) {
  for (const dimension of DIMS) {
    const source = args["model-dir"] ? await minilmSource(args["model-dir"], dimension) : syntheticSource(dimension);
    if (engineName === "pg") {
      await benchEngine(() => openPostgres(args["database-url"]), source, sizesOf(args["pg-sizes"]));
    } else if (engineName === "pglite") {
      await benchEngine(openPgliteEngine, source, sizesOf(args["pglite-sizes"]));
    } else {
      throw new Error(`unknown engine "${engineName}" (pg, pglite)`);
    }
  }
}

console.log(
  `\n${QUERIES} unfiltered queries (${WARMUP} warm-up), ${FILTERED_QUERIES} per filtered case; limit ${LIMIT}; ` +
    `HNSW m ${HNSW_M}, ef_construction ${HNSW_EF_CONSTRUCTION}; latency: best of ${REPEAT} pass(es)`,
);
console.log("latency: client call to rows, one connection, one query at a time; recall@10 against the exact top 10.\n");
console.log("| engine | dims | products | COPY rows/s | VACUUM ANALYZE s | table MB |\n|---|---:|---:|---:|---:|---:|");
for (const line of loadRows) console.log(line);
console.log(
  "\n| engine | dims | products | method | recall@10 | with ties | p50 ms | p95 ms | plan | build |\n|---|---:|---:|---|---:|---:|---:|---:|---|---|",
);
for (const r of unfilteredRows) {
  console.log(
    `| ${r.engine} | ${r.dims} | ${r.n} | ${r.method} | ${r.timing.recall.toFixed(3)} | ${r.timing.tieRecall.toFixed(3)} | ${fmt(r.timing.p50)} | ${fmt(r.timing.p95)} | ${r.plan} | ${r.build} |`,
  );
}
console.log(
  "\n| engine | dims | products | filter (rows) | query | plan | recall@10 | with ties | p50 ms | p95 ms | short | used |\n|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---|",
);
for (const r of filteredRows) {
  console.log(
    `| ${r.engine} | ${r.dims} | ${r.n} | ${r.filter} (${r.matches}) | ${r.where} | ${r.plan} | ${r.timing.recall.toFixed(3)} | ${r.timing.tieRecall.toFixed(3)} | ${fmt(r.timing.p50)} | ${fmt(r.timing.p95)} | ${r.timing.short}/${FILTERED_QUERIES} | ${r.used} |`,
  );
}
console.log(
  "\n| engine | dims | products | indexes present | single INSERT rows/s | COPY rows/s |\n|---|---:|---:|---|---:|---:|",
);
for (const r of writeRows) {
  console.log(`| ${r.engine} | ${r.dims} | ${r.n} | ${r.indexes} | ${r.single.toFixed(0)} | ${r.copy.toFixed(0)} |`);
}
console.log("\n| engine | dims | vectors | products | median cosine at rank |\n|---|---:|---|---:|---|");
for (const line of profileLines) console.log(line);
console.log("\nplanner:");
for (const line of plannerLines) console.log(`- ${line}`);
console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s`);
