import type { ImportJob, ImportJobStatus, JobLease } from "../domain/import-jobs.ts";
import type { ImportItemResult, ImportProduct } from "../domain/import-products.ts";
import type { BulkWrite, BulkWriteOutcome } from "./product-repository.ts";

/** An item of a new job: a product waiting to be imported, or the result it already has (it failed validation). */
export type NewJobItem = { product: ImportProduct } | { result: ImportItemResult };

export interface NewImportJob {
  /** Whose job it is (`writerOf`): only they may read it. */
  owner: string;
  /** The catalogue its products go into. */
  catalogue: string;
  /** Every item of the import, in its order (an item's position is its index here). */
  items: readonly NewJobItem[];
  /** Clock time of its arrival. */
  now: number;
  /** Given: the job starts `processing` under this lease (the request works it itself); else `enqueued`. */
  lease?: JobLease;
}

/** An item waiting for its result. */
export interface PendingJobItem {
  position: number;
  product: ImportProduct;
}

/**
 * Import jobs and their items (import-jobs.ts). Every change of a job's items is made by the
 * holder of its lease, checked in the same transaction, so two workers never both write a job's
 * items; a worker that lost its lease (it stalled past it and another took the job over) gets
 * JobLeaseLost and nothing of its chunk is stored. Times are the domain clock's milliseconds.
 */
export interface ImportJobRepository {
  /** Stores a job with its items (atomically); `enqueued`, or `processing` under `lease`. */
  create(job: NewImportJob): Promise<ImportJob>;
  /** The job with its counts, or null. */
  get(id: number): Promise<ImportJob | null>;
  /** The results recorded so far with a position after `after`, by position, at most `limit`. */
  results(id: number, after: number, limit: number): Promise<ImportItemResult[]>;
  /** The items still without a result, by position. */
  pending(id: number): Promise<PendingJobItem[]>;
  /**
   * Takes the oldest unfinished job no live lease holds (`enqueued`, or `processing` whose lease was
   * released or ran out before `now`): it becomes `processing` under `lease`. Null when there is none.
   * Several processes claiming at once each get a different job (FOR UPDATE SKIP LOCKED).
   */
  claim(lease: JobLease, now: number): Promise<ImportJob | null>;
  /** Extends the lease to `lease.until`; false when `lease.token` no longer holds the job. */
  renew(id: number, lease: JobLease): Promise<boolean>;
  /**
   * Writes the chunk's rows (into the job's catalogue) and records the results `resultsOf` makes of them (their `index` being
   * the item's position), in one transaction, renewing the lease; throws JobLeaseLost (nothing
   * stored) when `lease.token` no longer holds the job. Returns the results.
   */
  commit(
    id: number,
    lease: JobLease,
    writes: readonly BulkWrite[],
    resultsOf: (outcomes: readonly BulkWriteOutcome[]) => ImportItemResult[],
  ): Promise<ImportItemResult[]>;
  /**
   * Records the last results and ends the job (`succeeded` or `failed`, with `error`), releasing its
   * lease; false (nothing recorded) when `token` no longer holds it.
   */
  finish(
    id: number,
    token: string,
    end: {
      results: readonly ImportItemResult[];
      status: Extract<ImportJobStatus, "succeeded" | "failed">;
      error?: string;
      now: number;
    },
  ): Promise<boolean>;
  /** Gives the lease up, the job unfinished: the next claim takes it (nothing when `token` does not hold it). */
  release(id: number, token: string): Promise<void>;
  /** Deletes the jobs that finished before `finishedBefore`, with their items; returns how many. */
  prune(finishedBefore: number): Promise<number>;
}
