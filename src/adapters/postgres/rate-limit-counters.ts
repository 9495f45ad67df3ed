import type { RateLimitCounters, WindowCount } from "../../ports/rate-limit-counters.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresRateLimitCountersOptions {
  /** One hit in this many starts a prune of the windows that ended, in the background (default 1000). */
  pruneEvery?: number;
  /** Receives a warning when a background prune fails. */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * Counters in the `rate_limit_counters` table, one row per client key, so that every replica on the
 * database counts together. One statement per hit: an upsert that starts a new window when the
 * key's has ended, or adds the request's cost to it, and returns the count and the time left; a cost
 * that would take a live window past its limit is not added (then a second statement reads the
 * count for the answer's headers). The database's clock decides when windows end, so replicas with
 * skewed clocks still agree. The table is UNLOGGED
 * (counters need no crash safety, and it spares the write-ahead log a record per request).
 */
export class PostgresRateLimitCounters implements RateLimitCounters {
  private hits = 0;
  private pruning: Promise<number> | null = null;

  constructor(
    private readonly db: SqlClient,
    private readonly options: PostgresRateLimitCountersOptions = {},
  ) {}

  async hit(key: string, windowMs: number, cost = 1, limit?: number): Promise<WindowCount> {
    // The update's WHERE keeps a live window from passing its limit: then no row comes back, and
    // the count is read as it stands (for the answer's headers; nothing was counted).
    const [row] = await this.db.query<{ hits: number; reset_ms: number | string }>(
      `INSERT INTO rate_limit_counters AS c (key, window_end, hits)
       VALUES ($1, now() + make_interval(secs => $2 / 1000.0), $3)
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN c.window_end <= now() THEN EXCLUDED.hits ELSE c.hits + EXCLUDED.hits END,
         window_end = CASE WHEN c.window_end <= now() THEN EXCLUDED.window_end ELSE c.window_end END
       WHERE c.window_end <= now() OR $4::integer IS NULL OR c.hits + EXCLUDED.hits <= $4::integer
       RETURNING hits, ceil(extract(epoch FROM window_end - now()) * 1000) AS reset_ms`,
      [key, windowMs, cost, limit ?? null],
    );
    this.hits++;
    if (this.hits % (this.options.pruneEvery ?? 1000) === 0 && this.pruning === null) {
      this.pruning = this.prune()
        .catch((error) => {
          this.options.log?.({ event: "rate_limit_prune_failed", error });
          return 0;
        })
        .finally(() => {
          this.pruning = null;
        });
    }
    if (row) return { hits: Number(row.hits), resetMs: Number(row.reset_ms), counted: true };
    const [current] = await this.db.query<{ hits: number; reset_ms: number | string }>(
      `SELECT hits, greatest(ceil(extract(epoch FROM window_end - now()) * 1000), 0) AS reset_ms
       FROM rate_limit_counters WHERE key = $1`,
      [key],
    );
    if (!current) throw new Error("the rate limit counter vanished while it was read");
    return { hits: Number(current.hits), resetMs: Number(current.reset_ms), counted: false };
  }

  /** Deletes the rows of windows that ended; returns how many. */
  async prune(): Promise<number> {
    const rows = await this.db.query<{ key: string }>(
      "DELETE FROM rate_limit_counters WHERE window_end <= now() RETURNING key",
    );
    return rows.length;
  }

  /** Resolves when the background prune, if one is running, has finished (for tests and shutdown). */
  async settled(): Promise<void> {
    await this.pruning;
  }
}
