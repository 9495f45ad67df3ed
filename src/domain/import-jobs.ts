import type { Clock } from "../ports/clock.ts";
import type { ImportJobRepository, NewJobItem } from "../ports/import-job-repository.ts";
import type { Timers } from "../ports/timers.ts";
import { DatabaseUnavailable, DomainError, JobNotFound } from "./errors.ts";
import {
  checkImportInput,
  type ImportInput,
  type ImportItemResult,
  type ImportProducts,
  type ImportReport,
  type ImportStatus,
} from "./import-products.ts";

/**
 * Where a job stands, as Meilisearch's tasks say it (without `canceled`: a job cannot be cancelled):
 * `enqueued` until a worker starts it; `processing` from then until it ends, also while it waits to
 * be resumed (its request handed it over, or its process stopped); `succeeded` when every item has
 * its result (some may have failed validation, each saying why); `failed` when the embedder failed
 * for good, or an unexpected error stopped it: the items not stored by then are failed, saying why.
 */
export const IMPORT_JOB_STATUSES = ["enqueued", "processing", "succeeded", "failed"] as const;
export type ImportJobStatus = (typeof IMPORT_JOB_STATUSES)[number];

/** How many items are in each state; `pending`: without a result yet. */
export type JobCounts = Record<ImportStatus | "pending", number>;

export interface ImportJob {
  id: number;
  /** Whose it is (`writerOf` of the caller that sent it). */
  owner: string;
  /** The catalogue its products go into. */
  catalogue: string;
  status: ImportJobStatus;
  /** Items the import sent. */
  total: number;
  counts: JobCounts;
  /** Why a failed job stopped before its end (Spanish); null otherwise. */
  error: string | null;
  /** Clock times (ms): arrival, first start by a worker, end. */
  enqueuedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** A worker's hold on a job: `token` identifies the holder; it lapses at `until` unless renewed. */
export interface JobLease {
  token: string;
  until: number;
}

/** The worker no longer holds the job's lease (another took the job over): nothing of its chunk was stored. */
export class JobLeaseLost extends Error {
  override readonly name = "JobLeaseLost";
  constructor(readonly jobId: number) {
    super(`the lease of import job ${jobId} was lost`);
  }
}

export interface ImportJobSettings {
  /**
   * How long a hold on a job lasts unless renewed, in ms. The worker renews it a third of the way
   * through and at each chunk it stores; after a crash, the job waits this long to be resumed.
   */
  leaseMs: number;
  /** How long an idle worker waits between looks for work, in ms (a job sent to this process wakes it at once). */
  pollMs: number;
  /** Finished jobs are deleted this long after they finished, in ms (JOB_RETENTION_HOURS). */
  retentionMs: number;
  /**
   * Items of a job's first chunk; the later ones are sized by its pace (chunkPaceMs). Also the most
   * valid items an import may have to be worked in its request without a job (one chunk).
   */
  chunkSize: number;
  /**
   * How long a chunk should take, in ms: after the first, a job's chunks hold the items it stored in
   * that time so far (16 to 512). The chunks embedded ahead of the write (Embedder.callsAtOnce: one
   * with the offline model, four with OpenAI) are what a handover, a stop or a crash may cost in
   * embedding done for nothing, and each chunk costs a transaction; 0: every chunk holds chunkSize.
   */
  chunkPaceMs: number;
}

/**
 * Half a minute of lease (renewed every 10 s): a crashed worker's job is resumed within it. A first
 * chunk of 128 takes 5 to 7 s to embed with the offline model under load (18-25 products/s); at a
 * pace of 4 s the next ones hold 70 to 100 items there, and 512 with a fast provider, where 128-item
 * chunks halved the throughput on PostgreSQL (a transaction each: 2,150 against 4,500 products/s
 * with an instant fake embedder).
 */
export const DEFAULT_JOB_SETTINGS: ImportJobSettings = {
  leaseMs: 30_000,
  pollMs: 5_000,
  retentionMs: 7 * 24 * 3_600_000,
  chunkSize: 128,
  chunkPaceMs: 4_000,
};

/** The bounds of a paced chunk: small enough to show progress, as large as the command line's. */
const PACED_CHUNK = { min: 16, max: 512 };

/** Finished jobs are looked for deletion at most this often. */
const PRUNE_EVERY_MS = 3_600_000;

export interface Deps {
  jobs: ImportJobRepository;
  importProducts: ImportProducts;
  /** Times of jobs and leases. */
  clock: Clock;
  /** The worker's waits (between looks for work, between lease renewals). */
  timers: Pick<Timers, "sleep">;
  settings?: Partial<ImportJobSettings>;
  /**
   * Whether the database takes writes now (false while it reaches only standbys: a read-only start,
   * a failover under way); the worker looks for work only then. Absent: always.
   */
  writable?: () => Promise<boolean>;
  /**
   * `import_job_created` {job, items, mode}, `import_job_handed_over` {job}, `import_job_finished`
   * {job, status, counts}, `import_job_stopped` {job} (level info); `import_job_lease_lost`,
   * `import_job_interrupted` {job, error} (the database failed: resumed later), `import_job_worker_failed`,
   * `import_jobs_prune_failed` (warn); `import_job_failed` {job, error} (an unexpected error: error).
   */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * What became of an import worked in its request: done in time (with the report, and its job unless
 * it fit one chunk), or a job to follow.
 */
export type SubmitOutcome =
  | { kind: "finished"; job?: ImportJob; report: ImportReport }
  | { kind: "accepted"; job: ImportJob };

export interface SubmitOptions {
  /**
   * Aborts when the request's time nears its end: the import becomes a job at once, resumed by a
   * worker from the first item not stored.
   */
  handover: AbortSignal;
  /**
   * Aborts when the client went away. An import stored as a job goes on as one; one still in its
   * single chunk stops there, nothing of it stored (the abort's reason is thrown).
   */
  signal: AbortSignal;
}

/** A page of a job's report: the results after a position, and where the next page starts (null: none yet). */
export interface JobReportPage {
  job: ImportJob;
  items: ImportItemResult[];
  next: number | null;
}

/** How a job's work in this process ended. */
type WorkEnd =
  | { kind: "finished"; status: "succeeded" | "failed"; error: string | null; at: number }
  /** Stopped on purpose (handover, shutdown): its lease released, the next claim resumes it. */
  | { kind: "stopped" }
  /** Another worker took it over (this one stalled past its lease). */
  | { kind: "lost" }
  /** The database failed: left for a worker to resume once the lease is released or lapses. */
  | { kind: "interrupted" };

const NOT_PROCESSED = "No se procesó";

/**
 * ImportJobs: a bulk import as a job that survives its request and its process, like Meilisearch's
 * tasks. A job is stored first, each item with its validated product (or its validation failure),
 * and then worked a chunk at a time by ImportProducts: each chunk's products are written in the
 * same transaction as their items' results, under the lease of the one worker holding the job. So
 * whatever stops a job (its request handing it over, a restart, a crash), every item is either
 * stored with its result or still pending, never both, never twice; the next worker resumes from
 * the pending ones.
 *
 * `submit` works an import in its request until done (the report, as before jobs) or until the
 * request hands it over (`handover`): an import whose valid items fit one chunk is worked without a
 * job (it is written whole or not at all) and becomes one only then; a larger one is a job from the
 * start. `enqueue` (`Prefer: respond-async`) makes it a job at once. `run` is the worker loop `serve`
 * runs: it claims the oldest job no live lease holds, works it, and waits (Timers port) when there
 * is none; it also deletes finished jobs past their retention.
 */
export class ImportJobs {
  private readonly settings: ImportJobSettings;
  /** Aborted to end an idle worker's wait at once: a job was sent to this process, or it stops. */
  private wakeup = new AbortController();
  private readonly stopping = new AbortController();
  /** The works and worker loops under way, for `stop` to wait for. */
  private readonly running = new Set<Promise<unknown>>();
  private nextPruneAt = Number.NEGATIVE_INFINITY;
  /**
   * Items per ms the last work stored (this process's embedder and database as they are now): a
   * new work's first chunk is sized by it, so a fast provider is not asked in chunks of 128 again
   * at every request (a 1,000-item request: 3 provider calls instead of 2).
   */
  private recentRate: number | undefined;

  constructor(private readonly deps: Deps) {
    this.settings = { ...DEFAULT_JOB_SETTINGS, ...deps.settings };
  }

  /** Stores the import into `catalogue` as a job of `owner`, for a worker to take up (`Prefer: respond-async`). */
  async enqueue(owner: string, catalogue: string, inputs: readonly ImportInput[]): Promise<ImportJob> {
    const { items, known } = validated(inputs);
    return this.store({ owner, catalogue }, items, known, undefined);
  }

  /**
   * Works the import in the request: as a job of `owner` stored first, or, when its valid items fit
   * one chunk, directly (a chunk is written whole or not at all, so a handover before it is written
   * leaves nothing stored: the whole import becomes the job).
   */
  async submit(
    owner: string,
    catalogue: string,
    inputs: readonly ImportInput[],
    options: SubmitOptions,
  ): Promise<SubmitOutcome> {
    // A client already gone gets nothing stored.
    options.signal.throwIfAborted();
    const { items, known } = validated(inputs);
    const halt = AbortSignal.any([options.handover, options.signal, this.stopping.signal]);
    const oneChunk = items.length - known.size <= this.settings.chunkSize;
    if (oneChunk && !halt.aborted) {
      // The page's batches of 100 go this way: no job's rows to write for an import answered at once.
      try {
        const report = await this.deps.importProducts.execute(inputs, {
          catalogue,
          signal: halt,
          chunkSize: this.settings.chunkSize,
        });
        return { kind: "finished", report };
      } catch (error) {
        if (!halt.aborted || options.signal.aborted) throw error;
        // Time is nearly up (or the service stops) and nothing is stored yet: the job takes it all.
      }
    }
    if (oneChunk || halt.aborted) {
      return { kind: "accepted", job: await this.store({ owner, catalogue }, items, known, undefined) };
    }

    const lease = this.newLease();
    const job = await this.store({ owner, catalogue }, items, known, lease);
    const work = this.track(this.work(job, lease, halt, known));
    const handedOver = new Promise<"handover">((resolve) => {
      if (halt.aborted) resolve("handover");
      halt.addEventListener("abort", () => resolve("handover"), { once: true });
    });
    const end = await Promise.race([work, handedOver]);
    if (end === "handover" || end.kind !== "finished") {
      this.deps.log?.({ event: "import_job_handed_over", job: job.id });
      return { kind: "accepted", job: snapshot(job, known, { status: "processing" }) };
    }
    const results = inputs.map((_, index) => known.get(index) ?? failedItem(index, NOT_PROCESSED));
    const { pending: _none, ...counts } = countsOf(results);
    const report: ImportReport = { items: results, counts };
    return {
      kind: "finished",
      job: snapshot(job, known, { status: end.status, error: end.error, finishedAt: end.at }),
      report,
    };
  }

  /** Stores a job: `enqueued` (and a worker woken), or `processing` under the request's own lease. */
  private async store(
    { owner, catalogue }: { owner: string; catalogue: string },
    items: readonly NewJobItem[],
    known: ReadonlyMap<number, ImportItemResult>,
    lease: JobLease | undefined,
  ): Promise<ImportJob> {
    const job = await this.deps.jobs.create({
      owner,
      catalogue,
      items,
      now: this.deps.clock.now(),
      ...(lease ? { lease } : {}),
    });
    this.deps.log?.({ event: "import_job_created", job: job.id, items: job.total, mode: lease ? "request" : "job" });
    // ImportProducts counts the outcomes of what it imports; these never reach it.
    if (known.size > 0) this.deps.log?.({ event: "import_items", outcome: "failed", count: known.size });
    if (!lease) this.wake();
    return job;
  }

  /** The caller's job; JobNotFound when there is none or it is another's. */
  async get(owner: string, id: number): Promise<ImportJob> {
    const job = await this.deps.jobs.get(id);
    if (!job || job.owner !== owner) throw new JobNotFound(id);
    return job;
  }

  /** The caller's job with up to `limit` of its results after position `after` (-1: from the first). */
  async report(owner: string, id: number, page: { after: number; limit: number }): Promise<JobReportPage> {
    const job = await this.get(owner, id);
    const items = await this.deps.jobs.results(id, page.after, page.limit + 1);
    const more = items.length > page.limit;
    if (more) items.length = page.limit;
    return { job, items, next: more ? (items.at(-1)?.index ?? null) : null };
  }

  /**
   * The worker loop (`serve` runs one): works the oldest waiting job, then the next, and waits
   * pollMs (or until woken) when there is none. Ends when `signal` aborts or `stop` is called,
   * once the job under way has released its lease.
   */
  async run(signal: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([signal, this.stopping.signal]);
    const wakeOnStop = () => this.wake();
    stop.addEventListener("abort", wakeOnStop, { once: true });
    const loop = this.track(
      (async () => {
        while (!stop.aborted) {
          let worked = false;
          try {
            if (!this.deps.writable || (await this.deps.writable())) {
              await this.pruneIfDue();
              worked = await this.workNext(stop);
            }
          } catch (error) {
            this.deps.log?.({ event: "import_job_worker_failed", error });
          }
          if (worked || stop.aborted) continue;
          const wakeup = this.wakeup;
          await this.deps.timers.sleep(this.settings.pollMs, wakeup.signal).catch(() => {});
          if (wakeup.signal.aborted && this.wakeup === wakeup) this.wakeup = new AbortController();
        }
      })(),
    );
    await loop;
  }

  /** Stops every work and worker loop of this process; resolves once each has released its job. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.wake();
    await Promise.allSettled([...this.running]);
  }

  /** Ends an idle worker's wait: there is work. */
  private wake(): void {
    this.wakeup.abort();
  }

  /** Claims the oldest job no live lease holds and works it; false when there was none. */
  private async workNext(stop: AbortSignal): Promise<boolean> {
    const lease = this.newLease();
    const job = await this.deps.jobs.claim(lease, this.deps.clock.now());
    if (!job) return false;
    await this.track(this.work(job, lease, stop, new Map()));
    return true;
  }

  /**
   * Works the job's pending items until they all have results, or `halt` aborts (then the lease is
   * released for the next claim), or the lease is lost. `known` collects the results recorded.
   */
  private async work(
    { id, catalogue }: Pick<ImportJob, "id" | "catalogue">,
    lease: JobLease,
    halt: AbortSignal,
    known: Map<number, ImportItemResult>,
  ): Promise<WorkEnd> {
    const { jobs, importProducts, clock } = this.deps;
    const pace = this.pace();
    const lost = new AbortController();
    const stop = AbortSignal.any([halt, lost.signal]);
    const done = new AbortController();
    const renewing = this.keepLease(id, lease, done.signal, lost);
    try {
      const pending = await jobs.pending(id);
      const positions = pending.map((item) => item.position);
      const atPosition = (result: ImportItemResult): ImportItemResult => ({
        ...result,
        index: positions[result.index] as number,
      });
      const report = await importProducts.execute(
        pending.map((item) => ({ value: item.product })),
        {
          catalogue,
          signal: stop,
          chunkSize: pace.size,
          commit: async (writes, resultsOf) => {
            let results: ImportItemResult[] = [];
            lease.until = clock.now() + this.settings.leaseMs;
            await jobs.commit(id, lease, writes, (outcomes) => {
              results = resultsOf(outcomes);
              return results.map(atPosition);
            });
            for (const result of results) known.set(positions[result.index] as number, atPosition(result));
            pace.stored(results.length);
            return results;
          },
        },
      );
      // The database failed: the chunks not stored stay pending, for a worker to resume.
      if (report.stoppedBy instanceof DatabaseUnavailable) throw report.stoppedBy;
      const rest = report.items.map(atPosition).filter((result) => !known.has(result.index));
      return await this.finish(id, lease, known, rest, report.stoppedBy);
    } catch (error) {
      return await this.interrupted(id, lease, known, error, { halted: halt.aborted, lost: lost.signal.aborted });
    } finally {
      done.abort();
      await renewing;
    }
  }

  /** Records the last results (those the embedder's failure left failed) and ends the job. */
  private async finish(
    id: number,
    lease: JobLease,
    known: Map<number, ImportItemResult>,
    rest: readonly ImportItemResult[],
    stoppedBy: DomainError | undefined,
  ): Promise<WorkEnd> {
    const status = stoppedBy ? "failed" : "succeeded";
    const error = stoppedBy?.message ?? null;
    const at = this.deps.clock.now();
    const ended = await this.deps.jobs.finish(id, lease.token, {
      results: rest,
      status,
      ...(error === null ? {} : { error }),
      now: at,
    });
    if (!ended) throw new JobLeaseLost(id);
    for (const result of rest) known.set(result.index, result);
    this.deps.log?.({ event: "import_job_finished", job: id, status, counts: countsOf([...known.values()]) });
    return { kind: "finished", status, error, at };
  }

  /** A work that did not reach its end: why, and what that leaves the job in. */
  private async interrupted(
    id: number,
    lease: JobLease,
    known: Map<number, ImportItemResult>,
    error: unknown,
    { halted, lost }: { halted: boolean; lost: boolean },
  ): Promise<WorkEnd> {
    const { jobs, log } = this.deps;
    if (lost || error instanceof JobLeaseLost) {
      log?.({ event: "import_job_lease_lost", job: id });
      return { kind: "lost" };
    }
    if (halted || error instanceof DatabaseUnavailable) {
      if (!halted) log?.({ event: "import_job_interrupted", job: id, error });
      // Released, the next claim resumes it at once; if this fails too, the lease lapses by itself.
      await jobs.release(id, lease.token).catch((releaseError: unknown) => {
        log?.({ event: "import_job_interrupted", job: id, error: releaseError });
      });
      if (halted) log?.({ event: "import_job_stopped", job: id });
      this.wake();
      return halted ? { kind: "stopped" } : { kind: "interrupted" };
    }
    // A bug: the job fails with every item not stored reported, rather than being retried forever.
    log?.({ event: "import_job_failed", job: id, error });
    try {
      const rest = (await jobs.pending(id)).map((item) =>
        failedItem(item.position, `No se guardó: error interno del servidor`, item.product.sku),
      );
      return await this.finish(id, lease, known, rest, new InternalFailure());
    } catch (finishError) {
      log?.({ event: "import_job_interrupted", job: id, error: finishError });
      await jobs.release(id, lease.token).catch(() => {});
      return { kind: "interrupted" };
    }
  }

  /** Renews the lease a third of the way through it until `done`; aborts `lost` when another holds the job. */
  private async keepLease(id: number, lease: JobLease, done: AbortSignal, lost: AbortController): Promise<void> {
    const every = Math.max(1, Math.floor(this.settings.leaseMs / 3));
    while (!done.aborted) {
      try {
        await this.deps.timers.sleep(every, done);
      } catch {
        return;
      }
      lease.until = this.deps.clock.now() + this.settings.leaseMs;
      try {
        if (!(await this.deps.jobs.renew(id, lease))) {
          lost.abort(new JobLeaseLost(id));
          return;
        }
      } catch (error) {
        // The next renewal (or the next chunk's commit) tries again; the lease lasts until then.
        this.deps.log?.({ event: "import_job_interrupted", job: id, error });
      }
    }
  }

  /** Deletes the jobs finished longer ago than the retention, at most once an hour. */
  private async pruneIfDue(): Promise<void> {
    const now = this.deps.clock.now();
    if (now < this.nextPruneAt) return;
    this.nextPruneAt = now + Math.min(PRUNE_EVERY_MS, this.settings.retentionMs);
    try {
      const pruned = await this.deps.jobs.prune(now - this.settings.retentionMs);
      if (pruned > 0) this.deps.log?.({ event: "import_jobs_pruned", jobs: pruned });
    } catch (error) {
      this.deps.log?.({ event: "import_jobs_prune_failed", error });
    }
  }

  /**
   * The size of each chunk of a work: what it stored per chunkPaceMs so far; the first, what the
   * last work stored per chunkPaceMs (chunkSize when there was none yet).
   */
  private pace() {
    const { chunkSize, chunkPaceMs } = this.settings;
    const startedAt = this.deps.clock.now();
    let stored = 0;
    const bounded = (itemsPerMs: number) =>
      Math.min(PACED_CHUNK.max, Math.max(PACED_CHUNK.min, Math.round(itemsPerMs * chunkPaceMs)));
    return {
      size: (): number => {
        if (chunkPaceMs <= 0) return chunkSize;
        if (stored === 0) return this.recentRate === undefined ? chunkSize : bounded(this.recentRate);
        const elapsed = this.deps.clock.now() - startedAt;
        return elapsed > 0 ? bounded(stored / elapsed) : PACED_CHUNK.max;
      },
      stored: (items: number) => {
        stored += items;
        const elapsed = this.deps.clock.now() - startedAt;
        if (elapsed > 0) this.recentRate = stored / elapsed;
      },
    };
  }

  private newLease(): JobLease {
    return { token: crypto.randomUUID(), until: this.deps.clock.now() + this.settings.leaseMs };
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.running.add(promise);
    const settle = () => this.running.delete(promise);
    promise.then(settle, settle);
    return promise;
  }
}

/** The job's `error` when a bug stopped it (the log has the real error). */
class InternalFailure extends DomainError {
  readonly kind = "InternalFailure";
  constructor() {
    super("Error interno del servidor");
  }
}

/** Each input as a product to import, or as the result it has already (it failed validation), by position. */
function validated(inputs: readonly ImportInput[]) {
  const known = new Map<number, ImportItemResult>();
  const items = inputs.map((input, index): NewJobItem => {
    const checked = checkImportInput(input);
    if ("product" in checked) return { product: checked.product };
    const result: ImportItemResult = { index, status: "failed", detail: checked.problem };
    known.set(index, result);
    return { result };
  });
  return { items, known };
}

function failedItem(index: number, detail: string, sku?: string): ImportItemResult {
  return { index, status: "failed", ...(sku === undefined ? {} : { sku }), detail };
}

function countsOf(results: Iterable<ImportItemResult>, total?: number): JobCounts {
  const counts: JobCounts = { created: 0, updated: 0, unchanged: 0, failed: 0, pending: 0 };
  let done = 0;
  for (const result of results) {
    counts[result.status]++;
    done++;
  }
  counts.pending = total === undefined ? 0 : total - done;
  return counts;
}

/** The job as this process knows it: the results it has seen recorded. */
function snapshot(
  job: ImportJob,
  known: Map<number, ImportItemResult>,
  changes: Partial<Pick<ImportJob, "status" | "error" | "finishedAt">>,
): ImportJob {
  return {
    ...job,
    startedAt: job.startedAt ?? job.enqueuedAt,
    ...changes,
    counts: countsOf(known.values(), job.total),
  };
}
