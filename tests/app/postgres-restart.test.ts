/**
 * The service on a PostgreSQL server that restarts under load heals by itself: once the server is
 * back, every request succeeds again and the pool is whole. (postgres.js 3.4.9
 * on Bun kept connections that had a write pending when the server cut them; each then hung every
 * query on it for the connect timeout, forever: patches/postgres@3.4.9.patch.) How long healing
 * takes is measured by bench/db-restart.ts; this test counts requests, never time, so a loaded
 * machine makes it slower, not wrong.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { callApp } from "../support/app-client.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { canRunPostgresCluster, type PostgresCluster, startPostgresCluster } from "../support/postgres-cluster.ts";
import { loadDuringRestarts, requestRound } from "../support/restart-load.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

setDefaultTimeout(120_000);

const POOL_SIZE = 10;
const WORKERS = 16;
const RESTARTS = 3;
/** Once a round of WORKERS requests at once has all succeeded, every request of this many more rounds must. */
const ROUNDS_AFTER_HEALING = 10;

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
  `${WORKERS} clients through ${RESTARTS} fast restarts: once healed, every request succeeds and the pool is whole`,
  async () => {
    const login = await callApp(container.app, "POST", "/auth/login", {
      form: { username: "admin", password: "una-contraseña-larga" },
    });
    const token = login.json.access_token as string;
    await loadDuringRestarts(container.app, cluster, token, { workers: WORKERS, restarts: RESTARTS });

    const succeeded = (status: number) => status === 200 || status === 201;
    // Healed: a round in which every request succeeds (a pool that never heals fails by the test's time limit).
    let round = 0;
    while (!(await requestRound(container.app, token, WORKERS, round++)).every(succeeded));
    // From then on every request succeeds: a connection left dead would fail each request given to it.
    const failed: number[] = [];
    for (let after = 0; after < ROUNDS_AFTER_HEALING; after++) {
      failed.push(...(await requestRound(container.app, token, WORKERS, round++)).filter((s) => !succeeded(s)));
    }
    expect(failed).toEqual([]);

    // Every connection of the pool at once: each must open and answer (a dead one would hang 5 s, then
    // fail). The service's own writes behind (query cache, analytics) may hold one for a moment, so
    // a round that shared a connection is tried again; one that failed is not.
    const everyConnection = () =>
      Promise.all(
        Array.from({ length: POOL_SIZE }, () =>
          pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_sleep(0.5)").then(
            (rows) => rows[0]?.pid,
            (error: Error) => error.message,
          ),
        ),
      );
    let distinct = 0;
    for (let attempt = 0; attempt < 5 && distinct < POOL_SIZE; attempt++) {
      const backends = await everyConnection();
      expect(backends.every((pid) => typeof pid === "number")).toBe(true);
      distinct = new Set(backends).size;
    }
    expect(distinct).toBe(POOL_SIZE);
  },
);
