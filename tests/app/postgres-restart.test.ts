/**
 * The service on a PostgreSQL server that restarts under load heals by itself: from a few seconds
 * after the server is back, every request succeeds and the pool is whole again. (postgres.js 3.4.9
 * on Bun kept connections that had a write pending when the server cut them; each then hung every
 * query on it for the connect timeout, forever: patches/postgres@3.4.9.patch.)
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { callApp } from "../support/app-client.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { canRunPostgresCluster, type PostgresCluster, startPostgresCluster } from "../support/postgres-cluster.ts";
import { loadThroughRestarts } from "../support/restart-load.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

setDefaultTimeout(120_000);

const POOL_SIZE = 10;
const WORKERS = 16;
const RESTARTS = 3;
/** After the server is back: time allowed to heal, then time every request must succeed in. */
const HEAL_MS = 2_000;
const OBSERVE_MS = 3_000;

let cluster: PostgresCluster;
let container: HttpService;
/** The service's own pool (handed to the container), to use every connection of it at the end. */
let pool: SqlClient;
const tempDir = useTempDirs("restart");
/** Reported as skipped where no PostgreSQL binaries with pgvector are installed (CI installs them). */
const skipped = !canRunPostgresCluster();

blockHooks(skipped, { beforeAll: setUp, afterAll: tearDown });

async function setUp() {
  cluster = await startPostgresCluster();
  const config = loadConfig({
    DATABASE_URL: cluster.url,
    DATA_DIR: tempDir(),
    JWT_SECRET: "s".repeat(40),
    ADMIN_PASSWORD: "una-contraseña-larga",
    // One user drives the whole load: budgets it cannot spend, yet counted in the database through the restarts.
    SEARCH_RATE_LIMIT: "1000000",
    WRITE_RATE_LIMIT: "1000000",
  });
  const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  pool = connectPostgres(cluster.url, { maxConnections: POOL_SIZE, queryTimeoutMs: config.databaseTimeoutMs });
  container = await createHttpService(config, silent, {
    embedder: new FakeEmbedder(32),
    database: pool,
    passwordHasher: lowCostHasher(),
  });
}

async function tearDown() {
  await container?.close();
  await cluster?.stop();
}

test.skipIf(skipped)(
  `${WORKERS} clients through ${RESTARTS} fast restarts: a few seconds later every request succeeds and the pool is whole`,
  async () => {
    const login = await callApp(container.app, "POST", "/auth/login", {
      form: { username: "admin", password: "una-contraseña-larga" },
    });
    const token = login.json.access_token as string;
    const observed = await loadThroughRestarts(container.app, cluster, token, {
      workers: WORKERS,
      restarts: RESTARTS,
      healMs: HEAL_MS,
      observeMs: OBSERVE_MS,
    });

    const failed = observed.filter((request) => request.status !== 200 && request.status !== 201);
    expect(observed.length).toBeGreaterThan(100);
    expect(failed).toEqual([]);
    // A connection left dead would hold a request for the whole connect timeout (5 s).
    expect(observed.filter((request) => request.ms > 2_000)).toEqual([]);

    // Every connection of the pool at once: each must open and answer (a dead one would hang 5 s, then fail).
    const backends = await Promise.all(
      Array.from({ length: POOL_SIZE }, () =>
        pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_sleep(0.5)").then(
          (rows) => rows[0]?.pid,
          (error: Error) => error.message,
        ),
      ),
    );
    expect(new Set(backends).size).toBe(POOL_SIZE);
    expect(backends.every((pid) => typeof pid === "number")).toBe(true);
  },
);
