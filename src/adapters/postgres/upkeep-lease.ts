import type { UpkeepLease } from "../../ports/upkeep-lease.ts";
import type { SqlClient } from "./sql-client.ts";

export interface SqlUpkeepLeaseOptions {
  /** Who holds it: unique per process (host, pid and a random part). */
  holder: string;
  /** A holder that stops renewing loses the lease this long after its last renewal, in ms (default 60 s). */
  ttlMs?: number;
}

/**
 * The UpkeepLease as a row of `upkeep_lease` on the primary, with an expiry the database's clock
 * decides (instances with skewed clocks still agree). Taken by an upsert that succeeds only when
 * the row is free, expired or already ours; renewed every third of its ttl while held (an index
 * build takes minutes), so a holder that dies frees it within the ttl. A row rather than a session
 * advisory lock: it works through a transaction-pooling pgbouncer too, where a session lock would
 * stay on whichever server connection took it.
 */
export class SqlUpkeepLease implements UpkeepLease {
  private renewal: ReturnType<typeof setInterval> | undefined;
  private readonly ttlMs: number;

  constructor(
    private readonly db: SqlClient,
    private readonly options: SqlUpkeepLeaseOptions,
    private readonly name = "catalogue",
  ) {
    this.ttlMs = options.ttlMs ?? 60_000;
  }

  async acquire(): Promise<boolean> {
    const rows = await this.db.query<{ holder: string }>(
      `INSERT INTO upkeep_lease AS l (name, holder, expires_at)
       VALUES ($1, $2, now() + make_interval(secs => $3 / 1000.0))
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE l.expires_at <= now() OR l.holder = EXCLUDED.holder
       RETURNING holder`,
      [this.name, this.options.holder, this.ttlMs],
    );
    const held = rows.length > 0;
    if (held && this.renewal === undefined) {
      this.renewal = setInterval(() => void this.renew().catch(() => {}), Math.max(100, this.ttlMs / 3));
      this.renewal.unref();
    }
    return held;
  }

  /** Pushes the expiry of a lease this process holds (an update only: a renewal never takes a released lease back). */
  private async renew(): Promise<void> {
    await this.db.query(
      `UPDATE upkeep_lease SET expires_at = now() + make_interval(secs => $3 / 1000.0)
       WHERE name = $1 AND holder = $2`,
      [this.name, this.options.holder, this.ttlMs],
    );
  }

  async release(): Promise<void> {
    clearInterval(this.renewal);
    this.renewal = undefined;
    await this.db.query("DELETE FROM upkeep_lease WHERE name = $1 AND holder = $2", [this.name, this.options.holder]);
  }

  /** Who holds it now, or null (for `index status` and tests). */
  async holder(): Promise<string | null> {
    const [row] = await this.db.query<{ holder: string }>(
      "SELECT holder FROM upkeep_lease WHERE name = $1 AND expires_at > now()",
      [this.name],
    );
    return row?.holder ?? null;
  }
}
