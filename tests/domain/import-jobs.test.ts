/**
 * ImportJobs on fakes: the products and jobs in memory, an embedder whose calls wait at a gate the
 * test opens, a clock and timers that move only when told. So each test decides how far an import
 * gets before it is handed over, stopped or crashed, and nothing depends on the machine's speed.
 */
import { describe, expect, test } from "bun:test";
import { EmbeddingUnavailable, JobNotFound } from "../../src/domain/errors.ts";
import { type ImportJobSettings, ImportJobs } from "../../src/domain/import-jobs.ts";
import { type ImportInput, ImportProducts } from "../../src/domain/import-products.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { FakeTimers } from "../fakes/fake-timers.ts";
import { GateEmbedder } from "../fakes/gate-embedder.ts";
import { MemoryImportJobRepository } from "../fakes/memory-import-job-repository.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";
import { waitUntil } from "../support/wait-until.ts";

const OWNER = "user:1";
const SETTINGS: ImportJobSettings = {
  chunkSize: 2,
  chunkPaceMs: 0,
  leaseMs: 30_000,
  pollMs: 5_000,
  retentionMs: 86_400_000,
};

/** Products without a sku: written twice, they would be two products (a duplicate is visible). */
const inputs = (count: number): ImportInput[] =>
  Array.from({ length: count }, (_, i) => ({
    value: { name: `Producto ${i}`, description: `Descripción ${i}`, category: "cocina" },
  }));

const NEVER = new AbortController().signal;

function setup(settings: Partial<ImportJobSettings> = {}) {
  const clock = new FakeClock();
  const timers = new FakeTimers();
  const products = new MemoryProductRepository(16);
  const jobs = new MemoryImportJobRepository(products);
  const embedder = new GateEmbedder(16);
  const events: Record<string, unknown>[] = [];
  /** Another process on the same database: its own use case, the same stores. */
  const worker = () =>
    new ImportJobs({
      jobs,
      importProducts: new ImportProducts({ products, embedder }),
      clock,
      timers,
      settings: { ...SETTINGS, ...settings },
      log: (event) => events.push(event),
    });
  return { clock, timers, products, jobs, embedder, events, imports: worker(), worker };
}

/** Runs a worker loop until the returned function stops it (and waits for it to end). */
function running(imports: ImportJobs) {
  const stop = new AbortController();
  const loop = imports.run(stop.signal);
  return async () => {
    stop.abort();
    await loop;
  };
}

describe("an import worked in its request", () => {
  test("answers its report when it finishes in time; its job keeps it, for its owner only", async () => {
    const { imports, embedder, products } = setup();
    embedder.openAll();
    const outcome = await imports.submit(OWNER, "default", [...inputs(3), { value: { name: "Sin más" } }], {
      handover: NEVER,
      signal: NEVER,
    });
    if (outcome.kind !== "finished" || !outcome.job)
      throw new Error(`expected finished with a job, got ${outcome.kind}`);
    expect(outcome.report.counts).toEqual({ created: 3, updated: 0, unchanged: 0, failed: 1 });
    expect(outcome.report.items[3]).toEqual({
      index: 3,
      status: "failed",
      detail: "Campo 'description': es obligatorio",
    });
    expect(outcome.job).toMatchObject({ status: "succeeded", total: 4, error: null });
    expect(products.products).toHaveLength(3);

    const job = await imports.get(OWNER, outcome.job.id);
    expect(job).toMatchObject({ status: "succeeded", counts: { created: 3, failed: 1, pending: 0 } });
    const first = await imports.report(OWNER, job.id, { after: -1, limit: 2 });
    expect(first.items.map((item) => item.index)).toEqual([0, 1]);
    expect(first.next).toBe(1);
    const second = await imports.report(OWNER, job.id, { after: 1, limit: 2 });
    expect(second.items).toEqual([
      { index: 2, status: "created", id: expect.any(Number) },
      { index: 3, status: "failed", detail: "Campo 'description': es obligatorio" },
    ]);
    expect(second.next).toBeNull();

    expect(imports.get("user:2", job.id)).rejects.toBeInstanceOf(JobNotFound);
    expect(imports.report(OWNER, 999, { after: -1, limit: 10 })).rejects.toBeInstanceOf(JobNotFound);
  });

  test("handed over mid-import: the job holds what was stored, a worker stores the rest, each item once", async () => {
    const { imports, embedder, jobs, products } = setup();
    const handover = new AbortController();
    const submitted = imports.submit(OWNER, "default", inputs(5), {
      handover: handover.signal,
      signal: NEVER,
    });
    (await embedder.next()).pass(); // items 0 and 1
    await embedder.next(); // items 2 and 3: held while the request hands over
    await waitUntil(() => jobs.jobs[0]?.counts.created === 2);
    handover.abort();
    const outcome = await submitted;
    if (outcome.kind !== "accepted") throw new Error(`expected accepted, got ${outcome.kind}`);
    expect(outcome.job).toMatchObject({
      status: "processing",
      total: 5,
      counts: { created: 2, updated: 0, unchanged: 0, failed: 0, pending: 3 },
    });
    // The request's work lets the job go: the held embedding is cancelled, the lease released.
    await waitUntil(() => jobs.leaseOf(outcome.job.id) === null);

    embedder.openAll();
    const stop = running(imports);
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    await stop();
    const { items } = await imports.report(OWNER, outcome.job.id, { after: -1, limit: 10 });
    expect(items.map((item) => item.status)).toEqual(["created", "created", "created", "created", "created"]);
    expect(products.products.map((product) => product.name).sort()).toEqual([
      "Producto 0",
      "Producto 1",
      "Producto 2",
      "Producto 3",
      "Producto 4",
    ]);
    expect(new Set(items.map((item) => item.id)).size).toBe(5);
  });

  test("the embedder failing for good fails the job: every item not stored says why", async () => {
    const { imports, embedder } = setup();
    const submitted = imports.submit(OWNER, "default", inputs(3), { handover: NEVER, signal: NEVER });
    (await embedder.next()).pass();
    (await embedder.next()).fail();
    const outcome = await submitted;
    if (outcome.kind !== "finished" || !outcome.job)
      throw new Error(`expected finished with a job, got ${outcome.kind}`);
    const reason = `No se guardó: ${new EmbeddingUnavailable().message}`;
    expect(outcome.report.items.map(({ status, detail }) => ({ status, detail }))).toEqual([
      { status: "created", detail: undefined },
      { status: "created", detail: undefined },
      { status: "failed", detail: reason },
    ]);
    const job = await imports.get(OWNER, outcome.job.id);
    expect(job).toMatchObject({ status: "failed", error: new EmbeddingUnavailable().message });
    expect(job.counts).toEqual({ created: 2, updated: 0, unchanged: 0, failed: 1, pending: 0 });
  });
});

describe("an import that fits one chunk", () => {
  test("is answered without a job when it is done in time", async () => {
    const { imports, embedder, jobs, products } = setup();
    embedder.openAll();
    const outcome = await imports.submit(OWNER, "default", [...inputs(2), { value: { name: "Sin más" } }], {
      handover: NEVER,
      signal: NEVER,
    });
    expect(outcome).toMatchObject({ kind: "finished", report: { counts: { created: 2, failed: 1 } } });
    expect(outcome.job).toBeUndefined();
    expect(jobs.jobs).toEqual([]);
    expect(products.products).toHaveLength(2);
  });

  test("handed over before it is written, becomes a job whole; a worker stores it", async () => {
    const { imports, embedder, jobs, products } = setup();
    const handover = new AbortController();
    const submitted = imports.submit(OWNER, "default", inputs(2), {
      handover: handover.signal,
      signal: NEVER,
    });
    await embedder.next(); // held: nothing is stored
    handover.abort();
    const outcome = await submitted;
    expect(outcome).toMatchObject({ kind: "accepted", job: { status: "enqueued", counts: { pending: 2 } } });
    expect(products.products).toEqual([]);
    embedder.openAll();
    const stop = running(imports);
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    await stop();
    expect(products.products).toHaveLength(2);
  });

  test("whose client went away stores nothing and leaves no job", async () => {
    const { imports, embedder, jobs, products } = setup();
    const gone = new AbortController();
    const submitted = imports.submit(OWNER, "default", inputs(2), { handover: NEVER, signal: gone.signal });
    await embedder.next();
    gone.abort(new DOMException("El cliente cerró la conexión", "AbortError"));
    expect(submitted).rejects.toThrow("El cliente cerró la conexión");
    await submitted.catch(() => {});
    expect(jobs.jobs).toEqual([]);
    expect(products.products).toEqual([]);
  });
});

describe("jobs worked by the worker loop", () => {
  test("enqueue (Prefer: respond-async): a job at once, which the idle worker takes up as soon as it is sent", async () => {
    const { imports, embedder, timers, jobs } = setup();
    embedder.openAll();
    const stop = running(imports);
    expect(await timers.nextSleep()).toBe(SETTINGS.pollMs); // idle, waiting for work
    const job = await imports.enqueue(OWNER, "default", inputs(3));
    expect(job).toMatchObject({ status: "enqueued", counts: { pending: 3 } });
    // Woken, not by the poll: the fake clock never moved.
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    expect((await imports.get(OWNER, job.id)).counts).toMatchObject({ created: 3, pending: 0 });
    await stop();
  });

  test("a worker that stalls past its lease loses the job to another; back, it stores nothing twice", async () => {
    const { worker, embedder, clock, jobs, products, events } = setup();
    const first = worker();
    const job = await first.enqueue(OWNER, "default", inputs(3));
    const stopFirst = running(first);
    (await embedder.next()).pass(); // items 0 and 1, stored
    const stalled = await embedder.next(); // item 2: the first worker hangs here, renewing nothing
    await waitUntil(() => jobs.jobs[0]?.counts.created === 2);

    clock.advance(SETTINGS.leaseMs + 1);
    const second = worker();
    const stopSecond = running(second);
    (await embedder.next()).pass(); // item 2, by the second worker
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");

    stalled.pass(); // the first worker wakes up and tries to store item 2 again
    await waitUntil(() => events.some((event) => event.event === "import_job_lease_lost"));
    expect(products.products).toHaveLength(3);
    const { items } = await first.report(OWNER, job.id, { after: -1, limit: 10 });
    expect(items.map((item) => item.status)).toEqual(["created", "created", "created"]);
    await stopFirst();
    await stopSecond();
  });

  test("stopping (a restart) releases the job under way; the next worker resumes it from what is pending", async () => {
    const { worker, embedder, jobs, products } = setup();
    const before = worker();
    const job = await before.enqueue(OWNER, "default", inputs(4));
    running(before);
    (await embedder.next()).pass();
    await embedder.next();
    await waitUntil(() => jobs.jobs[0]?.counts.created === 2);
    await before.stop();
    expect(jobs.leaseOf(job.id)).toBeNull();
    expect(jobs.jobs[0]).toMatchObject({ status: "processing", counts: { created: 2, pending: 2 } });

    embedder.openAll();
    const after = worker();
    const stop = running(after);
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    await stop();
    expect(products.products).toHaveLength(4);
    expect(embedder.embedded).toHaveLength(4);
  });

  test("the database failing mid-job leaves the rest pending, not failed: the job goes on once it answers", async () => {
    const { imports, embedder, jobs, products, events } = setup();
    embedder.openAll();
    jobs.failCommits = 1;
    const job = await imports.enqueue(OWNER, "default", inputs(3));
    const stop = running(imports);
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    await stop();
    expect(events.filter((event) => event.event === "import_job_interrupted")).toHaveLength(1);
    expect((await imports.get(OWNER, job.id)).counts).toMatchObject({ created: 3, failed: 0, pending: 0 });
    expect(products.products).toHaveLength(3);
  });

  test("a job's chunks follow its pace: the first chunkSize, then what it stores per chunkPaceMs (16 to 512)", async () => {
    const sizes = async (msPerCall: number) => {
      const { imports, embedder, clock, jobs } = setup({ chunkSize: 2, chunkPaceMs: 4_000 });
      await imports.enqueue(OWNER, "default", inputs(600));
      const stop = running(imports);
      const calls: number[] = [];
      while (calls.reduce((sum, size) => sum + size, 0) < 600) {
        const call = await embedder.next();
        calls.push(call.texts.length);
        clock.advance(msPerCall);
        call.pass();
      }
      await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
      await stop();
      return calls;
    };
    // Instant: the third chunk (cut once the first is stored) is as large as it may be.
    expect(await sizes(0)).toEqual([2, 2, 512, 84]);
    // 2 items per 2 s stored when the third is cut: 4 s of them is 4 items, the least is 16.
    expect((await sizes(1_000)).slice(0, 4)).toEqual([2, 2, 16, 16]);
  });

  test("a new job's first chunk is sized by the pace of the last one, not chunkSize again", async () => {
    const { imports, embedder, clock, jobs } = setup({ chunkSize: 2, chunkPaceMs: 4_000 });
    const stop = running(imports);
    const callsOf = async (job: number, items: number) => {
      await imports.enqueue(OWNER, "default", inputs(items));
      const calls: number[] = [];
      while (calls.reduce((sum, size) => sum + size, 0) < items) {
        const call = await embedder.next();
        calls.push(call.texts.length);
        clock.advance(100);
        call.pass();
      }
      await waitUntil(() => jobs.jobs[job]?.status === "succeeded");
      return calls;
    };
    // 2 items per 100 ms: 4 s of them is 80 a chunk.
    expect((await callsOf(0, 200)).slice(0, 3)).toEqual([2, 2, 40]);
    expect((await callsOf(1, 200))[0]).toBeGreaterThan(2);
    await stop();
  });

  test("while the database takes no writes (standbys only) the worker does not look for work", async () => {
    const { clock, timers, products, jobs, embedder } = setup();
    let writable = false;
    const imports = new ImportJobs({
      jobs,
      importProducts: new ImportProducts({ products, embedder }),
      clock,
      timers,
      settings: SETTINGS,
      writable: async () => writable,
    });
    embedder.openAll();
    const job = await imports.enqueue(OWNER, "default", inputs(2));
    const stop = running(imports);
    expect(await timers.nextSleep()).toBe(SETTINGS.pollMs);
    expect(jobs.jobs[0]?.status).toBe("enqueued");
    writable = true;
    await timers.advance(SETTINGS.pollMs);
    await waitUntil(() => jobs.jobs[0]?.status === "succeeded");
    await stop();
    expect((await imports.get(OWNER, job.id)).counts.created).toBe(2);
  });

  test("finished jobs are deleted once their retention has passed; unfinished ones are kept", async () => {
    const { imports, embedder, clock, jobs } = setup();
    embedder.openAll();
    const done = await imports.submit(OWNER, "default", inputs(3), { handover: NEVER, signal: NEVER });
    if (!done.job) throw new Error("expected a job");
    clock.advance(SETTINGS.retentionMs - 1);
    embedder.open = false;
    const waiting = await imports.enqueue(OWNER, "default", inputs(1));
    clock.advance(2);
    const stop = running(imports);
    await embedder.next(); // the worker is on the unfinished job: the prune has run
    expect(jobs.jobs.map((job) => job.id)).toEqual([waiting.id]);
    expect(imports.get(OWNER, done.job.id)).rejects.toBeInstanceOf(JobNotFound);
    await stop();
  });
});
