/**
 * The service on a real primary and its hot standbys (made by `pg_basebackup -R`, as an operator
 * makes them): started on a standby it serves reads and refuses writes with 503; its reads follow
 * DATABASE_READ_URL; a caller reads its own writes through a standby that replays them late on
 * purpose (recovery_min_apply_delay, and replay paused while the test looks), on the instance that
 * wrote them and, with the write's X-Read-After, on any other; rate limits still refuse past the limit while the database
 * takes no writes; two instances never do upkeep at once.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { MIGRATION_VERSIONS } from "../../src/adapters/postgres/schema.ts";
import { connectPostgres } from "../../src/adapters/postgres/sql-client.ts";
import { SqlUpkeepLease } from "../../src/adapters/postgres/upkeep-lease.ts";
import {
  canRunPostgresCluster,
  caughtUp,
  type PostgresCluster,
  psql,
  startPostgresCluster,
  startStandby,
} from "../support/postgres-cluster.ts";
import { product, type ReplicaService, startService } from "../support/replica-service.ts";
import { blockHooks } from "../support/skipped-blocks.ts";

setDefaultTimeout(120_000);

/**
 * How late the delayed standby replays each commit, as a lagging standby would. While a test looks
 * at what the standby has not replayed, replay is paused besides (pg_wal_replay_pause): what it
 * shows then does not depend on how fast the machine runs the test's steps.
 */
const APPLY_DELAY_MS = 4_000;

/** Runs `look` while `standby` replays nothing, then lets it replay again. */
async function withReplayPaused<T>(standby: PostgresCluster, look: () => Promise<T>): Promise<T> {
  await psql(standby, "SELECT pg_wal_replay_pause()");
  try {
    return await look();
  } finally {
    await psql(standby, "SELECT pg_wal_replay_resume()");
  }
}

const skipped = !canRunPostgresCluster();
let primary: PostgresCluster;
let standby: PostgresCluster;
let delayed: PostgresCluster;
/** An instance on the primary: it migrated the database and made the admin. */
let writer: ReplicaService;
const services: ReplicaService[] = [];

blockHooks(skipped, {
  async beforeAll() {
    primary = await startPostgresCluster();
    [standby, delayed] = await Promise.all([
      startStandby(primary),
      startStandby(primary, { applyDelayMs: APPLY_DELAY_MS }),
    ]);
    writer = await startService({ DATABASE_URL: primary.url });
    services.push(writer);
    const token = await writer.login();
    for (const name of ["Lámpara de escritorio", "Silla de oficina", "Taza térmica"]) {
      expect((await writer.call("POST", "/products/", { token, json: product(name) })).status).toBe(201);
    }
    await caughtUp(primary, standby);
  },
  async afterAll() {
    for (const service of services) await service.close().catch(() => {});
    await Promise.all([standby?.stop(), delayed?.stop()]);
    await primary?.stop();
  },
  timeout: 120_000,
});

describe.skipIf(skipped)("started on a hot standby", () => {
  let reader: ReplicaService;
  afterAll(() => reader?.close());

  test("it starts read-only: searches and reads are served, every write answers 503 with Retry-After", async () => {
    reader = await startService({ DATABASE_URL: standby.url, SEARCH_RATE_LIMIT: "1000" });
    expect(reader.events.some((event) => event.event === "read_only_start")).toBe(true);
    const ready = await reader.call("GET", "/health/ready");
    expect(ready.status).toBe(200);
    expect(ready.json.read_only).toBe(true);

    const token = await reader.login();
    const search = await reader.call("POST", "/products/search", { token, json: { query: "lámpara escritorio" } });
    expect(search.status).toBe(200);
    expect(search.json.results[0].name).toBe("Lámpara de escritorio");
    const list = await reader.call("GET", "/products/?limit=10", { token });
    expect(list.status).toBe(200);
    expect(list.json.total).toBe(3);

    const id = list.json.items[0].id as number;
    const writes = [
      await reader.call("POST", "/products/", { token, json: product("Mesa plegable") }),
      await reader.call("PATCH", `/products/${id}`, { token, json: { category: "otra" } }),
      await reader.call("DELETE", `/products/${id}`, { token }),
      await reader.call("POST", "/products/bulk", { token, json: [product("Estante")] }),
    ];
    for (const write of writes) {
      expect(write.status).toBe(503);
      expect(write.headers.get("retry-after")).toBe("5");
      expect(write.json.detail).toContain("solo admite lecturas");
    }
    // Nothing reached the primary either.
    expect(await psql(primary, "SELECT count(*) FROM products")).toBe("3");
  });

  test("rate limits still refuse past the limit: counted in the instance's memory", async () => {
    const limited = await startService({ DATABASE_URL: standby.url, SEARCH_RATE_LIMIT: "2" });
    services.push(limited);
    const token = await limited.login();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await limited.call("POST", "/products/search", { token, json: { query: "taza" } })).status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  test("a schema older than the program needs: it exits naming both versions, changing nothing", async () => {
    await psql(primary, "CREATE DATABASE older");
    await caughtUp(primary, standby);
    const failure = await startService({
      DATABASE_URL: standby.url.replace(/\/postgres$/, "/older"),
    }).then(
      () => "started",
      (error: Error) => error.message,
    );
    const latest = MIGRATION_VERSIONS.at(-1);
    expect(failure).toMatch(
      new RegExp(`schema is at version 0, but this program needs version ${latest}; .*read-only hot standby`),
    );
  });
});

describe.skipIf(skipped)("a read pool on a standby that replays late (DATABASE_READ_URL)", () => {
  let split: ReplicaService;
  /** Reads on the delayed standby; a read that must see a write waits 300 ms for it there, then reads on the primary. */
  const splitEnv = () => ({
    DATABASE_URL: primary.url,
    DATABASE_READ_URL: delayed.url,
    READ_YOUR_WRITES_WAIT_MS: "300",
  });
  afterAll(() => split?.close());

  test("reads follow DATABASE_READ_URL; the writer reads its own writes at once, others after the lag", async () => {
    split = await startService(splitEnv());
    const manageUsers = await split.service.root.manageUsers();
    await manageUsers.add("otra", "otra-contraseña-larga", "admin");
    await caughtUp(primary, delayed);
    const [mine, theirs] = [await split.login(), await split.login("otra", "otra-contraseña-larga")];

    const id = await withReplayPaused(delayed, async () => {
      const created = await split.call("POST", "/products/", { token: mine, json: product("Cafetera italiana") });
      expect(created.status).toBe(201);
      const id = created.json.id as number;

      // The writer: its read and its search see the product (waited for, then read on the primary).
      expect((await split.call("GET", `/products/${id}`, { token: mine })).status).toBe(200);
      const found = await split.call("POST", "/products/search", { token: mine, json: { query: "cafetera italiana" } });
      expect(found.json.results.map((hit: { id: number }) => hit.id)).toContain(id);
      // Another caller reads from the standby, which has not replayed it yet.
      expect((await split.call("GET", `/products/${id}`, { token: theirs })).status).toBe(404);
      return id;
    });

    await caughtUp(primary, delayed);
    expect((await split.call("GET", `/products/${id}`, { token: theirs })).status).toBe(200);
  });

  test("on any instance: a read carrying a write's X-Read-After sees it, one without reads the standby as it is", async () => {
    split ??= await startService(splitEnv());
    const token = await writer.login();
    await withReplayPaused(delayed, async () => {
      // Written through the instance on the primary: the answer says where the commit is.
      const created = await writer.call("POST", "/products/", { token, json: product("Molinillo de café") });
      expect(created.status).toBe(201);
      const readAfter = created.headers.get("x-read-after") as string;
      expect(readAfter).toMatch(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/);
      const id = created.json.id as number;

      // The other instance reads from the standby, which has not replayed it, and knows nothing of the write.
      expect((await split.call("GET", `/products/${id}`, { token })).status).toBe(404);
      const headers = { "X-Read-After": readAfter };
      expect((await split.call("GET", `/products/${id}`, { token, headers })).status).toBe(200);
      const list = await split.call("GET", "/products/?order=newest&limit=1", { token, headers });
      expect(list.json.items[0].id).toBe(id);
      const found = await split.call("POST", "/products/search", {
        token,
        headers,
        json: { query: "molinillo de café" },
      });
      expect(found.json.results.map((hit: { id: number }) => hit.id)).toContain(id);
      // The same in lower case, as PostgreSQL also writes it.
      const lower = { "X-Read-After": readAfter.toLowerCase() };
      expect((await split.call("GET", `/products/${id}`, { token, headers: lower })).status).toBe(200);

      // A change on the standby's instance answers its own position, which the writer's instance honours too.
      const changed = await split.call("PATCH", `/products/${id}`, { token, headers, json: { category: "molienda" } });
      expect(changed.status).toBe(200);
      const later = changed.headers.get("x-read-after") as string;
      expect(later).toMatch(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/);
      expect(
        (await writer.call("GET", `/products/${id}`, { token, headers: { "X-Read-After": later } })).json,
      ).toMatchObject({
        category: "molienda",
      });

      for (const bad of ["", "0/", "16B3748", "0/16B3748; drop", "G/1", "123456789/1"]) {
        const refused = await split.call("GET", `/products/${id}`, { token, headers: { "X-Read-After": bad } });
        expect(refused.status).toBe(400);
        expect(refused.json.detail).toContain("X-Read-After no es válida");
      }
    });
  });
});

describe.skipIf(skipped)("several instances on one database", () => {
  test("the upkeep lease is held by one process at a time, and freed by its holder", async () => {
    const db = connectPostgres(primary.url, { maxConnections: 2 });
    try {
      const first = new SqlUpkeepLease(db, { holder: "instance-a" }, "test-lease");
      const second = new SqlUpkeepLease(db, { holder: "instance-b" }, "test-lease");
      expect(await first.acquire()).toBe(true);
      expect(await second.acquire()).toBe(false);
      expect(await first.acquire()).toBe(true);
      expect(await first.holder()).toBe("instance-a");
      await first.release();
      expect(await second.acquire()).toBe(true);
      expect(await first.acquire()).toBe(false);
      await second.release();
    } finally {
      await db.close();
    }
  });

  test("two instances looking at the vector index at once: exactly one builds it", async () => {
    const env = { DATABASE_URL: primary.url, VECTOR_INDEX: "auto", VECTOR_INDEX_MIN_ROWS: "1" };
    const [a, b] = [await startService(env), await startService(env)];
    services.push(a, b);
    const [one, other] = await Promise.all([
      (await a.service.root.maintainVectorIndex()).afterLoad("default"),
      (await b.service.root.maintainVectorIndex()).afterLoad("default"),
    ]);
    const decisions = [one, other].sort();
    // The second either found the lease taken, or the index already built by the first.
    expect(decisions[0]).toBe("built");
    expect(["busy", "ready"]).toContain(decisions[1] as string);
    expect(await psql(primary, "SELECT count(*) FROM pg_indexes WHERE indexname = 'products_c1_embedding_hnsw'")).toBe(
      "1",
    );
  });
});
