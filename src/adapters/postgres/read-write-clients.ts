import { DatabaseUnavailable } from "../../domain/errors.ts";
import { walPositionValue } from "../../lib/wal-position.ts";
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
   * Called by a repository once a write of the request being served has committed, so that the
   * caller's next reads see it even on a lagging standby, and its answer says where (readYourWrites).
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

/**
 * What read-your-writes needs of the request being served; there is none outside one (a command,
 * the job worker on its own).
 */
export interface ConsistencyRequest {
  /** Who is served (a user id), or undefined (anonymous): this instance remembers its writes for its next reads. */
  caller?: string | undefined;
  /** The WAL position the client asks its reads to see (the X-Read-After header), when it sent one. */
  readAfter?: string | undefined;
  /** Hears the WAL position at or past the commit of a write the request made (sent back as X-Read-After). */
  wrote(position: string): void;
}

export interface ReadYourWritesOptions {
  /** The request being served now, or undefined. */
  request: () => ConsistencyRequest | undefined;
  /** False when `reads` is the primary's own pool (no DATABASE_READ_URL): reads are not routed then. */
  standbys: boolean;
  /**
   * True while the primary is lost and not yet replaced (a failover under way): a read is then
   * answered by the standby as it is, at once (unset: never).
   */
  primaryLost?: () => boolean;
  /**
   * How long a read waits on the standby for it to replay the position it must see before it is
   * sent to the primary instead, in ms (READ_YOUR_WRITES_WAIT_MS). 0: straight to the primary.
   */
  waitMs: number;
  /** How long after a write the caller's reads are checked, in ms (default 30 s: far beyond any lag measured). */
  windowMs?: number;
  /** `read_your_writes` {outcome: "replayed" | "primary" | "standby_without_primary"} for each read that must see a position. */
  log?: (event: Record<string, unknown>) => void;
}

/** Callers remembered at most (the oldest go first): a bound on memory whatever the traffic. */
const MAX_CALLERS = 100_000;

/**
 * A read's position to see: undefined (none), null (unknown: read on the primary) or a WAL
 * position. The later of two; null wins, as the primary has every position.
 */
type Position = string | null | undefined;

function later(a: Position, b: Position): Position {
  if (a === undefined) return b;
  if (b === undefined || a === null) return a;
  if (b === null) return b;
  return (walPositionValue(a) ?? 0n) >= (walPositionValue(b) ?? 0n) ? a : b;
}

/**
 * Read-your-writes over a primary and lagging standbys. After a write commits, its WAL position on
 * the primary (`pg_current_wal_insert_lsn()`, taken after the commit, so at or past the commit
 * record even with synchronous_commit off) goes to the request (its answer carries it as
 * X-Read-After) and is remembered for the caller. A read that must see a position, the one its
 * request carries (X-Read-After, from a write answered by any instance) or its caller's last write
 * on this instance within `windowMs`, runs on a standby connection only once that connection shows
 * it has replayed it (`pg_last_wal_replay_lsn()`), checked on the very connection that then runs
 * the read. It waits for it up to `waitMs`, polling without holding a connection, then goes to the
 * primary. Other reads go to the standbys untouched, and see a write after the lag. While the
 * primary is lost (a failover under way) every read is answered by the standby as it is: a search
 * that answers beats one that fails or waits for what may never come.
 *
 * Without standbys (`reads` is the primary's pool) reads are not routed, but writes still report
 * their position, for a client whose next read goes to an instance that reads from a standby.
 */
export function readYourWrites(reads: SqlClient, writes: SqlClient, options: ReadYourWritesOptions): ReadWriteClients {
  const windowMs = options.windowMs ?? 30_000;
  /** Per caller: the position its reads must see (null: unknown, read from the primary), until when. */
  const pending = new Map<string, { position: string | null; until: number }>();

  const positionFor = (): Position => {
    const request = options.request();
    if (request === undefined) return undefined;
    const entry = request.caller === undefined ? undefined : pending.get(request.caller);
    let remembered: Position;
    if (entry !== undefined && entry.until <= performance.now()) {
      pending.delete(request.caller as string);
    } else {
      remembered = entry?.position;
    }
    return later(request.readAfter, remembered);
  };

  /** `run` on a standby connection that has replayed `position`, waiting up to waitMs; undefined when none did. */
  const onStandby = async <T>(position: string, run: (client: SqlClient) => Promise<T>) => {
    const reserved = reads.reserved;
    if (options.waitMs <= 0 || !reserved) return undefined;
    const deadline = performance.now() + options.waitMs;
    for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
      const answer = await reserved(async (connection) => {
        const [row] = await connection.query<{ seen: boolean }>(
          "SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= $1::pg_lsn AS seen",
          [position],
        );
        return row?.seen ? { value: await run(connection) } : undefined;
      });
      if (answer !== undefined || performance.now() >= deadline) return answer;
      // Between two looks the connection goes back to the pool: a client naming a position far
      // ahead holds none while its read waits.
      await Bun.sleep(Math.min(pause, Math.max(1, deadline - performance.now())));
    }
  };

  const consistentRead = async <T>(position: string | null, run: (client: SqlClient) => Promise<T>): Promise<T> => {
    if (options.primaryLost?.()) {
      // The position may be of WAL the lost primary never sent (pg_current_wal_insert_lsn() counts
      // every session's): waiting for it made each read of a recent writer wait the whole
      // waitMs through a failover (the Patroni drill: 58 searches in 10 s instead of about 1,300).
      options.log?.({ event: "read_your_writes", outcome: "standby_without_primary" });
      return run(reads);
    }
    const replayed = position === null ? undefined : await onStandby(position, run);
    if (replayed !== undefined) {
      options.log?.({ event: "read_your_writes", outcome: "replayed" });
      return replayed.value;
    }
    options.log?.({ event: "read_your_writes", outcome: "primary" });
    try {
      return await run(writes);
    } catch (error) {
      // No primary to read from (killed, being replaced): the standby's answer, maybe without the
      // write, rather than none. Searches keep answering through a failover.
      if (!(error instanceof DatabaseUnavailable)) throw error;
      options.log?.({ event: "read_your_writes", outcome: "standby_without_primary" });
      return run(reads);
    }
  };

  const routedReads: SqlClient = !options.standbys
    ? reads
    : {
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
      const request = options.request();
      if (request === undefined) return;
      let position: string | null = null;
      try {
        const [row] = await writes.query<{ position: string }>("SELECT pg_current_wal_insert_lsn()::text AS position");
        position = row?.position ?? null;
      } catch {
        // The write is committed (its answer must not fail now); without its position, this caller's
        // reads go to the primary for the window, and the answer carries no X-Read-After.
      }
      if (position !== null) request.wrote(position);
      const { caller } = request;
      if (caller === undefined || !options.standbys) return;
      pending.delete(caller);
      pending.set(caller, { position, until: performance.now() + windowMs });
      if (pending.size > MAX_CALLERS) pending.delete(pending.keys().next().value as string);
    },
  };
}
