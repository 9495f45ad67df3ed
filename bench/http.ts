/**
 * What the HTTP layer costs: the service against a bare `Bun.serve` handler that runs the same
 * search (the service's own use case: the same SQL, pool, query cache, analytics, fake embedder and
 * local generator) with nothing around it, side by side in one run, on a PostgreSQL server
 * (DATABASE_URL).
 *
 * 1. In a schema of its own (`--schema`, default `bench_http`, dropped before and after unless
 *    `--keep`, which also reuses one left by a previous --keep run), `--products` products with
 *    clustered `--dimension`-d vectors (bench/vectors.ts) are written and the vector index built,
 *    as the service would have them.
 * 2. One child process (bench/http-target.ts) serves all four: the service as `serve` wires it, with the
 *    settings of the environment (LOG_LEVEL info by default: logging on, to a file), the search rate
 *    limit off (its default of 60 a minute would answer 429) and a fake embedder; the bare handler
 *    calling the service's search use case; the bare handler as the one route of a plain Elysia app
 *    (`elysia_*`: the framework's floor); and `search_only_*`, a bare handler running the search's
 *    own statements alone (no query cache, no analytics: what those cost per search).
 * 3. A load generator in its own process (`--client wrk`, Debian's wrk, or `--client bun`, a
 *    keep-alive fetch loop: bench/http-load.ts) sends POST /products/search with a query of its own
 *    each time (so every search misses the query cache and embeds, and the service and the bare
 *    handler write the cache; `--repeat N`: N queries in turn instead, hits once seen), at 1 and at
 *    16 connections, `--seconds` each, the four in turn (each
 *    round starting with the next), `--rounds` times; the figures are medians over the rounds.
 *    Each load's CPU per request is counted in the targets' process and, when the server runs on
 *    this machine, in the database sessions serving them (read from /proc).
 *
 * Run: `bun run bench:http [--quick] [--products 10000] [--dimension 3072] [--rounds 5]
 *   [--seconds 5] [--client wrk|bun] [--keep] [--schema bench_http] [--profile DIR] [--only service|bare|elysia|search_only] [--repeat N]` with DATABASE_URL (or `--database-url`) naming a database
 *   where pgvector can be created. Prints the settings and, as its last line, one JSON object.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import { indexTarget, SqlVectorIndex, VECTOR_INDEX_KIND_SETTINGS } from "../src/adapters/postgres/vector-index.ts";
import { FAKE_MODEL } from "./http-target.ts";
import { processCpuMs } from "./server-cpu.ts";
import { embeddedInserts, loadCatalogue, SyntheticSpace } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "database-url": { type: "string" },
    products: { type: "string" },
    dimension: { type: "string", default: "3072" },
    rounds: { type: "string" },
    seconds: { type: "string" },
    client: { type: "string" },
    keep: { type: "boolean", default: false },
    profile: { type: "string" },
    schema: { type: "string", default: "bench_http" },
    only: { type: "string" },
    repeat: { type: "string", default: "0" },
  },
});

const QUICK = args.quick;
const DATABASE_URL = args["database-url"] ?? process.env.DATABASE_URL;
if (!DATABASE_URL) {
  console.error("bench:http needs a PostgreSQL server: set DATABASE_URL (or --database-url)");
  process.exit(2);
}
const PRODUCTS = Number(args.products ?? (QUICK ? 500 : 10_000));
const DIMENSION = Number(args.dimension);
const ROUNDS = Number(args.rounds ?? (QUICK ? 1 : 5));
const SECONDS = Number(args.seconds ?? (QUICK ? 1 : 5));
const CLIENT = args.client ?? (Bun.which("wrk") ? "wrk" : "bun");
/** 0: every query distinct (each a cache miss); N: N queries in turn (cache hits once each was seen). */
const REPEAT = Number(args.repeat);
const CONCURRENCIES = [1, 16] as const;
const SCHEMA = args.schema;
/** The index kind, as the service reads it (VECTOR_INDEX_KIND; the target's searches use it too). */
const KIND = VECTOR_INDEX_KIND_SETTINGS.find((kind) => kind === process.env.VECTOR_INDEX_KIND) ?? "ivf-bq";
if (!/^[a-z_][a-z0-9_]*$/.test(SCHEMA)) throw new Error(`--schema: not a plain name: ${SCHEMA}`);
const PROJECT = resolve(import.meta.dir, "..");
const out = (line: string) => console.log(line);

const schemaUrl = (() => {
  const url = new URL(DATABASE_URL);
  url.searchParams.set("search_path", `${SCHEMA},public`);
  return url.toString();
})();

// ---------------------------------------------------------------- the catalogue

async function prepareCatalogue(): Promise<{ loadS: number; indexS: number } | "kept"> {
  const admin = connectPostgres(DATABASE_URL as string, { maxConnections: 1 });
  if (await keptCatalogue(admin)) {
    await admin.close();
    // Its index too (a run stopped before it was built left none).
    const db = connectPostgres(schemaUrl, { maxConnections: 2 });
    await buildIndex(db).finally(() => db.close());
    return "kept";
  }
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.query(`CREATE SCHEMA ${SCHEMA}`);
  await admin.close();
  const db = connectPostgres(schemaUrl, { maxConnections: 2 });
  try {
    await prepareDatabase(db, { model: FAKE_MODEL, dimension: DIMENSION });
    const space = new SyntheticSpace(loadCatalogue(), DIMENSION);
    const products = new PostgresProducts(db, DIMENSION).in("default");
    const loadStarted = performance.now();
    for (let first = 0; first < PRODUCTS; first += 500) {
      const rows = await embeddedInserts(space, first, Math.min(500, PRODUCTS - first));
      await products.writeMany(rows);
    }
    const loadS = (performance.now() - loadStarted) / 1000;
    return { loadS, indexS: await buildIndex(db) };
  } finally {
    await db.close();
  }
}

/**
 * The catalogue's vector index as the service builds it (VECTOR_INDEX_KIND's kind, lists for the size, with the
 * memory its build needs: an IVFFlat build's k-means refuses to start without it, 1.8 GB at
 * 1,000,000), unless it is there; seconds taken.
 */
async function buildIndex(db: SqlClient): Promise<number> {
  const index = new SqlVectorIndex(db, DIMENSION, {
    server: true,
    table: "products_c1",
    buildMemory: "auto",
    kind: KIND,
  });
  const status = await index.status();
  if (status.present && status.valid && !status.outdated) return 0;
  const started = performance.now();
  await index.build();
  await db.query("ANALYZE products");
  return (performance.now() - started) / 1000;
}

/** With --keep, a catalogue left by a previous --keep run of the same size and dimension is used again. */
async function keptCatalogue(admin: SqlClient): Promise<boolean> {
  if (!args.keep) return false;
  try {
    const [row] = await admin.query<{ n: number | string; dimension: number | string }>(
      `SELECT (SELECT count(*) FROM ${SCHEMA}.products) AS n, (SELECT dimension FROM ${SCHEMA}.embedding_space) AS dimension`,
    );
    return Number(row?.n) === PRODUCTS && Number(row?.dimension) === DIMENSION;
  } catch {
    return false;
  }
}

async function dropSchema(): Promise<void> {
  if (args.keep) return;
  const admin = connectPostgres(DATABASE_URL as string, { maxConnections: 1 });
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).finally(() => admin.close());
}

/**
 * The CPU time (ms) of the database's sessions serving the targets (every client backend of the
 * bench's database but the asking one), read from /proc: the database's share of each request. Null
 * when the server is not on this machine (or its processes are not readable).
 */
async function databaseCpuMs(admin: SqlClient): Promise<number | null> {
  const sessions = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
     WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  let ms = 0;
  for (const { pid } of sessions) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("postgres")) return null;
      ms += processCpuMs(pid);
    } catch {
      return null;
    }
  }
  return ms;
}

// ---------------------------------------------------------------- the servers

type Which = "service" | "bare" | "elysia" | "search_only";
const TARGETS: readonly Which[] = ["service", "bare", "elysia", "search_only"];

interface Target {
  ports: Record<Which, number>;
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
  logFile: string;
}

const ADMIN = { username: "bench", password: "bench-http-password" };

async function startTarget(dataDir: string): Promise<Target> {
  const logFile = join(dataDir, "service.log");
  let onMessage: (message: Record<string, number>) => void = () => {};
  // --profile DIR: a CPU profile of the two servers (Bun's markdown form) written there at the end.
  const profile = args.profile ? ["--cpu-prof-md", `--cpu-prof-dir=${resolve(args.profile)}`] : [];
  const child = Bun.spawn(["bun", ...profile, join(PROJECT, "bench/http-target.ts")], {
    cwd: PROJECT,
    env: {
      ...process.env,
      DATABASE_URL: schemaUrl,
      DATA_DIR: dataDir,
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      JWT_SECRET: "bench-http-secret-of-at-least-32-bytes!",
      SEARCH_RATE_LIMIT: "0",
      VECTOR_INDEX: "off",
      BENCH_DIMENSION: String(DIMENSION),
    },
    stdout: Bun.file(logFile),
    stderr: "inherit",
    ipc: (message) => onMessage(message),
  });
  const ports = await new Promise<Record<string, number>>((resolvePorts, reject) => {
    onMessage = resolvePorts;
    void child.exited.then((code) => reject(new Error(`bench/http-target.ts exited with ${code}`)));
  });
  return {
    ports: {
      service: ports.servicePort as number,
      bare: ports.barePort as number,
      elysia: ports.elysiaPort as number,
      search_only: ports.searchOnlyPort as number,
    },
    logFile,
    cpuMs: () =>
      new Promise((resolveCpu) => {
        onMessage = (message) => resolveCpu(message.cpuMs as number);
        child.send({ cpu: true });
      }),
    async stop() {
      child.send({ stop: true });
      await Promise.race([child.exited, Bun.sleep(10_000).then(() => child.kill())]);
    },
  };
}

async function login(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ADMIN),
  });
  if (!response.ok) throw new Error(`login: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

// ---------------------------------------------------------------- the load

interface Load {
  requests: number;
  duration_us: number;
  failures: number;
  p50_us: number;
  p95_us: number;
  p99_us: number;
}

let runs = 0;
async function load(port: number, concurrency: number, seconds: number, token: string): Promise<Load> {
  const tag = `r${++runs}-${Date.now().toString(36)}`;
  const command =
    CLIENT === "wrk"
      ? [
          "wrk",
          "-t1",
          `-c${concurrency}`,
          `-d${seconds}s`,
          "-s",
          join(PROJECT, "bench/http-load.lua"),
          `http://127.0.0.1:${port}`,
          "--",
          tag,
          String(REPEAT),
          token,
        ]
      : [
          "bun",
          join(PROJECT, "bench/http-load.ts"),
          `http://127.0.0.1:${port}/products/search`,
          String(concurrency),
          String(seconds),
          tag,
          String(REPEAT),
          token,
        ];
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  const line = text
    .trim()
    .split("\n")
    .findLast((candidate) => candidate.startsWith("{"));
  if (code !== 0 || !line)
    throw new Error(`load generator failed (${code}): ${text}${await new Response(child.stderr).text()}`);
  return JSON.parse(line) as Load;
}

interface Measured {
  rps: number;
  p50Ms: number;
  p95Ms: number;
  cpuMsPerRequest: number;
  /** The database sessions' CPU per request (null: not measurable from here). */
  dbCpuMsPerRequest: number | null;
  failures: number;
}

async function measure(target: Target, which: Which, concurrency: number, token: string, admin: SqlClient) {
  const port = target.ports[which];
  const [cpuBefore, dbBefore] = [await target.cpuMs(), await databaseCpuMs(admin)];
  const result = await load(port, concurrency, SECONDS, which === "service" ? token : "");
  const [cpu, db] = [(await target.cpuMs()) - cpuBefore, await databaseCpuMs(admin)];
  const requests = Math.max(1, result.requests);
  return {
    rps: result.requests / (result.duration_us / 1e6),
    p50Ms: result.p50_us / 1000,
    p95Ms: result.p95_us / 1000,
    cpuMsPerRequest: cpu / requests,
    // A session that ended during the load took its CPU time with it: then this is a lower bound.
    dbCpuMsPerRequest: db === null || dbBefore === null ? null : Math.max(0, db - dbBefore) / requests,
    failures: result.failures,
  } satisfies Measured;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------- main

const loadBefore = loadavg()[0] as number;
out(
  `bench:http: ${PRODUCTS} products × ${DIMENSION} dims (vector index ${indexTarget(DIMENSION, KIND)?.kind ?? "none"}), PostgreSQL ${new URL(DATABASE_URL).host}, ` +
    `schema ${SCHEMA}; client ${CLIENT}; ${ROUNDS} rounds × ${SECONDS} s per target and concurrency ` +
    `(${CONCURRENCIES.join(", ")}); ` +
    (REPEAT > 0
      ? `${REPEAT} queries in turn (cache hits once seen)`
      : "queries all distinct (each misses the query cache)"),
);
out(
  `service settings: LOG_LEVEL=${process.env.LOG_LEVEL ?? "info (default)"}, SEARCH_RATE_LIMIT=0, ` +
    `QUERY_CACHE_SIZE=${process.env.QUERY_CACHE_SIZE ?? "default"}, QUERY_CACHE_DAYS=${process.env.QUERY_CACHE_DAYS ?? "default"}; ` +
    `the rest as the environment has it. Load average at start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(" ")}`,
);
const prepared = await prepareCatalogue();
out(
  prepared === "kept"
    ? `catalogue kept from a previous --keep run`
    : `catalogue written in ${prepared.loadS.toFixed(1)} s, index built in ${prepared.indexS.toFixed(1)} s`,
);

const dataDir = mkdtempSync(join(tmpdir(), "sku-bench-http-"));
const target = await startTarget(dataDir);
const results: Record<string, Measured[]> = {};
// Reads the database sessions' CPU between loads (databaseCpuMs).
const admin = connectPostgres(DATABASE_URL, { maxConnections: 1 });
try {
  const token = await login(target.ports.service);
  // Warm-up: JIT, pool connections, plans.
  for (const which of TARGETS) await load(target.ports[which], 4, QUICK ? 1 : 2, which === "service" ? token : "");
  for (let roundNo = 0; roundNo < ROUNDS; roundNo++) {
    for (const concurrency of CONCURRENCIES) {
      // Each round starts with the next target in turn.
      const order = TARGETS.map((_, i) => TARGETS[(i + roundNo) % TARGETS.length] as Which);
      // --only service|bare|elysia|search_only: one of them (with --profile, to see where one spends its time).
      for (const which of order.filter((target) => args.only === undefined || target === args.only)) {
        const measured = await measure(target, which, concurrency, token, admin);
        const key = `${which}_c${concurrency}`;
        results[key] = [...(results[key] ?? []), measured];
        out(
          `round ${roundNo + 1} c=${concurrency} ${which.padEnd(11)} ${measured.rps.toFixed(0).padStart(6)} req/s, ` +
            `p50 ${measured.p50Ms.toFixed(2)} ms, p95 ${measured.p95Ms.toFixed(2)} ms, ` +
            `CPU ${measured.cpuMsPerRequest.toFixed(2)} ms/req` +
            (measured.dbCpuMsPerRequest === null ? "" : `, database ${measured.dbCpuMsPerRequest.toFixed(2)} ms/req`) +
            `${measured.failures ? `, ${measured.failures} failed` : ""}; ` +
            `load ${(loadavg()[0] as number).toFixed(1)}`,
        );
      }
    }
  }
} finally {
  await admin.close();
  await target.stop();
}
const logBytes = statSync(target.logFile).size;
rmSync(dataDir, { recursive: true, force: true });
await dropSchema();

const figure = (key: string, pick: (m: Measured) => number) => median((results[key] ?? []).map(pick));
/** The median of each round's ratio of `which` to the bare handler: both ran under the same load. */
const ratioToBare = (which: Which, c: number) =>
  median(
    (results[`${which}_c${c}`] ?? []).map((m, i) => m.rps / ((results[`bare_c${c}`] ?? [])[i]?.rps ?? Number.NaN)),
  );
const summary: Record<string, number | string> = {};
for (const c of CONCURRENCIES)
  for (const which of TARGETS)
    summary[`${which}_rps_c${c}`] = round(
      figure(`${which}_c${c}`, (m) => m.rps),
      1,
    );
for (const c of CONCURRENCIES) summary[`ratio_c${c}`] = round(ratioToBare("service", c), 3);
// The framework's own floor: a plain Elysia app with the bare handler as its one route.
for (const c of CONCURRENCIES) summary[`elysia_ratio_c${c}`] = round(ratioToBare("elysia", c), 3);
// The bare handler against the search alone: what the query cache and the analytics cost per search.
for (const c of CONCURRENCIES) summary[`search_only_ratio_c${c}`] = round(ratioToBare("search_only", c), 3);
for (const c of CONCURRENCIES)
  for (const which of TARGETS) {
    summary[`${which}_p50_ms_c${c}`] = round(
      figure(`${which}_c${c}`, (m) => m.p50Ms),
      3,
    );
    summary[`${which}_cpu_ms_per_request_c${c}`] = round(
      figure(`${which}_c${c}`, (m) => m.cpuMsPerRequest),
      3,
    );
    const database = (results[`${which}_c${c}`] ?? []).map((m) => m.dbCpuMsPerRequest);
    if (database.length > 0 && database.every((ms) => ms !== null))
      summary[`${which}_db_cpu_ms_per_request_c${c}`] = round(median(database as number[]), 3);
  }
const failures = Object.values(results)
  .flat()
  .reduce((sum, m) => sum + m.failures, 0);
Object.assign(summary, {
  failures,
  products: PRODUCTS,
  dimension: DIMENSION,
  rounds: ROUNDS,
  seconds: SECONDS,
  client: CLIENT,
  repeat: REPEAT,
  log_bytes: logBytes,
  load_average_start: round(loadBefore),
  load_average_end: round(loadavg()[0] as number),
});
out(JSON.stringify(summary));
if (failures > 0) process.exit(1);
