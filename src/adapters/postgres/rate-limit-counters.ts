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
 * key's has ended, or adds one to it, and returns the count and the time left. The database's clock
 * decides when windows end, so replicas with skewed clocks still agree. The table is UNLOGGED
 * (counters need no crash safety, and it spares the write-ahead log a record per request).
 */
export class PostgresRateLimitCounters implements RateLimitCounters {
  private hits = 0;
  private pruning: Promise<number> | null = null;

  constructor(
    private readonly db: SqlClient,
    private readonly options: PostgresRateLimitCountersOptions = {},
  ) {}

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    const [row] = await this.db.query<{ hits: number; reset_ms: number | string }>(
      `INSERT INTO rate_limit_counters AS c (key, window_end, hits)
       VALUES ($1, now() + make_interval(secs => $2 / 1000.0), 1)
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN c.window_end <= now() THEN 1 ELSE c.hits + 1 END,
         window_end = CASE WHEN c.window_end <= now() THEN EXCLUDED.window_end ELSE c.window_end END
       RETURNING hits, ceil(extract(epoch FROM window_end - now()) * 1000) AS reset_ms`,
      [key, windowMs],
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
    if (!row) throw new Error("the rate limit upsert returned no row");
    return { hits: Number(row.hits), resetMs: Number(row.reset_ms) };
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
