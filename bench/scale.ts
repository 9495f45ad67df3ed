/**
 * The catalogue at scale: ingest through the HTTP bulk path, the vector index's build, and search
 * latency and recall, on PostgreSQL or PGlite.
 *
 * For each size (cumulative loads into one fresh database):
 * 1. the service runs as users run it (`bun run cli serve`, VECTOR_INDEX=off so the bench decides
 *    when to build) and products go in through POST /products/bulk (NDJSON, `--batch` items per
 *    request, `--clients` requests at a time), embedded by a fake OpenAI-compatible provider on
 *    127.0.0.1 that answers every call after `--latency-ms` with clustered, embedding-like vectors
 *    (bench/vectors.ts) of `--dimension`; or, with `--embedder local`, by the offline model itself.
 *    Before the first load, `--single` products go in one request each from one client: the rate
 *    the bulk path is compared with;
 * 2. with the service stopped, the bench opens the database itself and times the SQL part of
 *    search (PostgresProductRepository.searchByVector, as the service calls it, one query at a time):
 *    first without the index (the exact plan, whose answers are the reference for recall@10),
 *    then after building the index (SqlVectorIndex.build, as `sku-search index build` does), at each
 *    `--ef` for unfiltered queries and at the service's default for filtered ones: categories of
 *    about 0.1 %, 1 %, 5 % and 30 % of the products, queries near the category and far from it;
 * 3. the index is dropped before the next load (a large load is faster without it); after the last
 *    size, `--indexed-load` more products go in with the index present, to show that rate too.
 *
 * Run by hand (figures in README "Vector index"):
 *   bun bench/scale.ts --engine pg [--database-url postgres://postgres@127.0.0.1:55432/postgres]
 *     [--sizes 10000,50000,100000] [--dataset synthetic|catalogue] [--dimension 3072]
 *     [--latency-ms 200] [--batch 1000] [--clients 4] [--queries 100] [--ef 40,100,200,400]
 *     [--filter-exact-max-rows 30000] [--passes 3]
 *   bun bench/scale.ts --engine pglite --dataset catalogue --embedder local
 * `--database-url` names a server where the bench may create and drop the database `sku_scale_bench`
 * (`--keep`: left there at the end, with its index, for a look at the plans).
 * The catalogue dataset is the 12,430 products of ../shared/eval/products-all.jsonl.gz, read in place.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../scripts/free-port.ts";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { DEFAULT_SEARCH_PLAN, PostgresProductRepository } from "../src/adapters/postgres/product-repository.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import { indexTarget, SqlVectorIndex, vectorSessionSettings } from "../src/adapters/postgres/vector-index.ts";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../src/adapters/providers/local-model-files.ts";
import { embeddingText } from "../src/domain/product.ts";
import { loadCatalogue, SyntheticSpace, seedOf } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    engine: { type: "string", default: "pg" },
    "database-url": { type: "string", default: "postgres://postgres@127.0.0.1:55432/postgres" },
    dataset: { type: "string", default: "synthetic" },
    sizes: { type: "string", default: "10000,50000,100000" },
    embedder: { type: "string", default: "fake" },
    dimension: { type: "string", default: "3072" },
    "latency-ms": { type: "string", default: "200" },
    batch: { type: "string", default: "1000" },
    clients: { type: "string", default: "4" },
    single: { type: "string", default: "20" },
    queries: { type: "string", default: "100" },
    "filtered-queries": { type: "string", default: "10" },
    passes: { type: "string", default: "3" },
    ef: { type: "string", default: "40,100,200,400" },
    "filter-exact-max-rows": { type: "string", default: String(DEFAULT_SEARCH_PLAN.filterExactMaxRows) },
    "indexed-load": { type: "string", default: "2000" },
    keep: { type: "boolean", default: false },
  },
});

const ENGINE = args.engine === "pglite" ? "pglite" : "pg";
const LOCAL = args.embedder === "local";
const DIMENSION = LOCAL ? 384 : Number(args.dimension);
const LATENCY_MS = Number(args["latency-ms"]);
const BATCH = Number(args.batch);
const CLIENTS = Number(args.clients);
const QUERIES = Number(args.queries);
const FILTERED_QUERIES = Number(args["filtered-queries"]);
const PASSES = Number(args.passes);
const EFS = (args.ef as string).split(",").map(Number);
const PLAN = { ...DEFAULT_SEARCH_PLAN, filterExactMaxRows: Number(args["filter-exact-max-rows"]) };
const K = 10;
const PROJECT = resolve(import.meta.dir, "..");
const DATABASE = "sku_scale_bench";

const catalogue = loadCatalogue();
const space = new SyntheticSpace(catalogue, DIMENSION);
const synthetic = args.dataset !== "catalogue";
const sizes = synthetic
  ? (args.sizes as string).split(",").map((n) => Number(n.replaceAll("_", "")))
  : [catalogue.length];

/** Row `row` of the dataset as the bulk path takes it; synthetic rows past the file reuse its texts, numbered. */
function productOf(row: number): { name: string; description: string; category: string } {
  const text = space.text(row);
  const name = synthetic ? `${text.name} #${row}` : text.name;
  return { name, description: text.description, category: text.category };
}

// ---------------------------------------------------------------- fake provider

/** The row of each embedded text, for the fake provider to answer with that row's vector. */
const rowOfText = new Map<string, number>();
function remember(row: number): void {
  const text = embeddingText(productOf(row));
  if (!rowOfText.has(text)) rowOfText.set(text, row);
}

/** Every value from -1 to 1 in steps of 1e-5, written as JSON: formatting a vector is then a lookup per value. */
const DECIMALS = Array.from({ length: 200_001 }, (_, i) => String((i - 100_000) / 100_000));

/** The vector of an embedded text as JSON (rounded to 1e-5; the components are about 0.02 at 3072 dims). */
function vectorJson(text: string): string {
  const row = rowOfText.get(text);
  const vector =
    row === undefined ? space.productLowRank(seedOf(text) % catalogue.length, 1.3, text) : space.productLowRank(row);
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
      const body = (await request.json()) as { input: string[]; model: string };
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

// ---------------------------------------------------------------- the service

interface Target {
  env: Record<string, string>;
  open(): Promise<SqlClient>;
  drop(): Promise<void>;
}

async function createTarget(providerUrl: string | undefined): Promise<Target> {
  const common: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpdir(),
    ADMIN_PASSWORD: "bench-password",
    WRITE_RATE_LIMIT: "0",
    SEARCH_RATE_LIMIT: "0",
    VECTOR_INDEX: "off",
    QUERY_TRANSLATION: "off",
    LOG_LEVEL: "warn",
    REQUEST_TIMEOUT_MS: "600000",
    DATABASE_TIMEOUT_MS: "300000",
    ...(providerUrl
      ? {
          EMBEDDING_PROVIDER: "openai",
          OPENAI_API_KEY: "bench-key",
          OPENAI_BASE_URL: providerUrl,
          EMBEDDING_DIMENSIONS: String(DIMENSION),
        }
      : {}),
  };
  const settings = vectorSessionSettings({ efSearch: DEFAULT_SEARCH_PLAN.efSearch });
  if (ENGINE === "pglite") {
    const dataDir = mkdtempSync(join(tmpdir(), "sku-scale-"));
    return {
      env: { ...common, DATA_DIR: dataDir },
      open: () => openPglite(dataDir, {}, settings),
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const admin = connectPostgres(args["database-url"] as string, { maxConnections: 1 });
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(args["database-url"] as string);
  url.pathname = `/${DATABASE}`;
  return {
    env: { ...common, DATABASE_URL: url.toString(), DATA_DIR: mkdtempSync(join(tmpdir(), "sku-scale-")) },
    open: async () => connectPostgres(url.toString(), { maxConnections: 1, sessionSettings: settings }),
    drop: async () => {
      if (!args.keep) await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
      await admin.close();
    },
  };
}

async function startService(target: Target) {
  const port = await freePort();
  const child = Bun.spawn(["bun", "run", "cli", "serve"], {
    cwd: PROJECT,
    env: { ...target.env, PORT: String(port), HOST: "127.0.0.1" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 200) {
    if (waited > 120_000) throw new Error("the service did not become ready");
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
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await child.exited;
    },
  };
}

type Service = Awaited<ReturnType<typeof startService>>;

/** Rows [from, to) through POST /products/bulk; returns products per second. */
async function bulkLoad(service: Service, from: number, to: number): Promise<number> {
  const started = performance.now();
  let next = from;
  const worker = async () => {
    while (next < to) {
      const start = next;
      const end = Math.min(to, start + BATCH);
      next = end;
      const lines: string[] = [];
      for (let row = start; row < end; row++) {
        remember(row);
        lines.push(JSON.stringify(productOf(row)));
      }
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
  return (to - from) / ((performance.now() - started) / 1000);
}

/** `count` products through POST /products/, one request each, one client; returns products per second. */
async function singleLoad(service: Service, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const product = { name: `single ${i}`, description: "one request each", category: "bench single" };
    const response = await fetch(`${service.base}/products/`, {
      method: "POST",
      headers: { ...service.auth, "content-type": "application/json" },
      body: JSON.stringify(product),
    });
    if (response.status !== 201 && response.status !== 200) throw new Error(`create: ${response.status}`);
  }
  return count / ((performance.now() - started) / 1000);
}

// ---------------------------------------------------------------- queries

interface Query {
  vector: number[];
  categories?: string[];
  label: string;
}

/** How much further from their sub-category than products queries are (short texts). */
const QUERY_SPREAD = 1.3;

const localEmbedder = LOCAL ? new LocalEmbedder(INSTALLED_MODEL_DIR) : undefined;

/** A query near dataset row `row`: the synthetic space's, or the offline model's embedding of its name. */
async function queryNear(row: number, label: string): Promise<number[]> {
  if (!localEmbedder) return Array.from(space.productLowRank(row, QUERY_SPREAD, label));
  const [vector] = await localEmbedder.embed([productOf(row).name], "query");
  return Array.from(vector as ArrayLike<number>);
}

async function unfilteredQueries(loaded: number): Promise<Query[]> {
  const queries: Query[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const row = seedOf(`pick:${i}`) % loaded;
    queries.push({ vector: await queryNear(row, `query:${i}`), label: "unfiltered" });
  }
  return queries;
}

/** Categories of about 0.1 %, 1 %, 5 % and 30 % of the rows; per category, queries near it and far from it. */
async function filteredQueries(db: SqlClient, loaded: number): Promise<Query[]> {
  const counts = await db.query<{ category: string; n: number | string }>(
    "SELECT category, count(*) AS n FROM products GROUP BY category",
  );
  const byShare = (share: number) =>
    counts.reduce((best, row) =>
      Math.abs(Math.log(Number(row.n) / loaded / share)) < Math.abs(Math.log(Number(best.n) / loaded / share))
        ? row
        : best,
    );
  const rowsOf = (category: string) => {
    const rows: number[] = [];
    for (let row = 0; row < loaded && rows.length < FILTERED_QUERIES; row++) {
      if (productOf((row * 7919) % loaded).category === category) rows.push((row * 7919) % loaded);
    }
    return rows;
  };
  const queries: Query[] = [];
  const seen = new Set<string>();
  for (const share of [0.001, 0.01, 0.05, 0.3]) {
    const { category, n } = byShare(share);
    if (seen.has(category)) continue;
    seen.add(category);
    const label = `${category} (${n} rows, ${((100 * Number(n)) / loaded).toFixed(1)} %)`;
    const near = rowsOf(category);
    const other = counts.find((row) => row.category !== category && Number(row.n) > loaded / 20)?.category;
    const far = other ? rowsOf(other) : [];
    for (const [i, row] of near.entries()) {
      queries.push({ vector: await queryNear(row, `near:${i}`), categories: [category], label: `${label}, near` });
    }
    for (const [i, row] of far.entries()) {
      queries.push({ vector: await queryNear(row, `far:${i}`), categories: [category], label: `${label}, far` });
    }
  }
  return queries;
}

interface Timing {
  p50: number;
  p95: number;
  ids: number[][];
}

async function run(repository: PostgresProductRepository, queries: readonly Query[], passes = PASSES): Promise<Timing> {
  const times: number[] = [];
  const ids: number[][] = [];
  for (const query of queries.slice(0, 5))
    await repository.searchByVector(query.vector, { limit: K, categories: query.categories });
  // Every query `--passes` times; latency over all of them (a running service has its index in
  // memory, which the first pass only begins to bring there), answers from the first pass.
  for (let pass = 0; pass < passes; pass++) {
    for (const query of queries) {
      const started = performance.now();
      const hits = await repository.searchByVector(query.vector, { limit: K, categories: query.categories });
      times.push(performance.now() - started);
      if (pass === 0) ids.push(hits.map((hit) => hit.id));
    }
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  return { p50: at(0.5), p95: at(0.95), ids };
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

// ---------------------------------------------------------------- main

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const load = () => loadavg()[0]?.toFixed(2);
const lines: string[] = [];
const out = (line: string) => {
  console.log(line);
  lines.push(line);
};

const provider = LOCAL ? undefined : startFakeProvider();
const target = await createTarget(provider?.url);
console.log(
  `engine ${ENGINE}, dataset ${synthetic ? "synthetic (clustered, embedding-like)" : "catalogue (12,430 real products)"}, ` +
    `${DIMENSION} dims, embedder ${LOCAL ? "offline model" : `fake provider, ${LATENCY_MS} ms per call`}, ` +
    `bulk ${BATCH} items per request × ${CLIENTS} clients; HNSW m 16, ef_construction ${indexTarget(DIMENSION)?.efConstruction}; ` +
    `filtered exact up to ${PLAN.filterExactMaxRows} rows; ${QUERIES} unfiltered queries, ` +
    `${FILTERED_QUERIES} per filtered case, each ${PASSES} times; latency of searchByVector, one query at a time; load average ${load()}`,
);
/** The service while it runs, stopped whatever happens (its connections would keep the database from being dropped). */
let running: Service | undefined;
async function serviceFor(): Promise<Service> {
  running = await startService(target);
  return running;
}
try {
  let loaded = 0;
  for (const [step, size] of sizes.entries()) {
    const service = await serviceFor();
    if (step === 0 && Number(args.single) > 0) {
      const single = await singleLoad(service, Number(args.single));
      out(`one product per request, one client: ${single.toFixed(1)} products/s`);
    }
    const rate = await bulkLoad(service, loaded, size);
    await service.stop();
    out(`\n== ${size} products: bulk ingest ${rate.toFixed(0)} products/s (load average ${load()})`);
    loaded = size;

    const db = await target.open();
    try {
      await db.query("VACUUM ANALYZE products");
      const repository = new PostgresProductRepository(db, DIMENSION, PLAN);
      const index = new SqlVectorIndex(db, DIMENSION, {
        server: ENGINE === "pg",
        buildMemory: ENGINE === "pg" ? "1GB" : undefined,
      });
      const unfiltered = await unfilteredQueries(loaded);
      const filtered = await filteredQueries(db, loaded);
      const exact = await run(repository, unfiltered, 1); // seconds a pass at 100,000: once is enough
      out(`exact (no index): p50 ${fmt(exact.p50)} ms, p95 ${fmt(exact.p95)} ms`);
      const exactFiltered = new Map<string, Timing>();
      for (const label of new Set(filtered.map((q) => q.label))) {
        exactFiltered.set(
          label,
          await run(
            repository,
            filtered.filter((q) => q.label === label),
          ),
        );
      }

      const started = performance.now();
      await index.build();
      const { bytes } = await index.status();
      out(`index build ${((performance.now() - started) / 1000).toFixed(1)} s, ${(bytes / 2 ** 20).toFixed(0)} MB`);
      for (const ef of EFS) {
        await db.query("SELECT set_config('hnsw.ef_search', $1, false)", [String(ef)]);
        const indexed = await run(new PostgresProductRepository(db, DIMENSION, { ...PLAN, efSearch: ef }), unfiltered);
        out(
          `index, ef_search ${ef}: p50 ${fmt(indexed.p50)} ms, p95 ${fmt(indexed.p95)} ms, recall@10 ${recall(exact.ids, indexed.ids).toFixed(3)}`,
        );
      }
      await db.query("SELECT set_config('hnsw.ef_search', $1, false)", [String(DEFAULT_SEARCH_PLAN.efSearch)]);
      let found = 0;
      let total = 0;
      for (const [label, truth] of exactFiltered) {
        const cases = filtered.filter((q) => q.label === label);
        const indexed = await run(repository, cases);
        const r = recall(truth.ids, indexed.ids);
        found += r * cases.length;
        total += cases.length;
        out(
          `filter ${label}: exact p50 ${fmt(truth.p50)} ms; with the index present p50 ${fmt(indexed.p50)} ms, ` +
            `p95 ${fmt(indexed.p95)} ms, recall@10 ${r.toFixed(3)}, short answers ${shortAnswers(truth.ids, indexed.ids)}`,
        );
      }
      out(`filtered recall@10 over all cases: ${(found / total).toFixed(3)}`);
      if (step < sizes.length - 1) await index.drop();
    } finally {
      await db.close();
    }
  }
  const extra = Number(args["indexed-load"]);
  if (synthetic && extra > 0) {
    const service = await serviceFor();
    const rate = await bulkLoad(service, loaded, loaded + extra);
    await service.stop();
    out(`\nbulk ingest of ${extra} more with the index present: ${rate.toFixed(0)} products/s`);
  }
  if (provider) out(`fake provider calls: ${provider.calls()}`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await running?.stop();
  provider?.stop();
  await target.drop();
}
