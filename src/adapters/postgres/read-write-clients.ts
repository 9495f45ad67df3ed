import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { SqlClient } from "./sql-client.ts";

/**
 * The pools a repository works on: `reads` for reads and searches (DATABASE_READ_URL, standbys),
 * `writes` for writes and the reads a write depends on (DATABASE_URL, the primary). With one
 * database both are the same client.
 */
export interface ReadWriteClients {
  reads: SqlClient;
  writes: SqlClient;
  /**
   * Called by a repository once a write of the caller being served has committed, so that the
   * caller's next reads see it even on a lagging standby (readYourWrites).
   */
  wrote(): Promise<void>;
}

/** Both pools on one client (PGlite, or a server without DATABASE_READ_URL). */
export function onePool(client: SqlClient): ReadWriteClients {
  return { reads: client, writes: client, wrote: async () => {} };
}

/** What repositories accept: one client for everything, or the two pools. */
export function poolsOf(db: SqlClient | ReadWriteClients): ReadWriteClients {
  return "reads" in db ? db : onePool(db);
}

export interface ReadYourWritesOptions {
  /** Who is being served now (a user id), or undefined (an anonymous request, a command). */
  caller: () => string | undefined;
  /**
   * How long a read waits on the standby for it to replay the caller's last write before it is sent
   * to the primary instead, in ms (READ_YOUR_WRITES_WAIT_MS). 0: straight to the primary.
   */
  waitMs: number;
  /** How long after a write the caller's reads are checked, in ms (default 30 s: far beyond any lag measured). */
  windowMs?: number;
  /** `read_your_writes` {outcome: "replayed" | "primary" | "standby_without_primary"} for each read of a caller with a recent write. */
  log?: (event: Record<string, unknown>) => void;
}

/** Callers remembered at most (the oldest go first): a bound on memory whatever the traffic. */
const MAX_CALLERS = 100_000;

/**
 * Read-your-writes over a primary and lagging standbys. After a caller's write commits, its WAL
 * position on the primary (`pg_current_wal_lsn()`, taken after the commit, so at or past the commit
 * record) is remembered for that caller. For `windowMs` after it, each read of that caller runs on
 * a standby connection only once that connection shows it has replayed that position
 * (`pg_last_wal_replay_lsn()`), checked on the very connection that then runs the read; the read
 * waits for it up to `waitMs`, then goes to the primary. Other callers read from the standbys
 * untouched, and see the write after the lag.
 *
 * The memory is this process's: behind a balancer, route a caller's requests to one instance
 * (HAProxy `balance hdr(Authorization)`, deploy/local/haproxy.cfg), or keep reads on the primary.
 */
export function readYourWrites(reads: SqlClient, writes: SqlClient, options: ReadYourWritesOptions): ReadWriteClients {
  const windowMs = options.windowMs ?? 30_000;
  /** Per caller: the position its reads must see (null: unknown, read from the primary), until when. */
  const pending = new Map<string, { position: string | null; until: number }>();

  const positionFor = (): string | null | undefined => {
    const caller = options.caller();
    if (caller === undefined) return undefined;
    const entry = pending.get(caller);
    if (entry === undefined) return undefined;
    if (entry.until <= performance.now()) {
      pending.delete(caller);
      return undefined;
    }
    return entry.position;
  };

  const consistentRead = async <T>(position: string | null, run: (client: SqlClient) => Promise<T>): Promise<T> => {
    if (position !== null && options.waitMs > 0 && reads.reserved) {
      const onStandby = await reads.reserved(async (connection) => {
        const deadline = performance.now() + options.waitMs;
        for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
          const [row] = await connection.query<{ seen: boolean }>(
            "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= $1::pg_lsn AS seen",
            [position],
          );
          if (row?.seen) return { value: await run(connection) };
          if (performance.now() >= deadline) return undefined;
          await Bun.sleep(Math.min(pause, Math.max(1, deadline - performance.now())));
        }
      });
      if (onStandby !== undefined) {
        options.log?.({ event: "read_your_writes", outcome: "replayed" });
        return onStandby.value;
      }
    }
    options.log?.({ event: "read_your_writes", outcome: "primary" });
    try {
      return await run(writes);
    } catch (error) {
      // No primary to read from (killed, being replaced): the standby's answer, maybe without the
      // caller's last write, rather than none. Searches keep answering through a failover.
      if (!(error instanceof DatabaseUnavailable)) throw error;
      options.log?.({ event: "read_your_writes", outcome: "standby_without_primary" });
      return run(reads);
    }
  };

  const routedReads: SqlClient = {
    query<T>(text: string, params?: readonly unknown[]): Promise<T[]> {
      const position = positionFor();
      if (position === undefined) return reads.query<T>(text, params);
      return consistentRead(position, (client) => client.query<T>(text, params));
    },
    transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R> {
      const position = positionFor();
      if (position === undefined) return reads.transaction(fn);
      return consistentRead(position, (client) => client.transaction(fn));
    },
    copyIn: (table, columns, data) => writes.copyIn(table, columns, data),
    // The pools are the composition root's to close.
    close: async () => {},
  };

  return {
    reads: routedReads,
    writes,
    async wrote(): Promise<void> {
      const caller = options.caller();
      if (caller === undefined) return;
      let position: string | null = null;
      try {
        const [row] = await writes.query<{ position: string }>("SELECT pg_current_wal_lsn()::text AS position");
        position = row?.position ?? null;
      } catch {
        // The write is committed (its answer must not fail now); without its position, this caller's
        // reads go to the primary for the window.
      }
      pending.delete(caller);
      pending.set(caller, { position, until: performance.now() + windowMs });
      if (pending.size > MAX_CALLERS) pending.delete(pending.keys().next().value as string);
    },
  };
}
