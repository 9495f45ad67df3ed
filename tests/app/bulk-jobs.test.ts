/**
 * Bulk imports as jobs on the whole service as `serve` builds it (config → composition root → HTTP
 * app), driven in process: a bulk past REQUEST_TIMEOUT_MS, and a job that goes on after a restart,
 * on the embedded database and on a PostgreSQL server (TEST_DATABASE_URL). The worker loop is the
 * one `serve` runs (ImportJobs.run); embedders are fakes whose speed the test sets.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connectPostgres } from "../../src/adapters/postgres/sql-client.ts";
import type { Overrides } from "../../src/app/composition-root.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import { createLogger } from "../../src/app/logger.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { GateEmbedder } from "../fakes/gate-embedder.ts";
import { type CallOptions, callApp } from "../support/app-client.ts";
import { withMigratedDatabase } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { useTempDirs } from "../support/temp-dirs.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

/** Each test's data folders, removed after the file's last test (its services closed by then). */
const tempDir = useTempDirs("bulk-jobs", { concurrent: true });

setDefaultTimeout(60_000);

const ADMIN = { username: "admin", password: "una-contraseña-larga" };
const quiet = createLogger("error");
const running: { container: HttpService; stopWorker: () => Promise<void> }[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const { container, stopWorker } of running.splice(0)) {
    await stopWorker();
    await container.close().catch(() => {});
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `count` products without a sku: an item stored twice would be two products. */
const numbered = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ name: `Producto ${i}`, description: `Número ${i}`, category: "varios" }));

/** The service with its job worker running, as `serve` runs it. */
async function start(env: Record<string, string>, overrides: Overrides) {
  const config = loadConfig({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ...env });
  const container = await createHttpService(config, quiet, { passwordHasher: lowCostHasher(), ...overrides });
  const stop = new AbortController();
  const worker = (await container.root.importJobs()).run(stop.signal);
  const stopWorker = async () => {
    stop.abort();
    await worker;
  };
  running.push({ container, stopWorker });
  const call = (method: string, path: string, init: CallOptions = {}) => callApp(container.app, method, path, init);
  const token = (await call("POST", "/auth/login", { form: ADMIN })).json.access_token as string;
  return { container, call, token, stopWorker };
}

/** Stops a service as SIGTERM does: its worker, then the rest (each job under way is released). */
async function stop(service: Awaited<ReturnType<typeof start>>) {
  running.splice(
    running.findIndex((entry) => entry.container === service.container),
    1,
  );
  await service.stopWorker();
  await service.container.close();
}

type Call = Awaited<ReturnType<typeof start>>["call"];

/** GET the job until `done` holds for it (the test's time limit bounds the wait). */
async function jobWhen(call: Call, token: string, location: string, done: (job: JobView) => boolean) {
  for (;;) {
    const job = await call("GET", `${location}?limit=5000`, { token });
    expect(job.status).toBe(200);
    if (done(job.json)) return job.json as JobView;
    await Bun.sleep(20);
  }
}

interface JobView {
  status: string;
  counts: Record<string, number>;
  items: { index: number; status: string; id?: number }[];
}

const isFinished = (job: JobView) => job.status === "succeeded" || job.status === "failed";

async function productTotal(call: Call, token: string): Promise<number> {
  return (await call("GET", "/products?limit=1", { token })).json.total as number;
}

/** Every item of `count` created, once each, with a product of its own. */
function expectEachCreatedOnce(job: JobView, count: number) {
  expect(job.counts).toEqual({ created: count, updated: 0, unchanged: 0, failed: 0, pending: 0 });
  expect(job.items.map((item) => item.index)).toEqual(Array.from({ length: count }, (_, i) => i));
  expect(new Set(job.items.map((item) => item.id)).size).toBe(count);
}

describe("on the embedded database", () => {
  test("a bulk past REQUEST_TIMEOUT_MS becomes a job before it: every item accounted for, none lost or twice", async () => {
    // 1,500 items embedded 128 at a time, 300 ms a call: at least 3.6 s, where the request has 1 s.
    const embedder = new FakeEmbedder(64);
    embedder.delayMs = 300;
    // Begun from a database migrated for this embedder: the test is of the bulk, not of a first start.
    const env = { DATA_DIR: await withMigratedDatabase(tempDir(), embedder), REQUEST_TIMEOUT_MS: "1000" };
    const { call, token } = await start({ ...env, DATABASE_TIMEOUT_MS: "500" }, { embedder });
    const accepted = await call("POST", "/products/bulk", { token, json: numbered(1_500) });
    expect(accepted.status).toBe(202);
    expect(accepted.json.total).toBe(1_500);
    const location = accepted.headers.get("location") as string;
    expect(location).toBe(`/jobs/${accepted.json.id}`);

    embedder.delayMs = 0;
    const job = await jobWhen(call, token, location, isFinished);
    expect(job.status).toBe("succeeded");
    expectEachCreatedOnce(job, 1_500);
    expect(await productTotal(call, token)).toBe(1_500);
  });
});

/** A job cut by a restart of the service goes on from its first item not stored, on `database`. */
function restartTest(database: () => Promise<Record<string, string>>) {
  test("a job interrupted by a restart is resumed by the next start, each item stored once", async () => {
    const env = await database();
    const held = new GateEmbedder(64);
    const before = await start(env, { embedder: held });
    const accepted = await before.call("POST", "/products/bulk", {
      token: before.token,
      json: numbered(300),
      headers: { prefer: "respond-async" },
    });
    expect(accepted.status).toBe(202);
    const location = accepted.headers.get("location") as string;
    (await held.next()).pass(); // the first 128 items
    await held.next(); // the next ones wait at the gate when the service stops
    const partial = await jobWhen(before.call, before.token, location, (job) => job.counts.created === 128);
    expect(partial).toMatchObject({ status: "processing", counts: { pending: 172 } });
    await stop(before);

    const open = new GateEmbedder(64);
    open.openAll();
    const after = await start(env, { embedder: open });
    const job = await jobWhen(after.call, after.token, location, isFinished);
    expect(job.status).toBe("succeeded");
    expectEachCreatedOnce(job, 300);
    expect(await productTotal(after.call, after.token)).toBe(300);
    // The first start embedded 128 + the held call's texts (cancelled, never stored); the second only the rest.
    expect(open.embedded).toHaveLength(172);
  });
}

describe("a restart, on the embedded database", () => {
  restartTest(async () => ({ DATA_DIR: await withMigratedDatabase(tempDir(), new GateEmbedder(64)) }));
});

describe.skipIf(!POSTGRES_URL)("a restart, on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  let counter = 0;
  restartTest(async () => {
    const schema = `bulk_jobs_${process.pid}_${++counter}`;
    const admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
    await admin.query("CREATE EXTENSION IF NOT EXISTS vector");
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    cleanups.push(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    });
    const url = new URL(POSTGRES_URL);
    url.searchParams.set("search_path", `${schema},public`);
    const dataDir = tempDir();
    return { DATABASE_URL: url.toString(), DATA_DIR: dataDir, JWT_SECRET: "s".repeat(40) };
  });
});
