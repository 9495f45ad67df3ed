import { type ImportJob, type ImportJobStatus, type JobLease, JobLeaseLost } from "../../domain/import-jobs.ts";
import type { ImportItemResult, ImportProduct, ImportStatus } from "../../domain/import-products.ts";
import type { ImportJobRepository, NewImportJob, PendingJobItem } from "../../ports/import-job-repository.ts";
import type { BulkWrite, BulkWriteOutcome, ProductCatalogues } from "../../ports/product-repository.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

interface JobRow {
  id: number | string;
  owner: string;
  catalogue: string;
  status: ImportJobStatus;
  total: number;
  error: string | null;
  enqueued_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  created: number | string;
  updated: number | string;
  unchanged: number | string;
  failed: number | string;
}

interface ResultRow {
  position: number;
  status: ImportStatus;
  product_id: number | string | null;
  sku: string | null;
  detail: string | null;
}

/** A clock time (ms) as a timestamptz parameter (`to_timestamp($n / 1000.0)`). */
const AT = (param: number) => `to_timestamp($${param}::float8 / 1000.0)`;

const JOB_COLUMNS = `
  j.id, j.owner, j.catalogue, j.status, j.total, j.error, j.enqueued_at, j.started_at, j.finished_at,
  c.created, c.updated, c.unchanged, c.failed`;

/** The counts of a job's results (a job has at most BULK_MAX_ITEMS items: counted at each read). */
const JOB_COUNTS = `
  LATERAL (
    SELECT count(*) FILTER (WHERE i.status = 'created') AS created,
           count(*) FILTER (WHERE i.status = 'updated') AS updated,
           count(*) FILTER (WHERE i.status = 'unchanged') AS unchanged,
           count(*) FILTER (WHERE i.status = 'failed') AS failed
    FROM import_job_items i WHERE i.job_id = j.id
  ) c`;

/**
 * Import jobs in `import_jobs` and their items in `import_job_items` (migration 10). A job's items
 * are written in one statement from a JSON array (sent as text: postgres.js would encode a string
 * given for a jsonb parameter as a JSON string), read back by position. Every change of a job's
 * items first updates its row where the caller's lease token still stands: that row lock orders it
 * with any claim, and a lost lease finds no row (JobLeaseLost, the transaction rolled back). A
 * chunk's products are written into the job's catalogue by the product repository on the same
 * transaction (`productsOn`), so products and results commit together. Workers claim with FOR UPDATE SKIP LOCKED, so several
 * instances on one database each take a different job. Everything runs on the primary (`writes`),
 * reads too: a job's state is read by whoever just changed it. Times come from the domain's clock.
 */
export class PostgresImportJobRepository implements ImportJobRepository {
  private readonly db: SqlClient;
  private readonly pools: ReadWriteClients;

  constructor(
    db: SqlClient | ReadWriteClients,
    /** The products on a given client (a transaction). */
    private readonly productsOn: (client: SqlClient) => ProductCatalogues,
  ) {
    this.pools = poolsOf(db);
    this.db = this.pools.writes;
  }

  async create({ owner, catalogue, items, now, lease }: NewImportJob): Promise<ImportJob> {
    const id = await this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ id: number | string }>(
        `INSERT INTO import_jobs (owner, catalogue, status, total, lease_token, lease_until, enqueued_at, started_at)
         VALUES ($1, $7, $2, $3, $4, ${AT(5)}, ${AT(6)}, CASE WHEN $4::text IS NULL THEN NULL ELSE ${AT(6)} END)
         RETURNING id`,
        [
          owner,
          lease ? "processing" : "enqueued",
          items.length,
          lease?.token ?? null,
          lease?.until ?? null,
          now,
          catalogue,
        ],
      );
      const id = Number(row?.id);
      const rows = items.map((item) => ("product" in item ? { product: item.product } : resultColumns(item.result)));
      await tx.query(
        `INSERT INTO import_job_items (job_id, position, product, status, product_id, sku, detail)
         SELECT $1, (e.ordinality - 1)::integer, e.value -> 'product', e.value ->> 'status',
                (e.value ->> 'product_id')::bigint, e.value ->> 'sku', e.value ->> 'detail'
         FROM jsonb_array_elements($2::text::jsonb) WITH ORDINALITY AS e`,
        [id, JSON.stringify(rows)],
      );
      return id;
    });
    return (await this.get(id)) as ImportJob;
  }

  async get(id: number): Promise<ImportJob | null> {
    const [row] = await this.db.query<JobRow>(
      `SELECT ${JOB_COLUMNS} FROM import_jobs j, ${JOB_COUNTS} WHERE j.id = $1`,
      [id],
    );
    return row ? jobOf(row) : null;
  }

  async results(id: number, after: number, limit: number): Promise<ImportItemResult[]> {
    const rows = await this.db.query<ResultRow>(
      `SELECT position, status, product_id, sku, detail FROM import_job_items
       WHERE job_id = $1 AND status IS NOT NULL AND position > $2
       ORDER BY position LIMIT $3`,
      [id, after, limit],
    );
    return rows.map(resultOf);
  }

  async pending(id: number): Promise<PendingJobItem[]> {
    const rows = await this.db.query<{ position: number; product: ImportProduct | string }>(
      "SELECT position, product FROM import_job_items WHERE job_id = $1 AND status IS NULL ORDER BY position",
      [id],
    );
    return rows.map((row) => ({
      position: row.position,
      product: typeof row.product === "string" ? (JSON.parse(row.product) as ImportProduct) : row.product,
    }));
  }

  async claim(lease: JobLease, now: number): Promise<ImportJob | null> {
    const [row] = await this.db.query<{ id: number | string }>(
      `UPDATE import_jobs SET status = 'processing', lease_token = $1, lease_until = ${AT(2)},
         started_at = COALESCE(started_at, ${AT(3)})
       WHERE id = (
         SELECT id FROM import_jobs
         WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until <= ${AT(3)})
         ORDER BY id LIMIT 1
         FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [lease.token, lease.until, now],
    );
    return row ? this.get(Number(row.id)) : null;
  }

  async renew(id: number, lease: JobLease): Promise<boolean> {
    return (await this.hold(this.db, id, lease)).length > 0;
  }

  async commit(
    id: number,
    lease: JobLease,
    writes: readonly BulkWrite[],
    resultsOf: (outcomes: readonly BulkWriteOutcome[]) => ImportItemResult[],
  ): Promise<ImportItemResult[]> {
    const results = await this.db.transaction(async (tx) => {
      const [held] = await this.hold(tx, id, lease);
      if (!held) throw new JobLeaseLost(id);
      const outcomes = writes.length === 0 ? [] : await this.productsOn(tx).in(held.catalogue).writeMany(writes);
      const recorded = resultsOf(outcomes);
      await record(tx, id, recorded);
      return recorded;
    });
    // The caller being served (a job worked in its request) reads its products where it wrote them.
    if (writes.length > 0) await this.pools.wrote();
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
    return this.db.transaction(async (tx) => {
      const ended = await tx.query(
        `UPDATE import_jobs SET status = $3, error = $4, finished_at = ${AT(5)}, lease_token = NULL, lease_until = NULL
         WHERE id = $1 AND lease_token = $2 AND finished_at IS NULL
         RETURNING id`,
        [id, token, end.status, end.error ?? null, end.now],
      );
      if (ended.length === 0) return false;
      await record(tx, id, end.results);
      return true;
    });
  }

  async release(id: number, token: string): Promise<void> {
    await this.db.query(
      "UPDATE import_jobs SET lease_token = NULL, lease_until = NULL WHERE id = $1 AND lease_token = $2",
      [id, token],
    );
  }

  async prune(finishedBefore: number): Promise<number> {
    const rows = await this.db.query(`DELETE FROM import_jobs WHERE finished_at < ${AT(1)} RETURNING id`, [
      finishedBefore,
    ]);
    return rows.length;
  }

  /**
   * Extends the lease where its token still holds the unfinished job (locking its row): the job's
   * catalogue; no row when lost.
   */
  private hold(client: SqlClient, id: number, lease: JobLease): Promise<{ catalogue: string }[]> {
    return client.query<{ catalogue: string }>(
      `UPDATE import_jobs SET lease_until = ${AT(3)}
       WHERE id = $1 AND lease_token = $2 AND finished_at IS NULL
       RETURNING catalogue`,
      [id, lease.token, lease.until],
    );
  }
}

/**
 * Records results over pending items only; any other count means a result for an item that has
 * one already, or none at all: a bug, refused whole (the transaction rolls back).
 */
async function record(tx: SqlClient, id: number, results: readonly ImportItemResult[]): Promise<void> {
  if (results.length === 0) return;
  const rows = results.map((result) => ({ position: result.index, ...resultColumns(result) }));
  // The planner's statistics say almost no item is pending (most of the table is finished jobs), so
  // it expected one pending item of the job and joined it in a nested loop, reading the results
  // again for each of the job's items: 512 results into a job of 1,000 took 97 ms (511,488 rows
  // compared), a fifth of the database's time in bench:scale's bulk path. A hash join reads each
  // once. The setting ends with the transaction, whose last statement this is.
  await tx.query("SET LOCAL enable_nestloop = off");
  const recorded = await tx.query(
    `UPDATE import_job_items i SET product = NULL, status = r.status, product_id = r.product_id, sku = r.sku,
       detail = r.detail
     FROM jsonb_to_recordset($2::text::jsonb) AS r(position integer, status text, product_id bigint, sku text, detail text)
     WHERE i.job_id = $1 AND i.position = r.position AND i.status IS NULL
     RETURNING i.position`,
    [id, JSON.stringify(rows)],
  );
  if (recorded.length !== results.length) {
    throw new Error(`import job ${id}: ${results.length} results for ${recorded.length} pending items`);
  }
}

function resultColumns(result: ImportItemResult) {
  return {
    status: result.status,
    product_id: result.id ?? null,
    sku: result.sku ?? null,
    detail: result.detail ?? null,
  };
}

function resultOf(row: ResultRow): ImportItemResult {
  return {
    index: row.position,
    status: row.status,
    ...(row.product_id === null ? {} : { id: Number(row.product_id) }),
    ...(row.sku === null ? {} : { sku: row.sku }),
    ...(row.detail === null ? {} : { detail: row.detail }),
  };
}

function jobOf(row: JobRow): ImportJob {
  const counts = {
    created: Number(row.created),
    updated: Number(row.updated),
    unchanged: Number(row.unchanged),
    failed: Number(row.failed),
  };
  const done = counts.created + counts.updated + counts.unchanged + counts.failed;
  return {
    id: Number(row.id),
    owner: row.owner,
    catalogue: row.catalogue,
    status: row.status,
    total: row.total,
    counts: { ...counts, pending: row.total - done },
    error: row.error,
    enqueuedAt: timeOf(row.enqueued_at),
    startedAt: row.started_at === null ? null : timeOf(row.started_at),
    finishedAt: row.finished_at === null ? null : timeOf(row.finished_at),
  };
}

/** A timestamptz as the clock's milliseconds (both drivers give a Date). */
function timeOf(value: Date | string): number {
  return (value instanceof Date ? value : new Date(value)).getTime();
}
