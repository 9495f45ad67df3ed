/**
 * Import jobs on the real SQL (PGlite in memory, and a PostgreSQL server with TEST_DATABASE_URL):
 * the repository's own guarantees (results committed with their products, one holder per job,
 * claims that skip each other), and the use case's resume after a crash on each database.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { PostgresImportJobRepository } from "../../src/adapters/postgres/import-job-repository.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { type ImportJobSettings, ImportJobs, JobLeaseLost } from "../../src/domain/import-jobs.ts";
import { type ImportInput, ImportProducts } from "../../src/domain/import-products.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { bagOfWords } from "../fakes/fake-embedder.ts";
import { FakeTimers } from "../fakes/fake-timers.ts";
import { GateEmbedder } from "../fakes/gate-embedder.ts";
import { forEachDatabase } from "../support/test-databases.ts";
import { waitUntil } from "../support/wait-until.ts";

setDefaultTimeout(60_000);

const DIMENSION = 16;
const SPACE = { model: "fake-gate", dimension: DIMENSION };
const OWNER = "user:1";
const SETTINGS: ImportJobSettings = {
  chunkSize: 2,
  chunkPaceMs: 0,
  leaseMs: 30_000,
  pollMs: 5_000,
  retentionMs: 86_400_000,
};

const product = (i: number) => ({ name: `Producto ${i}`, description: `Descripción ${i}`, category: "cocina" });
const inputs = (count: number): ImportInput[] => Array.from({ length: count }, (_, i) => ({ value: product(i) }));

function repositories(client: SqlClient) {
  return {
    products: new PostgresProducts(client, DIMENSION),
    jobs: new PostgresImportJobRepository(
      client,
      (tx) => new PostgresProducts(tx, DIMENSION, undefined, undefined, { insideTransaction: true }),
    ),
  };
}

/** Resolves once `condition` holds, asking again every few ms (the test's own time limit bounds it). */
async function eventually(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await Bun.sleep(5);
}

const countProducts = async (client: SqlClient) =>
  Number((await client.query<{ n: number | string }>("SELECT count(*) AS n FROM products"))[0]?.n);

forEachDatabase((db) => {
  async function open() {
    const client = await db.migrated(SPACE);
    return { client, ...repositories(client) };
  }

  test("a job stores its items, valid ones pending and invalid ones with their result; counts and times", async () => {
    const { jobs } = await open();
    const job = await jobs.create({
      owner: OWNER,
      catalogue: "default",
      items: [
        { product: { ...product(0), sku: "A-0" } },
        { result: { index: 1, status: "failed", detail: "Campo 'name': es obligatorio" } },
        { product: product(2) },
      ],
      now: Date.UTC(2025, 0, 1, 12),
    });
    expect(job).toEqual({
      id: expect.any(Number),
      owner: OWNER,
      catalogue: "default",
      status: "enqueued",
      total: 3,
      counts: { created: 0, updated: 0, unchanged: 0, failed: 1, pending: 2 },
      error: null,
      enqueuedAt: Date.UTC(2025, 0, 1, 12),
      startedAt: null,
      finishedAt: null,
    });
    expect(await jobs.pending(job.id)).toEqual([
      { position: 0, product: { ...product(0), sku: "A-0" } },
      { position: 2, product: product(2) },
    ]);
    expect(await jobs.results(job.id, -1, 10)).toEqual([
      { index: 1, status: "failed", detail: "Campo 'name': es obligatorio" },
    ]);
    expect(await jobs.get(job.id + 1)).toBeNull();
  });

  test("a chunk's products and results commit together, only for the lease holder; a lost lease stores nothing", async () => {
    const { client, jobs } = await open();
    const { id } = await jobs.create({
      owner: OWNER,
      catalogue: "default",
      items: [{ product: product(0) }, { product: product(1) }],
      now: 0,
    });
    const lease = { token: "holder", until: 30_000 };
    expect((await jobs.claim(lease, 1_000))?.status).toBe("processing");
    const row = (i: number) => ({
      kind: "insert" as const,
      row: { product: product(i), embedding: bagOfWords(`Producto ${i}`, DIMENSION), contentDigest: `d${i}` },
    });
    const stale = { token: "someone-else", until: 30_000 };
    const refused = await jobs
      .commit(id, stale, [row(0)], (outcomes) => outcomes.map(() => ({ index: 0, status: "created" as const })))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(JobLeaseLost);
    expect(await countProducts(client)).toBe(0);

    // A result for an item that has one already is refused whole: its product is not stored either.
    const twice = await jobs
      .commit(id, lease, [row(0)], () => [
        { index: 0, status: "created" },
        { index: 0, status: "created" },
      ])
      .catch((error: unknown) => error);
    expect(twice).toBeInstanceOf(Error);
    expect(await countProducts(client)).toBe(0);

    const results = await jobs.commit(id, lease, [row(0)], (outcomes) =>
      outcomes.map((outcome) => ({
        index: 0,
        status: "created" as const,
        id: "written" in outcome ? outcome.written.id : -1,
      })),
    );
    expect(await countProducts(client)).toBe(1);
    expect(await jobs.results(id, -1, 10)).toEqual(results);
    expect(await jobs.pending(id)).toEqual([{ position: 1, product: product(1) }]);
    expect(await jobs.finish(id, "someone-else", { results: [], status: "succeeded", now: 2_000 })).toBe(false);
    expect(
      await jobs.finish(id, "holder", {
        results: [{ index: 1, status: "failed", detail: "x" }],
        status: "failed",
        error: "y",
        now: 2_000,
      }),
    ).toBe(true);
    expect(await jobs.get(id)).toMatchObject({
      status: "failed",
      error: "y",
      startedAt: 1_000,
      finishedAt: 2_000,
      counts: { created: 1, failed: 1, pending: 0 },
    });
    expect(await jobs.renew(id, lease)).toBe(false);
  });

  test("a chunk's results are matched to the job's items in one pass, though the statistics say no item is pending", async () => {
    const client = await db.migrated(SPACE);
    // The plan each statement recording results would get, asked in its transaction just before it
    // runs: the generic plan, which a prepared statement of the service's pool gets after five runs.
    const plans: string[] = [];
    const explaining = (inner: SqlClient): SqlClient => ({
      ...inner,
      async query<T>(text: string, params: readonly unknown[] = []) {
        if (text.startsWith("UPDATE import_job_items")) {
          await inner.query(`PREPARE recording AS ${text}`);
          await inner.query("SET LOCAL plan_cache_mode = force_generic_plan");
          const literals = params.map((param) => `'${String(param).replaceAll("'", "''")}'`);
          const rows = await inner.query<Record<string, string>>(`EXPLAIN EXECUTE recording(${literals.join(", ")})`);
          await inner.query("SET LOCAL plan_cache_mode = auto");
          await inner.query("DEALLOCATE recording");
          plans.push(rows.map((row) => Object.values(row)[0]).join("\n"));
        }
        return inner.query<T>(text, params);
      },
      transaction: (fn) => inner.transaction((tx) => fn(explaining(tx))),
    });
    const { jobs } = repositories(explaining(client));
    const ITEMS = 1000;
    // Items the size of a real catalogue's (the eval's descriptions run to hundreds of characters).
    const many = (count: number) =>
      Array.from({ length: count }, (_, i) => ({
        product: { ...product(i), description: `Descripción ${i} `.repeat(20) },
      }));
    const finishAll = async (id: number, token: string) =>
      jobs.finish(id, token, {
        results: Array.from({ length: ITEMS }, (_, index) => ({ index, status: "failed" as const, detail: "x" })),
        status: "failed",
        now: 1,
      });
    // Finished jobs, analyzed: to the planner, hardly any item is pending.
    for (let i = 0; i < 3; i++) {
      const lease = { token: `t${i}`, until: 30_000 };
      const { id } = await jobs.create({ owner: OWNER, catalogue: "default", items: many(ITEMS), now: 0, lease });
      expect(await finishAll(id, lease.token)).toBe(true);
    }
    await client.query("ANALYZE import_job_items");
    plans.length = 0;
    const lease = { token: "now", until: 30_000 };
    const { id } = await jobs.create({ owner: OWNER, catalogue: "default", items: many(ITEMS), now: 0, lease });
    expect(await finishAll(id, lease.token)).toBe(true);
    expect((await jobs.get(id))?.counts).toMatchObject({ failed: ITEMS, pending: 0 });
    expect(plans).toHaveLength(1);
    // A nested loop would read every result again for each of the job's items.
    expect(plans[0]).not.toContain("Nested Loop");
  });

  test("claims: each job to one worker, even at once; a live lease is kept, a lapsed or released one taken over", async () => {
    const { jobs } = await open();
    const other = repositories(await db.another()).jobs;
    const first = await jobs.create({ owner: OWNER, catalogue: "default", items: [{ product: product(0) }], now: 0 });
    const second = await jobs.create({ owner: OWNER, catalogue: "default", items: [{ product: product(1) }], now: 0 });
    const claimed = await Promise.all([
      jobs.claim({ token: "a", until: 30_000 }, 0),
      other.claim({ token: "b", until: 30_000 }, 0),
    ]);
    expect(claimed.map((job) => job?.id).sort()).toEqual([first.id, second.id].sort());
    expect(await jobs.claim({ token: "c", until: 60_000 }, 29_999)).toBeNull();
    expect((await jobs.claim({ token: "c", until: 60_000 }, 30_000))?.id).toBe(first.id);
    const holder = claimed.find((job) => job?.id === second.id) === claimed[0] ? "a" : "b";
    await jobs.release(second.id, holder);
    expect((await jobs.claim({ token: "d", until: 60_000 }, 30_000))?.id).toBe(second.id);
  });

  test("finished jobs are pruned with their items; unfinished ones stay", async () => {
    const { client, jobs } = await open();
    const done = await jobs.create({ owner: OWNER, catalogue: "default", items: [{ product: product(0) }], now: 0 });
    await jobs.claim({ token: "a", until: 30_000 }, 0);
    await jobs.finish(done.id, "a", {
      results: [{ index: 0, status: "failed", detail: "x" }],
      status: "succeeded",
      now: 1_000,
    });
    const unfinished = await jobs.create({
      owner: OWNER,
      catalogue: "default",
      items: [{ product: product(1) }],
      now: 0,
    });
    expect(await jobs.prune(1_000)).toBe(0);
    expect(await jobs.prune(1_001)).toBe(1);
    expect(await jobs.get(done.id)).toBeNull();
    expect((await jobs.get(unfinished.id))?.status).toBe("enqueued");
    const items = await client.query<{ job_id: number | string }>("SELECT job_id FROM import_job_items");
    expect(items.map((item) => Number(item.job_id))).toEqual([unfinished.id]);
  });

  describe("a job interrupted by a crash", () => {
    test("is resumed by the next process once the lease lapses; the crashed one, back, stores nothing twice", async () => {
      const { client, jobs, products } = await open();
      const second = repositories(await db.another());
      const clock = new FakeClock();
      const timers = new FakeTimers();
      const embedder = new GateEmbedder(DIMENSION);
      const events: Record<string, unknown>[] = [];
      const processOn = (stores: ReturnType<typeof repositories>) =>
        new ImportJobs({
          jobs: stores.jobs,
          importProducts: new ImportProducts({ products: stores.products, embedder }),
          clock,
          timers,
          settings: SETTINGS,
          log: (event) => events.push(event),
        });
      const crashed = processOn({ jobs, products });
      const job = await crashed.enqueue(OWNER, "default", inputs(5));
      const stopCrashed = new AbortController();
      const crashedLoop = crashed.run(stopCrashed.signal);
      (await embedder.next()).pass(); // items 0 and 1: stored
      const hung = await embedder.next(); // items 2 and 3: the process hangs here, as dead
      await eventually(async () => (await jobs.get(job.id))?.counts.created === 2);

      clock.advance(SETTINGS.leaseMs);
      const next = processOn(second);
      const stopNext = new AbortController();
      const nextLoop = next.run(stopNext.signal);
      (await embedder.next()).pass(); // items 2 and 3, by the next process
      (await embedder.next()).pass(); // item 4
      await eventually(async () => (await jobs.get(job.id))?.status === "succeeded");

      hung.pass(); // the hung process comes back and tries to store items 2 and 3 again
      await waitUntil(() => events.some((event) => event.event === "import_job_lease_lost"));
      expect(await countProducts(client)).toBe(5);
      const report = await next.report(OWNER, job.id, { after: -1, limit: 10 });
      expect(report.job.counts).toEqual({ created: 5, updated: 0, unchanged: 0, failed: 0, pending: 0 });
      expect(new Set(report.items.map((item) => item.id)).size).toBe(5);

      stopCrashed.abort();
      stopNext.abort();
      await Promise.all([crashedLoop, nextLoop]);
    });
  });
});
