import { DatabaseUnavailable } from "../../src/domain/errors.ts";
import { type ImportJob, type ImportJobStatus, type JobLease, JobLeaseLost } from "../../src/domain/import-jobs.ts";
import type { ImportItemResult, ImportProduct } from "../../src/domain/import-products.ts";
import type { ImportJobRepository, NewImportJob, PendingJobItem } from "../../src/ports/import-job-repository.ts";
import type { BulkWrite, BulkWriteOutcome, ProductCatalogues } from "../../src/ports/product-repository.ts";

interface JobRow {
  job: Omit<ImportJob, "counts">;
  lease: JobLease | null;
  items: ({ product: ImportProduct } | { result: ImportItemResult })[];
}

/**
 * Import jobs in memory over the products (the in-memory ones in tests): each commit checks the
 * lease, writes into the job's catalogue and records with no await in between once the products are written, as the
 * database's transaction does. Set `down` to make every call fail with DatabaseUnavailable;
 * `failCommits` fails the next commits before anything is written.
 */
export class MemoryImportJobRepository implements ImportJobRepository {
  down = false;
  failCommits = 0;
  private readonly rows = new Map<number, JobRow>();
  private nextId = 1;

  constructor(private readonly products: ProductCatalogues) {}

  /** Every job as stored (for assertions). */
  get jobs(): ImportJob[] {
    return [...this.rows.keys()].map((id) => this.view(id));
  }

  /** Who holds a job's lease, if anyone (for assertions). */
  leaseOf(id: number): JobLease | null {
    return this.rows.get(id)?.lease ?? null;
  }

  async create({ owner, catalogue, items, now, lease }: NewImportJob): Promise<ImportJob> {
    this.checkUp();
    const id = this.nextId++;
    this.rows.set(id, {
      job: {
        id,
        owner,
        catalogue,
        status: lease ? "processing" : "enqueued",
        total: items.length,
        error: null,
        enqueuedAt: now,
        startedAt: lease ? now : null,
        finishedAt: null,
      },
      lease: lease ? { ...lease } : null,
      items: items.map((item) => ({ ...item })),
    });
    return this.view(id);
  }

  async get(id: number): Promise<ImportJob | null> {
    this.checkUp();
    return this.rows.has(id) ? this.view(id) : null;
  }

  async results(id: number, after: number, limit: number): Promise<ImportItemResult[]> {
    this.checkUp();
    const row = this.rows.get(id);
    if (!row) return [];
    return row.items
      .flatMap((item) => ("result" in item && item.result.index > after ? [item.result] : []))
      .slice(0, limit);
  }

  async pending(id: number): Promise<PendingJobItem[]> {
    this.checkUp();
    return (this.rows.get(id)?.items ?? []).flatMap((item, position) =>
      "product" in item ? [{ position, product: item.product }] : [],
    );
  }

  async claim(lease: JobLease, now: number): Promise<ImportJob | null> {
    this.checkUp();
    for (const [id, row] of this.rows) {
      const open = row.job.status === "enqueued" || row.job.status === "processing";
      if (!open || (row.lease && row.lease.until > now)) continue;
      row.lease = { ...lease };
      row.job.status = "processing";
      row.job.startedAt ??= now;
      return this.view(id);
    }
    return null;
  }

  async renew(id: number, lease: JobLease): Promise<boolean> {
    this.checkUp();
    const row = this.held(id, lease.token);
    if (row) row.lease = { ...lease };
    return row !== undefined;
  }

  async commit(
    id: number,
    lease: JobLease,
    writes: readonly BulkWrite[],
    resultsOf: (outcomes: readonly BulkWriteOutcome[]) => ImportItemResult[],
  ): Promise<ImportItemResult[]> {
    this.checkUp();
    if (this.failCommits > 0) {
      this.failCommits--;
      throw new DatabaseUnavailable();
    }
    const held = this.held(id, lease.token);
    if (!held) throw new JobLeaseLost(id);
    const outcomes = writes.length === 0 ? [] : await this.products.in(held.job.catalogue).writeMany(writes);
    // Checked again after the await, as the transaction's row lock would have kept it.
    const row = this.held(id, lease.token);
    if (!row) throw new JobLeaseLost(id);
    const results = resultsOf(outcomes);
    this.record(row, results);
    row.lease = { ...lease };
    return results;
  }

  async finish(
    id: number,
    token: string,
    end: {
      results: readonly ImportItemResult[];
      status: Extract<ImportJobStatus, "succeeded" | "failed">;
      error?: string;
      now: number;
    },
  ): Promise<boolean> {
    this.checkUp();
    const row = this.held(id, token);
    if (!row) return false;
    this.record(row, end.results);
    row.job.status = end.status;
    row.job.error = end.error ?? null;
    row.job.finishedAt = end.now;
    row.lease = null;
    return true;
  }

  async release(id: number, token: string): Promise<void> {
    this.checkUp();
    const row = this.held(id, token);
    if (row) row.lease = null;
  }

  async prune(finishedBefore: number): Promise<number> {
    this.checkUp();
    let pruned = 0;
    for (const [id, row] of this.rows) {
      if (row.job.finishedAt !== null && row.job.finishedAt < finishedBefore) {
        this.rows.delete(id);
        pruned++;
      }
    }
    return pruned;
  }

  private held(id: number, token: string): JobRow | undefined {
    const row = this.rows.get(id);
    return row && row.job.status === "processing" && row.lease?.token === token ? row : undefined;
  }

  private record(row: JobRow, results: readonly ImportItemResult[]): void {
    for (const result of results) {
      const item = row.items[result.index];
      if (!item || !("product" in item)) throw new Error(`item ${result.index} has no pending product`);
      row.items[result.index] = { result };
    }
  }

  private view(id: number): ImportJob {
    const row = this.rows.get(id) as JobRow;
    const counts = { created: 0, updated: 0, unchanged: 0, failed: 0, pending: 0 };
    for (const item of row.items) counts["result" in item ? item.result.status : "pending"]++;
    return { ...row.job, counts };
  }

  private checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }
}
