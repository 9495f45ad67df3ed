import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { MemoryRateLimitCounters } from "../../src/adapters/in-process/rate-limit-counters.ts";
import { PostgresRateLimitCounters } from "../../src/adapters/postgres/rate-limit-counters.ts";
import { prepareDatabase } from "../../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import type { RateLimitCounters } from "../../src/ports/rate-limit-counters.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { openNewPglite } from "../support/new-database.ts";
import { blockHooks } from "../support/skipped-blocks.ts";

// Opening PGlite takes a few seconds on 2 busy cores.
setDefaultTimeout(60_000);

const SPACE = { model: "test-model", dimension: 4 };
let keys = 0;
/** A key no other test has used (the database ones share a table). */
const freshKey = () => `test:${process.pid}:${++keys}`;

/**
 * What every store must do. `pass(ms)` lets that much time pass on the store's clock: a fake clock
 * moved on for the memory counters; real time for the SQL ones, whose clock is the database's
 * (waiting longer than a window always ends it, however slow the machine).
 */
function countersContract(counters: () => RateLimitCounters, pass: (ms: number) => Promise<void>) {
  test("counts hits per key within a window, with the time left", async () => {
    const key = freshKey();
    const first = await counters().hit(key, 60_000);
    const second = await counters().hit(key, 60_000);
    expect([first.hits, second.hits]).toEqual([1, 2]);
    expect(first.resetMs).toBeGreaterThan(59_000);
    expect(first.resetMs).toBeLessThanOrEqual(60_000);
    expect(second.resetMs).toBeLessThanOrEqual(first.resetMs);
    expect((await counters().hit(freshKey(), 60_000)).hits).toBe(1);
  });

  test("a new window starts from one once the last has ended", async () => {
    const key = freshKey();
    await counters().hit(key, 100);
    await counters().hit(key, 100);
    await pass(130);
    const next = await counters().hit(key, 100);
    expect(next.hits).toBe(1);
    expect(next.resetMs).toBeGreaterThan(50);
  });

  test("a cost is counted whole, or not at all when it would take the window past its limit", async () => {
    const key = freshKey();
    expect(await counters().hit(key, 60_000, 3, 5)).toMatchObject({ hits: 3, counted: true });
    const refused = await counters().hit(key, 60_000, 3, 5);
    expect(refused).toMatchObject({ hits: 3, counted: false });
    expect(refused.resetMs).toBeGreaterThan(0);
    expect(await counters().hit(key, 60_000, 2, 5)).toMatchObject({ hits: 5, counted: true });
    expect(await counters().hit(key, 60_000, 1, 5)).toMatchObject({ hits: 5, counted: false });
    expect(await counters().hit(key, 60_000)).toMatchObject({ hits: 6, counted: true });
  });

  test("costs sent at once never pass the limit together", async () => {
    const key = freshKey();
    const counts = await Promise.all(Array.from({ length: 10 }, () => counters().hit(key, 60_000, 3, 10)));
    expect(counts.filter((count) => count.counted).length).toBe(3);
    expect(Math.max(...counts.map((count) => count.hits))).toBe(9);
  });

  test("hits sent at once are each counted once", async () => {
    const key = freshKey();
    const counts = await Promise.all(Array.from({ length: 20 }, () => counters().hit(key, 60_000)));
    expect(counts.map((count) => count.hits).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
}

describe("memory counters", () => {
  const clock = new FakeClock();
  const counters = new MemoryRateLimitCounters(clock);
  countersContract(
    () => counters,
    async (ms) => clock.advance(ms),
  );

  test("a window ends exactly windowMs after its first hit", async () => {
    const key = freshKey();
    await counters.hit(key, 1_000);
    clock.advance(999);
    expect(await counters.hit(key, 1_000)).toEqual({ hits: 2, resetMs: 1, counted: true });
    clock.advance(1);
    expect(await counters.hit(key, 1_000)).toEqual({ hits: 1, resetMs: 1_000, counted: true });
  });

  test("keep at most maxKeys keys, dropping ended windows first, then the oldest", async () => {
    const clock = new FakeClock();
    const bounded = new MemoryRateLimitCounters(clock, 3);
    await bounded.hit("short", 1_000);
    await bounded.hit("a", 60_000);
    await bounded.hit("b", 60_000);
    clock.advance(2_000);
    await bounded.hit("c", 60_000);
    expect(bounded.size).toBe(3);
    expect((await bounded.hit("a", 60_000)).hits).toBe(2);
    await bounded.hit("d", 60_000);
    expect(bounded.size).toBe(3);
    expect((await bounded.hit("b", 60_000)).hits).toBe(2);
    expect((await bounded.hit("a", 60_000)).hits).toBe(1);
  });
});

/** The same table and SQL on PGlite (in memory) and, when TEST_DATABASE_URL is set, on a server; `skipped` as its block is. */
function sqlCounters(
  label: string,
  skipped: boolean,
  open: () => Promise<{ client: SqlClient; replica: SqlClient; close: () => Promise<void> }>,
) {
  describe(label, () => {
    let opened: Awaited<ReturnType<typeof open>>;
    let counters: PostgresRateLimitCounters;
    blockHooks(skipped, {
      async beforeAll() {
        opened = await open();
        await prepareDatabase(opened.client, SPACE);
        counters = new PostgresRateLimitCounters(opened.client, { pruneEvery: 5 });
      },
      afterAll: () => opened.close(),
    });

    countersContract(
      () => counters,
      (ms) => Bun.sleep(ms),
    );

    test("replicas on the same database count together", async () => {
      const key = freshKey();
      const replica = new PostgresRateLimitCounters(opened.replica);
      const counts = [];
      for (const each of [counters, replica, counters, replica]) counts.push((await each.hit(key, 60_000)).hits);
      expect(counts).toEqual([1, 2, 3, 4]);
    });

    test("windows that ended are pruned in the background, the others kept", async () => {
      const ended = freshKey();
      const live = freshKey();
      await counters.hit(ended, 50);
      await counters.hit(live, 60_000);
      await Bun.sleep(80);
      for (let i = 0; i < 5; i++) await counters.hit(live, 60_000);
      await counters.settled();
      const rows = await opened.client.query<{ key: string }>(
        "SELECT key FROM rate_limit_counters WHERE key = ANY($1::text[])",
        [[ended, live]],
      );
      expect(rows.map((row) => row.key)).toEqual([live]);
    });
  });
}

const postgresUrl = Bun.env.TEST_DATABASE_URL ?? "";

// The service counts in process on PGlite; the table's SQL runs on PGlite here as a stand-in for a
// server (a copy of a new database: it costs a fraction of a second), with or without TEST_DATABASE_URL.
describe("without a server", () => {
  sqlCounters("PostgreSQL counters on PGlite", false, async () => {
    const client = await openNewPglite();
    return { client, replica: client, close: () => client.close() };
  });
});

describe.skipIf(!postgresUrl)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  sqlCounters("PostgreSQL counters on a server", !postgresUrl, async () => {
    const schema = `rate_${process.pid}`;
    const admin = connectPostgres(postgresUrl, { maxConnections: 1 });
    await admin.query("CREATE EXTENSION IF NOT EXISTS vector");
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(postgresUrl);
    url.searchParams.set("search_path", `${schema},public`);
    // Two pools, as two replicas would have.
    const client = connectPostgres(url.toString(), { maxConnections: 4 });
    const replica = connectPostgres(url.toString(), { maxConnections: 2 });
    return {
      client,
      replica,
      close: async () => {
        await client.close();
        await replica.close();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.close();
      },
    };
  });
});
