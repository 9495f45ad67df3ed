/**
 * Search latency of the exact cosine scan, through the real PostgresProductRepository
 * (`searchByVector`, limit 10): median and p95 over timed queries after a warm-up, on the embedded
 * PGlite (in memory, or a temp folder with --pglite-dir) and, when DATABASE_URL or --database-url is
 * given, on a PostgreSQL server, at several catalogue sizes and embedding dimensions. Also prints
 * the load rate, the table size, the RSS of this process, the cost of passing one query vector as
 * text (part of every search), and whether the top 10 equal a brute-force ranking done here.
 *
 * Run by hand: `bun bench/search.ts [--sizes 1000,5000,12430] [--dims 384,3072] [--queries 50]
 * [--warmup 5] [--database-url postgres://...] [--no-pglite] [--pglite-dir] [--products file.jsonl.gz]`
 *
 * The vectors are synthetic and "embedding-like", with the real product texts (see vectors.ts).
 *
 * On a server the tables live in a schema of their own (`bench_search`), dropped before and after.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { prepareDatabase, vectorParam } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import { DatabaseUnavailable } from "../src/domain/errors.ts";
import { DEFAULT_PRODUCTS_FILE, loadCatalogue, normalize, SyntheticSpace } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,5000,12430" },
    dims: { type: "string", default: "384,3072" },
    queries: { type: "string", default: "50" },
    warmup: { type: "string", default: "5" },
    "database-url": { type: "string" },
    "no-pglite": { type: "boolean", default: false },
    "pglite-dir": { type: "boolean", default: false },
    products: { type: "string", default: DEFAULT_PRODUCTS_FILE },
  },
});

const positiveInts = (text: string) =>
  text.split(",").map((part) => {
    const n = Number(part.trim().replaceAll("_", ""));
    if (!Number.isInteger(n) || n < 1) throw new Error(`not a positive integer: "${part}"`);
    return n;
  });
const SIZES = [...new Set(positiveInts(args.sizes))].sort((a, b) => a - b);
const DIMS = positiveInts(args.dims);
const [QUERIES = 50] = positiveInts(args.queries);
const [WARMUP = 5] = positiveInts(args.warmup);
const DATABASE_URL = args["database-url"] ?? process.env.DATABASE_URL;
const LIMIT = 10;
/** Queries whose top 10 are also ranked by brute force here, as a check that the bench searches what it loaded. */
const CHECKED = 5;
/** Rows per INSERT statement (4 parameters each); each load step is one transaction. */
const ROWS_PER_INSERT = 200;
const SCHEMA = "bench_search";

const catalogue = loadCatalogue(args.products);

// ---------------------------------------------------------------------------------------------
// Loading

/**
 * Text `vector` parameters are slow to parse in PGlite (~6–10 ms per 3072-d vector: strtof in WASM),
 * which caps text INSERTs at ~180 rows/s. Integers parse fast, so each vector goes in as an int4[]
 * of its components × 1e6 and is made a unit vector again in SQL (`l2_normalize`): the stored
 * vector is the synthetic one to ~6 digits, which changes nothing for a latency bench.
 */
const INT_SCALE = 1e6;

/** The stored vector as the server sees it, for the brute-force check. */
function quantized(v: Float64Array): { ints: number[]; unit: Float64Array } {
  const ints = Array.from(v, (x) => Math.round(x * INT_SCALE));
  return { ints, unit: normalize(Float64Array.from(ints)) };
}

/** A running top 10 (distance, then id, as the repository orders) of one checked query. */
class BruteForceTop {
  private readonly best: { id: number; distance: number }[] = [];

  constructor(readonly query: Float64Array) {}

  offer(id: number, unit: Float64Array): void {
    let dot = 0;
    for (let j = 0; j < unit.length; j++) dot += (unit[j] as number) * (this.query[j] as number);
    const distance = 1 - dot;
    const last = this.best.at(-1);
    if (this.best.length === LIMIT && last && distance >= last.distance) return;
    this.best.push({ id, distance });
    this.best.sort((a, b) => a.distance - b.distance || a.id - b.id);
    if (this.best.length > LIMIT) this.best.pop();
  }

  ids(): number[] {
    return this.best.map((hit) => hit.id);
  }
}

/**
 * Inserts rows [from, to) in one transaction (ids are then the 1-based row numbers of a fresh
 * identity) and returns the seconds spent in the database, i.e. without making the vectors here.
 */
async function load(
  client: SqlClient,
  space: SyntheticSpace,
  from: number,
  to: number,
  checks: BruteForceTop[],
): Promise<number> {
  let generating = 0;
  const started = performance.now();
  await client.transaction(async (tx) => {
    for (let start = from; start < to; start += ROWS_PER_INSERT) {
      const generationStarted = performance.now();
      const params: unknown[] = [];
      const rows: string[] = [];
      for (let row = start; row < Math.min(to, start + ROWS_PER_INSERT); row++) {
        const product = space.text(row);
        const { ints, unit } = quantized(space.product(row));
        for (const check of checks) check.offer(row + 1, unit);
        const p = params.length;
        rows.push(`($${p + 1}, $${p + 2}, $${p + 3}, 'bench', l2_normalize($${p + 4}::int4[]::vector))`);
        params.push(product.name, product.description, product.category, `{${ints.join(",")}}`);
      }
      generating += performance.now() - generationStarted;
      await tx.query(
        `INSERT INTO products (name, description, category, content_digest, embedding) VALUES ${rows.join(", ")}`,
        params,
      );
    }
  });
  return (performance.now() - started - generating) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Figures {
  database: string;
  dimension: number;
  products: number;
  loadRowsPerSecond: number;
  medianMs: number;
  p95Ms: number;
  maxMs: number;
  vectorParamMs: number;
  tableMb: number;
  rssMb: number;
  /** Mean share of the brute-force top 10 found in the repository's top 10. */
  exactAgreement: number;
}

const median = (sorted: readonly number[]) => percentile(sorted, 0.5);
/** Nearest-rank percentile of ascending values. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number;
}
const mb = (bytes: number) => bytes / 1024 / 1024;

interface Target {
  name: string;
  /** A fresh, empty database (or schema) for one dimension. */
  open(): Promise<SqlClient>;
  /** Closes it and removes whatever it created. */
  dispose(client: SqlClient): Promise<void>;
  /** Releases what the target itself holds, once every dimension is done. */
  end(): Promise<void>;
}

async function benchDimension(target: Target, dimension: number): Promise<Figures[]> {
  const client = await target.open();
  const figures: Figures[] = [];
  try {
    await prepareDatabase(client, { model: "bench", dimension });
    const repository = new PostgresProducts(client, dimension).in("default");
    const space = new SyntheticSpace(catalogue, dimension);
    const queries = Array.from({ length: WARMUP + QUERIES }, (_, i) => space.query(i));
    const checks = queries.slice(WARMUP, WARMUP + CHECKED).map((q) => new BruteForceTop(Float64Array.from(q)));
    let loaded = 0;
    for (const size of SIZES) {
      const loadRowsPerSecond = (size - loaded) / (await load(client, space, loaded, size, checks));
      loaded = size;
      await client.query("ANALYZE products");

      for (const query of queries.slice(0, WARMUP)) await repository.searchByVector(query, { limit: LIMIT });
      const latencies: number[] = [];
      let agreement = 0;
      for (const [i, query] of queries.slice(WARMUP).entries()) {
        const started = performance.now();
        const hits = await repository.searchByVector(query, { limit: LIMIT });
        latencies.push(performance.now() - started);
        if (hits.length !== Math.min(LIMIT, size)) throw new Error(`expected ${LIMIT} hits, got ${hits.length}`);
        const expected = checks[i]?.ids();
        if (expected) agreement += hits.filter((hit) => expected.includes(hit.id)).length / expected.length;
      }
      latencies.sort((a, b) => a - b);

      // What every search pays before scanning anything: sending and parsing its vector as text.
      const parse: number[] = [];
      for (const query of queries.slice(WARMUP)) {
        const started = performance.now();
        await client.query("SELECT vector_dims($1::vector)", [vectorParam(query)]);
        parse.push(performance.now() - started);
      }
      parse.sort((a, b) => a - b);

      const [table] = await client.query<{ bytes: string | number }>(
        "SELECT sum(pg_total_relation_size(inhrelid)) AS bytes FROM pg_inherits WHERE inhparent = 'products'::regclass",
      );
      const row: Figures = {
        database: target.name,
        dimension,
        products: size,
        loadRowsPerSecond,
        medianMs: median(latencies),
        p95Ms: percentile(latencies, 0.95),
        maxMs: latencies.at(-1) as number,
        vectorParamMs: median(parse),
        tableMb: mb(Number(table?.bytes ?? 0)),
        rssMb: mb(process.memoryUsage().rss),
        exactAgreement: agreement / Math.min(CHECKED, QUERIES),
      };
      figures.push(row);
      console.log(
        `${row.database} ${dimension}d ${size} products: load ${row.loadRowsPerSecond.toFixed(0)} rows/s, ` +
          `search median ${row.medianMs.toFixed(1)} ms, p95 ${row.p95Ms.toFixed(1)} ms ` +
          `(vector parameter ${row.vectorParamMs.toFixed(1)} ms), RSS ${row.rssMb.toFixed(0)} MB`,
      );
    }
  } finally {
    await target.dispose(client);
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------
// Targets

function pgliteTarget(): Target {
  let dir: string | undefined;
  return {
    name: args["pglite-dir"] ? "PGlite (temp dir)" : "PGlite (memory)",
    async open() {
      if (args["pglite-dir"]) dir = await mkdtemp(join(tmpdir(), "sku-search-bench-"));
      return openPglite(dir);
    },
    async dispose(client) {
      await client.close();
      if (dir) await rm(dir, { recursive: true, force: true });
      dir = undefined;
    },
    end: async () => {},
  };
}

/** A PostgreSQL server, in the schema `bench_search` (dropped before each dimension and at the end). */
function postgresTarget(url: string): Target {
  const admin = connectPostgres(url, { maxConnections: 1, connectTimeoutSeconds: 5 });
  const inSchema = new URL(url);
  inSchema.searchParams.set("search_path", `${SCHEMA},public`);
  return {
    name: "PostgreSQL",
    async open() {
      await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await admin.query(`CREATE SCHEMA ${SCHEMA}`);
      return connectPostgres(inSchema.href, { maxConnections: 2 });
    },
    async dispose(client) {
      await client.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    },
    end: () => admin.close(),
  };
}

async function serverDescription(url: string): Promise<string | null> {
  const client = connectPostgres(url, { maxConnections: 1, connectTimeoutSeconds: 5 });
  try {
    const [row] = await client.query<{ server: string; vector: string | null }>(
      "SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector",
    );
    return `PostgreSQL ${row?.server}, pgvector ${row?.vector ?? "(not yet created)"}`;
  } catch (error) {
    if (error instanceof DatabaseUnavailable) return null;
    throw error;
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------

const targets: Target[] = [];
if (!args["no-pglite"]) targets.push(pgliteTarget());
const redacted = DATABASE_URL?.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
if (DATABASE_URL) {
  const description = await serverDescription(DATABASE_URL);
  if (description) {
    console.log(`server: ${description} at ${redacted}`);
    targets.push(postgresTarget(DATABASE_URL));
  } else {
    console.log(`PostgreSQL at ${redacted} does not answer: measuring PGlite only`);
  }
} else {
  console.log("no DATABASE_URL / --database-url: measuring PGlite only");
}
console.log(
  `RSS before opening a database: ${mb(process.memoryUsage().rss).toFixed(0)} MB; ` +
    `${catalogue.length} catalogue products; sizes ${SIZES.join(", ")}; dimensions ${DIMS.join(", ")}; ` +
    `${WARMUP} warm-up + ${QUERIES} timed queries each, limit ${LIMIT}`,
);

const started = performance.now();
const all: Figures[] = [];
for (const target of targets) {
  for (const dimension of DIMS) all.push(...(await benchDimension(target, dimension)));
}

console.log(
  "\n| database | dims | products | load rows/s | median ms | p95 ms | max ms | vector param ms | table MB | RSS MB | top-10 = exact |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const f of all) {
  console.log(
    `| ${f.database} | ${f.dimension} | ${f.products} | ${f.loadRowsPerSecond.toFixed(0)} | ${f.medianMs.toFixed(1)} | ` +
      `${f.p95Ms.toFixed(1)} | ${f.maxMs.toFixed(1)} | ${f.vectorParamMs.toFixed(1)} | ${f.tableMb.toFixed(0)} | ` +
      `${f.rssMb.toFixed(0)} | ${f.exactAgreement.toFixed(2)} |`,
  );
}
console.log(
  "\nlatency: one searchByVector (limit 10) from call to rows, one client, one query at a time; " +
    "vector param: a `SELECT $1::vector` round trip, included in every search; load: the rows added " +
    "at that size, time in the database only (not making the vectors); table: with its TOAST; " +
    "RSS: this process (PGlite's database lives in it, a server's does not).",
);
console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
for (const target of targets) await target.end();
