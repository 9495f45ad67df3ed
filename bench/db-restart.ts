/**
 * The service through PostgreSQL restarts under load: how many requests fail or hang after the
 * server is back, and how much of the connection pool still works.
 *
 * Run by hand (as root, or as a user who can run PostgreSQL's initdb; needs PostgreSQL 15 with
 * pgvector, as .ci/postgres.sh installs it): `bun bench/db-restart.ts [--restarts 3] [--workers 16]
 * [--after 30]`. It starts a throwaway cluster of its own, the real service in process on it (a fake
 * 32-d embedder, so the database is the only thing measured), then: `--workers` clients loop on
 * create and search; the server gets `--restarts` fast restarts (`pg_ctl restart -m fast`) 0.5 s
 * apart; after 2 s to heal, every request for `--after` seconds is counted. Last, as many
 * `pg_sleep(0.5)` queries as the pool has connections run at once: each healthy connection answers
 * one of them.
 */
import { parseArgs } from "node:util";
import { connectPostgres } from "../src/adapters/postgres/sql-client.ts";
import { loadConfig } from "../src/app/config.ts";
import { createHttpService } from "../src/app/http-service.ts";
import { FakeEmbedder } from "../tests/fakes/fake-embedder.ts";
import { callApp } from "../tests/support/app-client.ts";
import { startPostgresCluster } from "../tests/support/postgres-cluster.ts";
import { loadThroughRestarts } from "../tests/support/restart-load.ts";

const { values } = parseArgs({
  options: {
    restarts: { type: "string", default: "3" },
    workers: { type: "string", default: "16" },
    after: { type: "string", default: "30" },
  },
});
const restarts = Number(values.restarts);
const workers = Number(values.workers);
const afterMs = Number(values.after) * 1000;
const POOL = 10;

const cluster = await startPostgresCluster();
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const config = loadConfig({
  DATABASE_URL: cluster.url,
  DATA_DIR: `/tmp/sku-search-bench-restart-${process.pid}`,
  JWT_SECRET: "s".repeat(40),
  ADMIN_PASSWORD: "una-contraseña-larga",
  // One user drives the whole load: budgets it cannot spend, yet counted in the database through the restarts.
  SEARCH_RATE_LIMIT: "1000000",
  WRITE_RATE_LIMIT: "1000000",
});
const pool = connectPostgres(cluster.url, { maxConnections: POOL, queryTimeoutMs: config.databaseTimeoutMs });
const container = await createHttpService(config, silent, { embedder: new FakeEmbedder(32), database: pool });
try {
  const login = await callApp(container.app, "POST", "/auth/login", {
    form: { username: "admin", password: "una-contraseña-larga" },
  });
  const token = login.json.access_token as string;
  const observed = await loadThroughRestarts(container.app, cluster, token, {
    workers,
    restarts,
    healMs: 2000,
    observeMs: afterMs,
  });

  const failed = observed.filter((request) => request.status >= 500).length;
  const slow = observed.filter((request) => request.ms > 2000).length;
  const sorted = observed.map((request) => request.ms).sort((a, b) => a - b);
  const p = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1);
  const backends = await Promise.all(
    Array.from({ length: POOL }, () =>
      pool
        .query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_sleep(0.5)")
        .then((rows) => rows[0]?.pid ?? null)
        .catch(() => null),
    ),
  );
  const healthy = new Set(backends.filter((pid) => pid !== null)).size;
  console.log(
    JSON.stringify({
      settings: { restarts, workers, observedSeconds: afterMs / 1000, pool: POOL, healAfterMs: 2000 },
      requestsAfterHeal: observed.length,
      failed,
      over2s: slow,
      p50ms: p(0.5),
      p99ms: p(0.99),
      maxMs: (sorted.at(-1) ?? 0).toFixed(1),
      poolConnectionsAnswering: `${healthy}/${POOL}`,
    }),
  );
} finally {
  await container.close();
  await cluster.stop();
}
