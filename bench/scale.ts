/**
 * The catalogue at scale, up to 1,000,000 × 3072 on one machine: bulk ingest against the binary
 * COPY floor, the vector index's build, search latency and recall, and writes with the index live,
 * on PostgreSQL (DATABASE_URL or --database-url) or PGlite.
 *
 *   bun run bench:scale -- --n 100000 [--database-url postgres://...] [--engine pg|pglite]
 *     [--index ivf-bq|hnsw-bq|halfvec] [--sample 40000] [--live 5000] [--dimension 3072]
 *     [--latency-ms 200] [--batch 1000] [--clients 4] [--queries 100] [--filtered-queries 10] [--fresh-queries 200]
 *     [--passes 3] [--scan 5,10,20] [--rerank 40,100,200] [--probes auto|P] [--ef-search E] [--rerank-depth R]
 *     [--build-memory auto|1GB] [--build-workers 2] [--keep] [--reuse DATABASE] [--quick] [--profile DIR]
 *     [--provider-encoding base64|float] [--filter-exact-max-rows R] [--filter-far-exact-max-rows R]
 *
 * With N products in the end (cumulative, in one new database; every vector is made as it is
 * written, never all held in memory: 1,000,000 × 3072 is 12 GB):
 * 1. the service (`bun run cli serve`, VECTOR_INDEX=off so the bench decides when to build) makes
 *    the schema; N − 2 × sample products are written by binary COPY straight from the bench;
 * 2. after VACUUM ANALYZE and a CHECKPOINT (the fill's aftermath would otherwise fall on one of
 *    them), the floor: `sample` products by binary COPY into the same table (copy_per_s: the
 *    database's own work, the rows encoded beforehand), and `sample` more through POST /products/bulk
 *    (ingest_per_s: NDJSON, `--batch` items a request, `--clients` at a time), embedded by a fake
 *    OpenAI-compatible provider on 127.0.0.1 that answers each call after `--latency-ms` with
 *    clustered, embedding-like vectors (bench/vectors.ts productLowRank, made before the clock
 *    starts), in base64 as OpenAI does (or JSON numbers: `--provider-encoding float`, which the
 *    service is then set to ask for); on a server each in two halves, taking turns;
 * 3. with the service stopped, the exact answers of `--queries` unfiltered queries and of filtered
 *    ones (categories of about 0.1, 1, 5 and 30 % of the products, queries near and far), through
 *    the repository's exact plan: the reference for recall@10;
 * 4. the index build (SqlVectorIndex.build, as `index build` does; its progress is printed as the
 *    database reports it), then search latency (PostgresProductRepository.searchByVector, the SQL
 *    part of a search, one query at a time, `--passes` times each) and recall@10 at each `--scan`
 *    (IVFFlat probes, or HNSW ef_search) × `--rerank` depth, then at the service's settings
 *    (`--probes`, `--ef-search`, `--rerank-depth`: the JSON's figures) with filtered recall; and
 *    `--fresh-queries` more at those settings, each searched once, near rows no query before was
 *    (fresh_p50_ms: a query seen for the first time, whose rows the database may have to read from
 *    the disk; the others' rows were read by their exact search, then by each pass);
 * 5. with the index live: `--live` products through the bulk path (ingest_live_index_per_s), then
 *    `--live` by COPY (copy_live_index_per_s).
 * In step 2, on a server on this machine, each phase's CPU per row is counted (the server's processes,
 * the service's, this process's: its client and fake provider) with the cores busy meanwhile.
 * The settings, each phase's figures and the load average are printed; the last line is one JSON
 * object. `--quick` (CI) runs it all on 3,000 products in about a minute, so the bench does not rot.
 * On a server the bench creates and drops its own database (`--keep` leaves it, with its index;
 * `--reuse` names such a database, of the same `--n`, to measure its searches again: steps 3 and 4
 * without the load, the build or the writes, to compare two versions of the code on the same rows).
 * At 1,000,000 × 3072 the table takes about 21 GB and the run took 15 to 30 minutes (load 1 to 7); give
 * PostgreSQL shared_buffers of at least 2 GB (README "Vector index").
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../scripts/free-port.ts";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { type CopyField, encodeCopyRows } from "../src/adapters/postgres/binary-copy.ts";
import {
  DEFAULT_SEARCH_PLAN,
  type PostgresProductRepository,
  PostgresProducts,
} from "../src/adapters/postgres/product-repository.ts";
import { BINARY_QUANTIZED_COLUMN, cataloguePartition, vectorParam } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import {
  IndexesInUse,
  indexTarget,
  probesFor,
  reranked,
  SqlVectorIndex,
  VECTOR_INDEX_KIND_SETTINGS,
  type VectorIndexKindSetting,
  vectorSessionSettings,
} from "../src/adapters/postgres/vector-index.ts";
import { embeddingText } from "../src/domain/product.ts";
import { machineBusyMs, postmasterOf, processCpuMs, serverCpuMs, serverMemoryMb } from "./server-cpu.ts";
import {
  type CatalogueProduct,
  DEFAULT_PRODUCTS_FILE,
  loadCatalogue,
  SyntheticSpace,
  seedOf,
  syntheticProduct,
} from "./vectors.ts";

/** The default catalogue's partition of products (schema.ts): the catalogue the bench fills and indexes. */
const TABLE = cataloguePartition(1);

const { values: args } = parseArgs({
  options: {
    n: { type: "string", default: "100000" },
    engine: { type: "string", default: "pg" },
    "database-url": {
      type: "string",
      default: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:55432/postgres",
    },
    index: { type: "string", default: "ivf-bq" },
    sample: { type: "string" },
    live: { type: "string" },
    dimension: { type: "string", default: "3072" },
    "latency-ms": { type: "string", default: "200" },
    batch: { type: "string", default: "1000" },
    clients: { type: "string", default: "4" },
    queries: { type: "string", default: "100" },
    "filtered-queries": { type: "string", default: "10" },
    "fresh-queries": { type: "string", default: "200" },
    passes: { type: "string", default: "3" },
    scan: { type: "string" },
    rerank: { type: "string" },
    "ef-search": { type: "string", default: String(DEFAULT_SEARCH_PLAN.efSearch) },
    probes: { type: "string", default: String(DEFAULT_SEARCH_PLAN.probes) },
    "rerank-depth": { type: "string", default: String(DEFAULT_SEARCH_PLAN.rerankDepth) },
    "filter-exact-max-rows": { type: "string", default: String(DEFAULT_SEARCH_PLAN.filterExactMaxRows) },
    "filter-far-exact-max-rows": { type: "string", default: String(DEFAULT_SEARCH_PLAN.filterFarExactMaxRows) },
    "build-memory": { type: "string", default: "auto" },
    "build-workers": { type: "string", default: "2" },
    products: { type: "string", default: DEFAULT_PRODUCTS_FILE },
    keep: { type: "boolean", default: false },
    reuse: { type: "string" },
    quick: { type: "boolean", default: false },
    profile: { type: "string" },
    "provider-encoding": { type: "string", default: "base64" },
  },
});

const QUICK = args.quick === true;
const ENGINE = args.engine === "pglite" ? "pglite" : "pg";
const N = QUICK ? 3000 : Number(String(args.n).replaceAll("_", ""));
const BATCH = Number(args.batch);
const CLIENTS = Number(args.clients);
/**
 * Five requests a client in each of the two halves (40,000 products by default), at most 40 % of N:
 * with fewer, the start of each half (every client waiting for its first embeddings at once) and its
 * last round (fewer clients than requests left) are a large part of it, and the ratio to COPY
 * measured the bench's rounds more than the service (README "Vector index", stop 44).
 */
const SAMPLE = Number(args.sample ?? (QUICK ? 500 : Math.min(2 * 5 * BATCH * CLIENTS, Math.floor(N * 0.4))));
const LIVE = Number(args.live ?? (QUICK ? 300 : Math.min(5_000, Math.floor(N / 10))));
const FILL = N - 2 * SAMPLE;
const DIMENSION = Number(args.dimension);
const KIND = (VECTOR_INDEX_KIND_SETTINGS.find((kind) => kind === args.index) ??
  "ivf-bq") satisfies VectorIndexKindSetting;
const TARGET = indexTarget(DIMENSION, KIND);
const IVF = TARGET?.kind === "ivf-bq";
const LATENCY_MS = Number(args["latency-ms"]);
/** How the fake provider sends vectors, and the service asks for them (OPENAI_EMBEDDING_ENCODING). */
const PROVIDER_ENCODING = args["provider-encoding"] === "float" ? "float" : "base64";
const QUERIES = QUICK ? 20 : Number(args.queries);
const FILTERED_QUERIES = QUICK ? 3 : Number(args["filtered-queries"]);
const FRESH_QUERIES = QUICK ? 20 : Number(args["fresh-queries"]);
const PASSES = QUICK ? 1 : Number(args.passes);
const EF_SEARCH = Number(args["ef-search"]);
const PROBES: number | "auto" = args.probes === "auto" ? "auto" : Number(args.probes);
/** The index scan's own setting, which the grid varies: IVFFlat's probes, or HNSW's ef_search. */
const SCAN_SETTING = IVF ? "ivfflat.probes" : "hnsw.ef_search";
const SCAN_LABEL = IVF ? "probes" : "ef_search";
const RERANK_DEPTH = Number(args["rerank-depth"]);
const list = (text: string | undefined, fallback: number[]) => (text ? text.split(",").map(Number) : fallback);
const SCANS = list(args.scan, QUICK ? [] : IVF ? [5, 10, 20] : [40, 100, 200]);
const RERANKS = reranked(TARGET?.kind) ? list(args.rerank, QUICK ? [RERANK_DEPTH] : [40, 100, 200]) : [RERANK_DEPTH];
const PLAN = {
  ...DEFAULT_SEARCH_PLAN,
  filterExactMaxRows: Number(args["filter-exact-max-rows"]),
  filterFarExactMaxRows: Number(args["filter-far-exact-max-rows"]),
};
const K = 10;
const PROJECT = resolve(import.meta.dir, "..");
/** A database kept by an earlier run's `--keep`, measured again: no load, no build, no writes. */
const REUSE = args.reuse;
if (REUSE !== undefined && !/^sku_scale_bench_[0-9]+$/.test(REUSE))
  throw new Error(`--reuse ${REUSE}: not a kept bench database`);
if (REUSE !== undefined && ENGINE !== "pg") throw new Error("--reuse: a kept database is a server's (--engine pg)");
const DATABASE = REUSE ?? `sku_scale_bench_${process.pid}`;
if (FILL < 0 || SAMPLE < 1 || LIVE < 0) throw new Error(`--n ${N} must be at least twice --sample ${SAMPLE}`);

/**
 * The texts: the catalogue's (../shared/eval, or --products), or where that file is not (CI) a
 * made-up one of 1,000 products in categories of skewed sizes, as a shop's are.
 */
function catalogue(): { products: CatalogueProduct[]; source: string } {
  const file = args.products as string;
  if (existsSync(file)) return { products: loadCatalogue(file), source: file };
  const shares = [0.3, 0.2, 0.12, 0.1, 0.08, 0.06, 0.05, 0.04, 0.03, 0.01, 0.005, 0.003, 0.001, 0.001];
  const products: CatalogueProduct[] = [];
  shares.forEach((share, c) => {
    for (let i = 0; i < Math.max(1, Math.round(share * 1000)); i++) {
      const category = `Category ${c}`;
      const sub = `${category} > Line ${i % 4}`;
      products.push({ name: `Product ${c}.${i}`, description: `${sub}, item ${i}`, category, keys: [category, sub] });
    }
  });
  return { products, source: `${products.length} made-up products (${file} is not there)` };
}
const texts = catalogue();
const space = new SyntheticSpace(texts.products, DIMENSION);

/** Row `row` as the bulk path takes it: the catalogue's texts, cycled, the row number in the name. */
const productOf = (row: number) => syntheticProduct(space, row);

/**
 * The row a product text was made from (the fake provider answers with that row's vector): its name
 * ends in ` #row`, and the service embeds "name. category. description" (embeddingText).
 */
function rowOfText(text: string): number | undefined {
  const match = / #(\d+)(?=\. |$)/.exec(text);
  return match ? Number(match[1]) : undefined;
}

// ---------------------------------------------------------------- fake provider

/** Every value from -1 to 1 in steps of 1e-5, written as JSON: formatting a vector is then a lookup per value. */
const DECIMALS = Array.from({ length: 200_001 }, (_, i) => String((i - 100_000) / 100_000));

/**
 * The vectors of the rows about to go through the bulk path, as JSON values (a base64 string, or
 * numbers with --provider-encoding float), made before the clock starts:
 * the provider's work is not the service's (a real provider computes elsewhere), and making them
 * during the run took this process a third of a millisecond of CPU a row on the two cores that the
 * service and PostgreSQL share, as much as either of them. The COPY floor is measured alike.
 */
const rendered = new Map<number, string>();
function renderVectors(from: number, to: number): void {
  rendered.clear();
  for (let row = from; row < to; row++) rendered.set(row, rowJson(row));
}

/**
 * Texts the fake provider embedded during a bulk phase that were not made beforehand: each cost this
 * process a vector's making on the cores the service and PostgreSQL share. When the service's
 * embedded text stopped matching rowOfText, every product was one (0.17 ms of CPU a product, and
 * the bulk path measured 0.38 to 0.46 × COPY instead of 0.52 to 0.62).
 */
let unrendered = 0;

/** The vector of an embedded text as a JSON value (rounded to 1e-5; the components are about 0.02 at 3072 dims). */
function vectorJson(text: string): string {
  const row = rowOfText(text);
  const made = row === undefined ? undefined : rendered.get(row);
  if (made !== undefined) return made;
  unrendered++;
  if (row !== undefined) return rowJson(row);
  return toJson(space.productLowRank(seedOf(text) % texts.products.length, 1.3, text));
}

const rowJson = (row: number) => toJson(space.productLowRank(row));

function toJson(vector: Float64Array): string {
  if (PROVIDER_ENCODING === "base64") return `"${Buffer.from(new Float32Array(vector).buffer).toString("base64")}"`;
  const parts = new Array<string>(vector.length);
  for (let i = 0; i < vector.length; i++) {
    parts[i] = DECIMALS[Math.round((vector[i] as number) * 100_000) + 100_000] as string;
  }
  return `[${parts.join(",")}]`;
}

function startFakeProvider() {
  let calls = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      if (new URL(request.url).pathname !== "/v1/embeddings") return new Response("not found", { status: 404 });
      const body = (await request.json()) as { input: string[]; model: string; encoding_format?: string };
      if ((body.encoding_format ?? "float") !== PROVIDER_ENCODING) {
        return new Response(`asked for ${body.encoding_format}, set to answer ${PROVIDER_ENCODING}`, { status: 400 });
      }
      calls++;
      await Bun.sleep(LATENCY_MS);
      const data = body.input.map(
        (text, index) => `{"object":"embedding","index":${index},"embedding":${vectorJson(text)}}`,
      );
      return new Response(
        `{"object":"list","model":"${body.model}","data":[${data.join(",")}],"usage":{"prompt_tokens":1,"total_tokens":1}}`,
        { headers: { "content-type": "application/json" } },
      );
    },
  });
  return { url: `http://127.0.0.1:${server.port}/v1`, calls: () => calls, stop: () => server.stop(true) };
}

// ---------------------------------------------------------------- the database and the service

interface Target {
  env: Record<string, string>;
  open(): Promise<SqlClient>;
  /** A connection of its own for index builds (a server's build lock is its session's). */
  openBuilder?: (onNotice: (message: string) => void) => SqlClient;
  drop(): Promise<void>;
}

async function createTarget(providerUrl: string): Promise<Target> {
  const common: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpdir(),
    ADMIN_PASSWORD: "bench-password",
    WRITE_RATE_LIMIT: "0",
    SEARCH_RATE_LIMIT: "0",
    VECTOR_INDEX: "off",
    VECTOR_INDEX_KIND: KIND,
    QUERY_TRANSLATION: "off",
    LOG_LEVEL: "warn",
    REQUEST_TIMEOUT_MS: "600000",
    DATABASE_TIMEOUT_MS: "300000",
    BULK_MAX_ITEMS: String(Math.max(BATCH, 5000)),
    BULK_MAX_BYTES: String(256 * 1024 * 1024),
    EMBEDDING_PROVIDER: "openai",
    OPENAI_API_KEY: "bench-key",
    OPENAI_BASE_URL: providerUrl,
    EMBEDDING_DIMENSIONS: String(DIMENSION),
    OPENAI_EMBEDDING_ENCODING: PROVIDER_ENCODING,
  };
  const settings = vectorSessionSettings({ efSearch: EF_SEARCH, probes: PROBES });
  if (ENGINE === "pglite") {
    const dataDir = mkdtempSync(join(tmpdir(), "sku-scale-"));
    return {
      env: { ...common, DATA_DIR: dataDir },
      open: () => openPglite(dataDir, {}, settings),
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const admin = connectPostgres(args["database-url"] as string, { maxConnections: 1 });
  if (REUSE === undefined) {
    await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
    await admin.query(`CREATE DATABASE ${DATABASE}`);
  }
  const url = new URL(args["database-url"] as string);
  url.pathname = `/${DATABASE}`;
  return {
    env: { ...common, DATABASE_URL: url.toString(), DATA_DIR: mkdtempSync(join(tmpdir(), "sku-scale-")) },
    open: async () => connectPostgres(url.toString(), { maxConnections: 1, sessionSettings: settings }),
    openBuilder: (onNotice) => connectPostgres(url.toString(), { maxConnections: 1, onNotice }),
    drop: async () => {
      if (!args.keep && REUSE === undefined) await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
      await admin.close();
    },
  };
}

async function startService(target: Target) {
  const port = await freePort();
  // --profile DIR: a CPU profile of each service started (Bun's markdown form), written there when it stops.
  const profile = args.profile ? ["--cpu-prof-md", `--cpu-prof-dir=${resolve(args.profile)}`] : [];
  const child = Bun.spawn(["bun", ...profile, "src/app/main.ts", "serve"], {
    cwd: PROJECT,
    env: { ...target.env, PORT: String(port), HOST: "127.0.0.1" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 200) {
    if (waited > 300_000) throw new Error("the service did not become ready");
    if (child.exitCode !== null) throw new Error(`the service exited with code ${child.exitCode} while starting`);
    const ready = await fetch(`${base}/health/ready`).catch(() => null);
    if (ready?.status === 200) break;
    await Bun.sleep(200);
  }
  const login = await fetch(`${base}/auth/login`, {
    method: "POST",
    body: new URLSearchParams({ username: "admin", password: "bench-password" }),
  });
  const { access_token: token } = (await login.json()) as { access_token: string };
  return {
    base,
    auth: { authorization: `Bearer ${token}` },
    pid: child.pid,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await child.exited;
    },
  };
}

type Service = Awaited<ReturnType<typeof startService>>;

/** Rows [from, to) through POST /products/bulk (their vectors made beforehand); returns products per second. */
async function bulkLoad(service: Service, from: number, to: number, cpu?: CpuMeter): Promise<number> {
  renderVectors(from, to);
  unrendered = 0;
  cpu?.begin(service.pid);
  const started = performance.now();
  let next = from;
  const worker = async () => {
    while (next < to) {
      const start = next;
      const end = Math.min(to, start + BATCH);
      next = end;
      const lines: string[] = [];
      for (let row = start; row < end; row++) lines.push(JSON.stringify(productOf(row)));
      const response = await fetch(`${service.base}/products/bulk`, {
        method: "POST",
        headers: { ...service.auth, "content-type": "application/x-ndjson" },
        body: `${lines.join("\n")}\n`,
      });
      const report = (await response.json()) as { counts?: Record<string, number> };
      if (response.status !== 200 || (report.counts?.failed ?? 0) > 0) {
        throw new Error(`bulk rows ${start}-${end}: ${response.status} ${JSON.stringify(report).slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, worker));
  const rate = (to - from) / ((performance.now() - started) / 1000);
  cpu?.end(to - from);
  rendered.clear();
  if (unrendered > 0) {
    // --quick runs in CI: a bench that measures its own work instead of the service's fails there.
    const problem = `the fake provider made ${unrendered} vectors during the bulk phase (rowOfText no longer finds their rows)`;
    if (QUICK) throw new Error(problem);
    console.log(`WARNING: ${problem}`);
  }
  return rate;
}

// ---------------------------------------------------------------- binary COPY

/** Into the default catalogue (the one the bulk path writes), as the bench's owner (row-level security confines only the service's role). */
const COPY_COLUMNS = ["catalogue", "name", "description", "category", "content_digest", "embedding"];
const COPY_CHUNK = 500;

/** Rows [from, to) in binary COPY format, as the bulk path would store them (content digest included). */
function copyChunk(from: number, to: number): Uint8Array {
  const rows: CopyField[][] = [];
  for (let row = from; row < to; row++) {
    const product = productOf(row);
    const digest = new Bun.CryptoHasher("sha256").update(embeddingText(product, [])).digest("hex");
    rows.push([
      { text: "default" },
      { text: product.name },
      { text: product.description },
      { text: product.category },
      { text: digest },
      { vector: space.productLowRank(row) },
    ]);
  }
  return encodeCopyRows(rows);
}

/**
 * Rows [from, to) by binary COPY, COPY_CHUNK a statement. `encodedFirst`: every chunk is made
 * before the clock starts (the floor: the database's work alone); otherwise each chunk is made
 * while the previous one is written (the fill, streamed: memory stays at two chunks). Rows per second.
 */
async function copyRows(
  db: SqlClient,
  from: number,
  to: number,
  encodedFirst: boolean,
  cpu?: CpuMeter,
): Promise<number> {
  const ranges: [number, number][] = [];
  for (let start = from; start < to; start += COPY_CHUNK) ranges.push([start, Math.min(to, start + COPY_CHUNK)]);
  const encoded = encodedFirst ? ranges.map(([a, b]) => copyChunk(a, b)) : undefined;
  cpu?.begin(undefined);
  const started = performance.now();
  let writing: Promise<void> = Promise.resolve();
  for (const [i, [a, b]] of ranges.entries()) {
    const chunk = encoded?.[i] ?? copyChunk(a, b);
    await writing;
    writing = db.copyIn("products", COPY_COLUMNS, chunk);
    if (!encodedFirst && i % 100 === 99) {
      await writing;
      console.log(`  … ${b} rows (load average ${load()})`);
    }
  }
  await writing;
  const rate = (to - from) / ((performance.now() - started) / 1000);
  cpu?.end(to - from);
  return rate;
}

// ---------------------------------------------------------------- queries

interface Query {
  vector: number[];
  categories?: string[];
  label: string;
}

const queryNear = (row: number, label: string) => space.queryLowRank(row, label);

function unfilteredQueries(): Query[] {
  return Array.from({ length: QUERIES }, (_, i) => ({
    vector: queryNear(seedOf(`pick:${i}`) % N, `query:${i}`),
    label: "unfiltered",
  }));
}

/** Queries like the unfiltered ones, near other rows: none of them searched before (step 4). */
function freshQueries(): Query[] {
  return Array.from({ length: FRESH_QUERIES }, (_, i) => ({
    vector: queryNear(seedOf(`fresh:${i}`) % N, `fresh:${i}`),
    label: "fresh",
  }));
}

/** Categories of about 0.1 %, 1 %, 5 % and 30 % of the products; per category, queries near it and far from it. */
function filteredQueries(): Query[] {
  const counts = new Map<string, number>();
  for (let row = 0; row < N; row++) {
    const { category } = space.text(row);
    counts.set(category, (counts.get(category) ?? 0) + 1);
  }
  const byShare = (share: number) =>
    [...counts].reduce((best, row) =>
      Math.abs(Math.log(row[1] / N / share)) < Math.abs(Math.log(best[1] / N / share)) ? row : best,
    );
  const rowsOf = (category: string) => {
    const rows: number[] = [];
    for (let i = 0; i < N && rows.length < FILTERED_QUERIES; i++) {
      const row = (i * 7919) % N;
      if (space.text(row).category === category) rows.push(row);
    }
    return rows;
  };
  const queries: Query[] = [];
  const seen = new Set<string>();
  for (const share of [0.001, 0.01, 0.05, 0.3]) {
    const [category, n] = byShare(share);
    if (seen.has(category)) continue;
    seen.add(category);
    const label = `${category} (${n} rows, ${((100 * n) / N).toFixed(1)} %)`;
    const other = [...counts].find(([name, count]) => name !== category && count > N / 20)?.[0];
    for (const [i, row] of rowsOf(category).entries()) {
      queries.push({ vector: queryNear(row, `near:${i}`), categories: [category], label: `${label}, near` });
    }
    for (const [i, row] of (other ? rowsOf(other) : []).entries()) {
      queries.push({ vector: queryNear(row, `far:${i}`), categories: [category], label: `${label}, far` });
    }
  }
  return queries;
}

interface Timing {
  p50: number;
  p95: number;
  ids: number[][];
}

async function run(
  repository: PostgresProductRepository,
  queries: readonly Query[],
  passes = PASSES,
  warmUp = 5,
): Promise<Timing> {
  const times: number[] = [];
  const ids: number[][] = [];
  for (const query of queries.slice(0, warmUp)) {
    await repository.searchByVector(query.vector, { limit: K, categories: query.categories });
  }
  // Every query `passes` times; latency over all of them (a running service has its index in
  // memory, which the first pass only begins to bring there), answers from the first pass.
  for (let pass = 0; pass < passes; pass++) {
    for (const query of queries) {
      const started = performance.now();
      const hits = await repository.searchByVector(query.vector, { limit: K, categories: query.categories });
      times.push(performance.now() - started);
      if (pass === 0) ids.push(hits.map((hit) => hit.id));
    }
  }
  return { ...latency(times), ids };
}

/** The p50 and p95 of `times` (ms). */
function latency(times: number[]): { p50: number; p95: number } {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { p50: at(0.5), p95: at(0.95) };
}

/**
 * The index scan alone, the floor under a search through a binary-quantized index: the `depth`
 * products nearest each query by the Hamming distance of their bits, as a search's first step reads
 * them (ids only: no re-rank by the half-precision copy, no exact cosine), at the session's probes or
 * ef_search. Timed as `run` times a search, in the same run, so that the two compare side by side.
 */
async function indexScanAlone(db: SqlClient, queries: readonly Query[], depth: number, passes = PASSES) {
  const statement =
    `SELECT id FROM products WHERE catalogue = 'default' ` +
    `ORDER BY ${BINARY_QUANTIZED_COLUMN} <~> binary_quantize($1::vector)::bit(${DIMENSION}) LIMIT $2`;
  for (const query of queries.slice(0, 5)) {
    const rows = await db.query(statement, [vectorParam(query.vector), depth]);
    if (rows.length < Math.min(depth, N)) throw new Error(`the index scan alone found ${rows.length} products`);
  }
  const times: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    for (const query of queries) {
      const started = performance.now();
      await db.query(statement, [vectorParam(query.vector), depth]);
      times.push(performance.now() - started);
    }
  }
  return latency(times);
}

function recall(truth: number[][], found: number[][]): number {
  let hit = 0;
  let total = 0;
  truth.forEach((expected, i) => {
    const got = new Set(found[i]);
    hit += expected.filter((id) => got.has(id)).length;
    total += expected.length;
  });
  return total === 0 ? 1 : hit / total;
}

const shortAnswers = (truth: number[][], found: number[][]) =>
  found.filter((ids, i) => ids.length < (truth[i] as number[]).length).length;

// ---------------------------------------------------------------- PostgreSQL's memory

// ---------------------------------------------------------------- CPU time

/**
 * Where a phase's CPU went, per row written: the database server's, the service's (when one
 * writes), this process's (the bench's client, and the fake provider it serves), and how many of
 * the machine's cores were busy over the phase (other processes' included: the machine is shared).
 */
class CpuMeter {
  private readonly totals = { database: 0, service: 0, bench: 0, machineBusy: 0, wallMs: 0, rows: 0 };

  constructor(private readonly postmaster: number | undefined) {}

  private started: { at: number; servicePid: number | undefined; read: ReturnType<CpuMeter["read"]> } | undefined;

  /** From now (the clock of a timed phase starting), with the service process `servicePid` if one writes. */
  begin(servicePid: number | undefined): void {
    this.started = { at: performance.now(), servicePid, read: this.read(servicePid) };
  }

  /** Until now, for `rows` written since `begin`. */
  end(rows: number): void {
    if (!this.started) throw new Error("CpuMeter.end without begin");
    const { at, servicePid, read: before } = this.started;
    const after = this.read(servicePid);
    this.totals.wallMs += performance.now() - at;
    this.totals.database += after.database - before.database;
    this.totals.service += after.service - before.service;
    this.totals.bench += after.bench - before.bench;
    this.totals.machineBusy += after.machineBusy - before.machineBusy;
    this.totals.rows += rows;
    this.started = undefined;
  }

  /** CPU ms per row of each, and the busy cores; undefined figures where /proc does not show them. */
  figures(): { database?: number; service: number; bench: number; busyCores: number } {
    const { database, service, bench, machineBusy, wallMs, rows } = this.totals;
    return {
      ...(this.postmaster === undefined ? {} : { database: database / rows }),
      service: service / rows,
      bench: bench / rows,
      busyCores: machineBusy / wallMs,
    };
  }

  private read(servicePid: number | undefined) {
    const usage = process.cpuUsage();
    return {
      database: this.postmaster === undefined ? 0 : serverCpuMs(this.postmaster),
      service: servicePid === undefined ? 0 : processCpuMs(servicePid, true),
      bench: (usage.user + usage.system) / 1000,
      machineBusy: machineBusyMs(),
    };
  }
}

const cpuLine = (label: string, cpu: ReturnType<CpuMeter["figures"]>) =>
  `  ${label}: CPU per row ${cpu.database === undefined ? "" : `database ${cpu.database.toFixed(3)} ms, `}` +
  `service ${cpu.service.toFixed(3)} ms, bench (client and fake provider) ${cpu.bench.toFixed(3)} ms; ` +
  `${cpu.busyCores.toFixed(2)} of the machine's cores busy`;

// ---------------------------------------------------------------- main

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const load = () => loadavg()[0]?.toFixed(2);
const loads: number[] = [];
const noteLoad = () => loads.push(loadavg()[0] ?? 0);
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

const provider = startFakeProvider();
const target = await createTarget(provider.url);
let running: Service | undefined;
const serviceFor = async () => {
  running = await startService(target);
  return running;
};
const figures: Record<string, unknown> = { n: N, index: TARGET?.kind ?? "none", engine: ENGINE, dimension: DIMENSION };
let peakMemoryMb: number | undefined;
const sampleMemory = async (db: SqlClient) => {
  const postmaster = await postmasterOf(db);
  const mb = postmaster === undefined ? undefined : serverMemoryMb(postmaster);
  if (mb !== undefined) peakMemoryMb = Math.max(peakMemoryMb ?? 0, mb);
};

try {
  const setup = await target.open();
  const [server] = await setup.query<{ version: string }>("SELECT current_setting('server_version') AS version");
  // current_setting gives each with its unit ("3200MB"), where pg_settings' setting counts 8 kB pages.
  const gucs = await setup.query<{ name: string; setting: string }>(
    "SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name IN ('shared_buffers', 'max_parallel_maintenance_workers', 'max_wal_size', 'jit')",
  );
  await setup.close();
  console.log(
    `engine ${ENGINE} (PostgreSQL ${server?.version}; ${gucs.map((g) => `${g.name} ${g.setting}`).join(", ")}), ` +
      `${N} products of ${DIMENSION} dims (clustered, embedding-like; texts: ${texts.source}), index ${TARGET?.kind} ` +
      `(${TARGET?.method}${TARGET?.efConstruction ? ` m 16, ef_construction ${TARGET.efConstruction}` : ""}; build memory ${args["build-memory"]}, ${args["build-workers"]} workers); ` +
      `fill ${FILL} by COPY, floor ${SAMPLE} by COPY, ${SAMPLE} through the bulk path (${BATCH} a request × ${CLIENTS} clients, ` +
      `fake provider ${LATENCY_MS} ms a call, ${PROVIDER_ENCODING}), ${LIVE} + ${LIVE} with the index live; ${QUERIES} unfiltered queries, ` +
      `${FILTERED_QUERIES} per filtered case, each ${PASSES} times; filtered exact up to ${PLAN.filterExactMaxRows} rows; ` +
      `service settings ${SCAN_LABEL} ${IVF ? PROBES : EF_SEARCH}, re-rank depth ${RERANK_DEPTH}; load average ${load()}`,
  );

  let db: SqlClient;
  if (REUSE === undefined) {
    // 1. The schema (the service's migrations), then the fill.
    await (await serviceFor()).stop();
    db = await target.open();
    const fillStarted = performance.now();
    const fillRate = FILL > 0 ? await copyRows(db, 0, FILL, false) : 0;
    console.log(
      `fill: ${FILL} rows by COPY, ${fillRate.toFixed(0)} rows/s, ${((performance.now() - fillStarted) / 1000).toFixed(0)} s`,
    );

    // 2. The floor and the bulk path, at the same size, after the fill's own aftermath (autovacuum
    // and a checkpoint on 20 GB of writes would fall on one of them): on a server in two halves each,
    // taking turns, so that what the machine does meanwhile falls on both alike.
    await db.query("VACUUM ANALYZE products");
    await db.query("CHECKPOINT").catch(() => {}); // needs the pg_checkpoint role: skipped without it
    noteLoad();
    const halves = ENGINE === "pg" ? 2 : 1;
    const part = Math.floor(SAMPLE / halves);
    let [copied, copySeconds, ingested, ingestSeconds] = [0, 0, 0, 0];
    const bulk = ENGINE === "pg" ? await serviceFor() : undefined;
    // Where the CPU goes in each (a server on this machine only: PGlite runs inside the service).
    const postmaster = ENGINE === "pg" ? await postmasterOf(db) : undefined;
    const [copyCpu, bulkCpu] = [new CpuMeter(postmaster), new CpuMeter(postmaster)];
    for (let half = 0; half < halves; half++) {
      const copyFrom = FILL + half * part;
      const copyTo = half === halves - 1 ? FILL + SAMPLE : copyFrom + part;
      const rate = await copyRows(db, copyFrom, copyTo, true, copyCpu);
      copied += copyTo - copyFrom;
      copySeconds += (copyTo - copyFrom) / rate;
      const bulkFrom = FILL + SAMPLE + half * part;
      const bulkTo = half === halves - 1 ? N : bulkFrom + part;
      if (ENGINE === "pglite") await db.close();
      const service = bulk ?? (await serviceFor());
      const bulkRate = await bulkLoad(service, bulkFrom, bulkTo, bulkCpu);
      if (!bulk) await service.stop();
      ingested += bulkTo - bulkFrom;
      ingestSeconds += (bulkTo - bulkFrom) / bulkRate;
    }
    await bulk?.stop();
    if (ENGINE === "pg") await db.close();
    const [copyRate, ingestRate] = [copied / copySeconds, ingested / ingestSeconds];
    noteLoad();
    console.log(
      `\nno index, ${FILL + SAMPLE} products: binary COPY ${copyRate.toFixed(0)} rows/s; bulk path ${ingestRate.toFixed(0)} products/s ` +
        `(${(ingestRate / copyRate).toFixed(2)} × COPY; load average ${load()})`,
    );
    Object.assign(figures, { copy_per_s: round(copyRate), ingest_per_s: round(ingestRate) });
    if (ENGINE === "pg") {
      const [copy, ingest] = [copyCpu.figures(), bulkCpu.figures()];
      console.log(cpuLine("binary COPY", copy));
      console.log(cpuLine("bulk path", ingest));
      Object.assign(figures, {
        ...(copy.database === undefined ? {} : { copy_db_cpu_ms_per_row: round(copy.database, 3) }),
        ...(ingest.database === undefined ? {} : { ingest_db_cpu_ms_per_product: round(ingest.database, 3) }),
        ingest_service_cpu_ms_per_product: round(ingest.service, 3),
        ingest_bench_cpu_ms_per_product: round(ingest.bench, 3),
        copy_busy_cores: round(copy.busyCores, 2),
        ingest_busy_cores: round(ingest.busyCores, 2),
      });
    }
  } else {
    db = await target.open();
    const [kept] = await db.query<{ rows: string }>(`SELECT count(*) AS rows FROM ${TABLE}`);
    await db.close();
    // N, and the 2 × --live written with the index live when the kept run had them.
    const rows = Number(kept?.rows);
    if (rows < N) throw new Error(`--reuse ${REUSE} holds ${rows} products, fewer than --n ${N}`);
    console.log(`reusing ${REUSE} (${rows} products): no load, no build, no writes`);
  }

  // 3. The exact answers.
  db = await target.open();
  await db.query("VACUUM ANALYZE products");
  const exactRepository = new PostgresProducts(db, DIMENSION, { ...PLAN, filterExactMaxRows: N }).in("default");
  const unfiltered = unfilteredQueries();
  const filtered = filteredQueries();
  const exactStarted = performance.now();
  const exact = await run(exactRepository, unfiltered, 1);
  console.log(
    `exact search (no index): p50 ${fmt(exact.p50)} ms, p95 ${fmt(exact.p95)} ms (${((performance.now() - exactStarted) / 1000).toFixed(0)} s)`,
  );
  figures.exact_p50_ms = round(exact.p50, 1);
  const labels = [...new Set(filtered.map((q) => q.label))];
  const exactFiltered = new Map<string, Timing>();
  for (const label of labels) {
    exactFiltered.set(
      label,
      await run(
        exactRepository,
        filtered.filter((q) => q.label === label),
        1,
      ),
    );
  }
  await sampleMemory(db);

  // 4. The index: build, then latency and recall.
  noteLoad();
  const indexesInUse = new IndexesInUse(db, DIMENSION, TARGET);
  const inUse = indexesInUse.of(TABLE);
  const index = new SqlVectorIndex(db, DIMENSION, {
    table: TABLE,
    server: ENGINE === "pg",
    kind: KIND,
    inUse,
    buildMemory: args["build-memory"] as string,
    buildWorkers: Number(args["build-workers"]),
    ...(target.openBuilder ? { openBuilder: target.openBuilder } : {}),
    log: (event) => console.log(`  ${JSON.stringify(event)}`),
  });
  if (REUSE === undefined) {
    const watcher = ENGINE === "pg" ? await target.open() : undefined;
    const watch = watcher
      ? new SqlVectorIndex(watcher, DIMENSION, { server: true, kind: KIND, table: TABLE })
      : undefined;
    const buildStarted = performance.now();
    const building = index.build();
    let built = false;
    void building.finally(() => {
      built = true;
    });
    while (watch && watcher && !built) {
      await Promise.race([building, Bun.sleep(QUICK ? 200 : 15_000)]);
      if (built) break;
      const { progress } = await watch.status();
      await sampleMemory(watcher);
      if (progress) {
        console.log(
          `  build ${(100 * progress.fraction).toFixed(0)} % (${progress.phase}, ${progress.tuplesDone} rows), ` +
            `${((performance.now() - buildStarted) / 1000).toFixed(0)} s, load average ${load()}`,
        );
      }
    }
    if (!(await building)) throw new Error("the index was not built");
    await watcher?.close();
    const buildSeconds = (performance.now() - buildStarted) / 1000;
    const { bytes } = await index.status();
    noteLoad();
    console.log(
      `index ${TARGET?.kind} built in ${buildSeconds.toFixed(1)} s, ${(bytes / 2 ** 20).toFixed(0)} MB (load average ${load()})`,
    );
    Object.assign(figures, { build_s: round(buildSeconds, 1), index_mb: round(bytes / 2 ** 20) });
  }

  const repositoryWith = (scan: number, rerankDepth: number) =>
    new PostgresProducts(
      db,
      DIMENSION,
      { ...PLAN, efSearch: IVF ? EF_SEARCH : scan, probes: IVF ? scan : PROBES, rerankDepth },
      undefined,
      { indexesInUse },
    ).in("default");
  const setScan = (value: number) => db.query("SELECT set_config($1, $2, false)", [SCAN_SETTING, String(value)]);
  const rerankLabel = (depth: number) => (reranked(TARGET?.kind) ? `, re-rank ${depth}` : "");
  for (const scan of SCANS) {
    for (const depth of RERANKS) {
      await setScan(scan);
      const indexed = await run(repositoryWith(scan, depth), unfiltered);
      const r = recall(exact.ids, indexed.ids);
      const scanAlone = reranked(TARGET?.kind) ? await indexScanAlone(db, unfiltered, depth) : undefined;
      console.log(
        `${SCAN_LABEL} ${scan}${rerankLabel(depth)}: p50 ${fmt(indexed.p50)} ms, ` +
          `p95 ${fmt(indexed.p95)} ms, recall@10 ${r.toFixed(3)}` +
          (scanAlone ? `; the index scan alone p50 ${fmt(scanAlone.p50)} ms, p95 ${fmt(scanAlone.p95)} ms` : ""),
      );
    }
  }
  // The service's settings: the figures of the JSON line (measured again, after the others).
  const serviceScan = IVF ? PROBES : EF_SEARCH;
  if (serviceScan === "auto") await db.query("RESET ivfflat.probes");
  else await setScan(serviceScan);
  const service = new PostgresProducts(
    db,
    DIMENSION,
    { ...PLAN, efSearch: EF_SEARCH, probes: PROBES, rerankDepth: RERANK_DEPTH },
    undefined,
    { indexesInUse },
  ).in("default");
  const headline = await run(service, unfiltered);
  const headlineRecall = recall(exact.ids, headline.ids);
  await sampleMemory(db);
  noteLoad();
  const lists = (await inUse.index()).lists;
  // What `auto` came to for this index's lists (as the service's search sets it for its transaction).
  const serviceScanValue = serviceScan === "auto" && lists !== undefined ? probesFor(lists) : serviceScan;
  const serviceScanLabel = serviceScan === serviceScanValue ? serviceScan : `auto: ${serviceScanValue}`;
  console.log(
    `service settings (${SCAN_LABEL} ${serviceScanLabel}${rerankLabel(RERANK_DEPTH)}): p50 ${fmt(headline.p50)} ms, ` +
      `p95 ${fmt(headline.p95)} ms, recall@10 ${headlineRecall.toFixed(3)} (load average ${load()})`,
  );
  if (reranked(TARGET?.kind) && serviceScanValue !== "auto") {
    await setScan(serviceScanValue);
    const scanAlone = await indexScanAlone(db, unfiltered, RERANK_DEPTH);
    console.log(
      `  the index scan alone (the ${RERANK_DEPTH} nearest by their bits, ids only): p50 ${fmt(scanAlone.p50)} ms, ` +
        `p95 ${fmt(scanAlone.p95)} ms: ${fmt(headline.p50 - scanAlone.p50)} ms of the search's p50 is the rest`,
    );
    Object.assign(figures, { index_scan_p50_ms: round(scanAlone.p50, 2), index_scan_p95_ms: round(scanAlone.p95, 2) });
  }
  Object.assign(figures, {
    [SCAN_LABEL]: serviceScanValue,
    rerank_depth: RERANK_DEPTH,
    p50_ms: round(headline.p50, 2),
    p95_ms: round(headline.p95, 2),
    recall_at_10: round(headlineRecall, 3),
  });
  if (FRESH_QUERIES > 0) {
    const fresh = await run(service, freshQueries(), 1, 0);
    console.log(
      `service settings, ${FRESH_QUERIES} queries seen for the first time: p50 ${fmt(fresh.p50)} ms, p95 ${fmt(fresh.p95)} ms`,
    );
    Object.assign(figures, { fresh_p50_ms: round(fresh.p50, 2), fresh_p95_ms: round(fresh.p95, 2) });
  }
  let found = 0;
  let total = 0;
  for (const [label, truth] of exactFiltered) {
    const cases = filtered.filter((q) => q.label === label);
    const indexed = await run(service, cases);
    const r = recall(truth.ids, indexed.ids);
    found += r * cases.length;
    total += cases.length;
    console.log(
      `filter ${label}: exact p50 ${fmt(truth.p50)} ms; with the index p50 ${fmt(indexed.p50)} ms, ` +
        `p95 ${fmt(indexed.p95)} ms, recall@10 ${r.toFixed(3)}, short answers ${shortAnswers(truth.ids, indexed.ids)}`,
    );
  }
  figures.filtered_recall_at_10 = round(total === 0 ? 1 : found / total, 3);
  console.log(`filtered recall@10 over all cases: ${figures.filtered_recall_at_10}`);
  await db.close();

  // 5. Writes with the index live.
  if (LIVE > 0 && REUSE === undefined) {
    const live = await serviceFor();
    const liveRate = await bulkLoad(live, N, N + LIVE);
    await live.stop();
    db = await target.open();
    const liveCopyRate = await copyRows(db, N + LIVE, N + 2 * LIVE, true);
    await sampleMemory(db);
    await db.close();
    noteLoad();
    console.log(
      `\nwith the index live: bulk path ${liveRate.toFixed(0)} products/s, binary COPY ${liveCopyRate.toFixed(0)} rows/s (load average ${load()})`,
    );
    Object.assign(figures, {
      ingest_live_index_per_s: round(liveRate),
      copy_live_index_per_s: round(liveCopyRate),
    });
  }
  Object.assign(figures, {
    ingest_vs_copy: round((figures.ingest_per_s as number) / (figures.copy_per_s as number), 2),
    pg_memory_mb: peakMemoryMb ?? null,
    fake_provider_calls: provider.calls(),
    load_avg: round(loads.reduce((a, b) => a + b, 0) / loads.length, 1),
  });
  console.log(JSON.stringify(figures));
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await running?.stop();
  provider.stop();
  await target.drop();
}
