/**
 * What the rate limiter costs per limited request, and what counting the products costs per scrape
 * of /metrics: the counters' upsert on PGlite (in memory and on disk) and on a PostgreSQL server
 * (sequential, and with 8 and 32 requests at once), against the in-process counters; then
 * `count(*)` over 10,000 products of 3072 dimensions.
 * Run by hand: `bun bench/rate-limit.ts [--url postgres://…]` (or TEST_DATABASE_URL); without a
 * URL only PGlite and memory are measured. The PostgreSQL run works in a schema of its own, dropped after.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { MemoryRateLimitCounters } from "../src/adapters/in-process/rate-limit-counters.ts";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { countProducts } from "../src/adapters/postgres/catalog-stats.ts";
import { PostgresRateLimitCounters } from "../src/adapters/postgres/rate-limit-counters.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../src/adapters/postgres/sql-client.ts";
import { systemClock } from "../src/ports/clock.ts";
import type { RateLimitCounters } from "../src/ports/rate-limit-counters.ts";

const { values } = parseArgs({ options: { url: { type: "string" } } });
const url = values.url ?? Bun.env.TEST_DATABASE_URL;
const HITS = 3_000;
const CLIENTS = 200;
const WINDOW_MS = 60_000;
const SPACE = { model: "bench", dimension: 3072 };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;
}

/** `HITS` hits over `CLIENTS` keys, `concurrency` at a time; prints p50/p95 per hit and the throughput. */
async function measure(label: string, counters: RateLimitCounters, concurrency = 1): Promise<void> {
  for (let i = 0; i < 200; i++) await counters.hit(`warm:${i % CLIENTS}`, WINDOW_MS);
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < HITS) {
        const i = next++;
        const t0 = performance.now();
        await counters.hit(`search:user:${i % CLIENTS}`, WINDOW_MS);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - started;
  times.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(44)} p50 ${percentile(times, 0.5).toFixed(3)} ms  p95 ${percentile(times, 0.95).toFixed(3)} ms  ` +
      `${Math.round((HITS / elapsed) * 1000)} hits/s`,
  );
}

async function countCost(label: string, db: SqlClient): Promise<void> {
  await db.query(
    `INSERT INTO products (name, description, category, embedding)
     SELECT 'p' || i, 'd', 'c', (SELECT array_agg(random())::vector(3072) FROM generate_series(1, 3072))
     FROM generate_series(1, 10000) AS i`,
  );
  await countProducts(db);
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await countProducts(db);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(44)} p50 ${percentile(times, 0.5).toFixed(1)} ms  max ${times.at(-1)?.toFixed(1)} ms`);
}

await measure("memory counters", new MemoryRateLimitCounters(systemClock));

const memoryDb = await openPglite(undefined);
await prepareDatabase(memoryDb, SPACE);
await measure("PGlite in memory", new PostgresRateLimitCounters(memoryDb));
await countCost("count(*) of 10,000 products, PGlite in memory", memoryDb);
await memoryDb.close();

const dir = mkdtempSync(join(tmpdir(), "sku-bench-rate-"));
try {
  const diskDb = await openPglite(dir);
  await prepareDatabase(diskDb, SPACE);
  await measure("PGlite on disk", new PostgresRateLimitCounters(diskDb));
  await diskDb.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (url) {
  const schema = `bench_rate_${process.pid}`;
  const admin = connectPostgres(url, { maxConnections: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
  const scoped = new URL(url);
  scoped.searchParams.set("search_path", `${schema},public`);
  const db = connectPostgres(scoped.toString());
  try {
    await prepareDatabase(db, SPACE);
    const counters = new PostgresRateLimitCounters(db);
    await measure("PostgreSQL, one at a time", counters);
    await measure("PostgreSQL, 8 at once", counters, 8);
    await measure("PostgreSQL, 32 at once (pool of 10)", counters, 32);
    await countCost("count(*) of 10,000 products, PostgreSQL", db);
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
}
