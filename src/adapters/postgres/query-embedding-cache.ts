import { createHash } from "node:crypto";
import type { Vector } from "../../domain/vector.ts";
import { WriteBehindSchedule } from "../../lib/write-behind.ts";
import type { QueryEmbeddingCache, QueryKey } from "../../ports/query-embedding-cache.ts";
import { decodeVector, encodeVector } from "./binary-copy.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresQueryEmbeddingCacheOptions {
  /** An entry older than this is not used and is eventually deleted. */
  retentionDays: number;
  /**
   * Most entries kept: beyond it the oldest are deleted, down to nine tenths of it (a client sending
   * endless distinct queries cannot grow the table).
   */
  maxRows: number;
  /** One prune in the background every this many entries stored (default 200). */
  pruneEvery?: number;
  /** How long an entry waits for others to be stored with it, in ms (default 100). */
  flushDelayMs?: number;
  /**
   * Most entries stored by one statement (default 10); that many waiting are stored at once. Each
   * statement's parameters are written on the event loop (12 kB an entry at 3072 dimensions): ten
   * at a time keep each pause short, where a hundred held the searches behind it for milliseconds.
   */
  maxBatch?: number;
  /** Most entries waiting to be stored (default 2,000); past it new ones are not stored (the database is not keeping up). */
  maxPending?: number;
  /** How often the keys stored by other processes are read, in ms (default 2,000; see `get`). */
  keysRefreshMs?: number;
  /** Receives `query_cache_failed` when storing or pruning fails (the search never sees it). */
  log?: (event: Record<string, unknown>) => void;
  /** False while the database takes no writes (a standby, a primary lost): then `put` queues nothing. */
  writable?: () => boolean;
}

/**
 * Keys are re-read this far back at each refresh: an insert's created_at is its statement's start,
 * which may precede the previous read, and a standby shows it after its replication lag (431 ms
 * measured during a bulk import).
 */
const KEYS_OVERLAP_SECONDS = 5;

/** Every this many refreshes all the keys are read afresh, dropping those other replicas pruned. */
const KEYS_FULL_READ_EVERY = 1800;

interface Entry {
  key: QueryKey;
  vector: Vector;
}

/**
 * Query embeddings in the `query_embeddings` table, shared by every replica on the database and
 * kept across restarts. Entries expire after `retentionDays` (so a provider's silent model update
 * is picked up eventually) and at most `maxRows` are kept.
 *
 * Written behind: `put` only queues the entry, and entries are stored together, one statement
 * (and one commit) per batch, `flushDelayMs` after the first of them or as soon as `maxBatch`
 * wait. Awaiting the insert and its commit cost each search 0.6 to 1.8 ms of database time
 * (bench:http). A `get` in this process finds a queued entry at once; other replicas find it once
 * stored. A failed store is logged and its entries dropped: it is a cache, the queries are
 * embedded again. Pruning runs in the background now and then, never on a search's path; the
 * table may pass `maxRows` by up to `pruneEvery` rows per replica in between, and a prune past it
 * leaves nine tenths of `maxRows`. Entries are read
 * from the read pool and written to the primary; while the database takes no writes, nothing is
 * queued (the search embeds and goes on).
 *
 * A query the table does not hold costs no round trip either: the keys it holds are kept in memory
 * (64 bits of each digest, about 3 MB at 100,000), read once in the background and then those
 * stored since, every `keysRefreshMs`. A key not among them is a miss at once (measured: the
 * round trip of a miss was a third of the database work of a search with a fake embedder); a
 * query stored by another replica within the last refresh is then embedded once more.
 */
export class PostgresQueryEmbeddingCache implements QueryEmbeddingCache {
  /** Queued entries by digest, and those being stored: both are answered by `get`. */
  private readonly pending = new Map<string, Entry>();
  private readonly storing = new Map<string, Entry>();
  private readonly schedule: WriteBehindSchedule;
  private stored = 0;
  private dropped = 0;
  private pruning: Promise<number> | null = null;
  /** The keys the table holds (their first 16 hex digits), once read; until then every get asks the table. */
  private keys: Set<string> | null = null;
  /** The database's clock at the last read of the keys. */
  private keysReadAt: Date | null = null;
  private keysReading: Promise<void> | null = null;
  private keysTimer: ReturnType<typeof setInterval> | undefined;
  private keysReads = 0;
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;

  constructor(
    db: SqlClient | ReadWriteClients,
    private readonly options: PostgresQueryEmbeddingCacheOptions,
  ) {
    ({ reads: this.reads, writes: this.writes } = poolsOf(db));
    this.schedule = new WriteBehindSchedule(() => this.storePending(), options.flushDelayMs ?? 100);
  }

  async get(key: QueryKey): Promise<Vector | null> {
    const id = queryKeyDigest(key);
    const queued = this.pending.get(id) ?? this.storing.get(id);
    if (queued) return queued.vector;
    if (this.keysTimer === undefined) this.startReadingKeys();
    if (this.keys !== null && !this.keys.has(short(id))) return null;
    const [row] = await this.reads.query<{ embedding: Uint8Array }>(
      `SELECT embedding FROM query_embeddings
       WHERE key = $1 AND created_at > now() - make_interval(days => $2)`,
      [id, this.options.retentionDays],
    );
    // Expired or pruned: not asked for again.
    if (!row) this.keys?.delete(short(id));
    return row ? decodeVector(row.embedding) : null;
  }

  /** Reads the keys stored since the last read (all of them the first time); a failure leaves them as they were. */
  refreshKeys(): Promise<void> {
    this.keysReading ??= this.readKeys()
      .catch((error) => this.options.log?.({ event: "query_cache_failed", operation: "keys", error }))
      .finally(() => {
        this.keysReading = null;
      });
    return this.keysReading;
  }

  private startReadingKeys(): void {
    this.keysTimer = setInterval(() => void this.refreshKeys(), this.options.keysRefreshMs ?? 2000);
    this.keysTimer.unref?.();
    void this.refreshKeys();
  }

  private async readKeys(): Promise<void> {
    const full = this.keysReads++ % KEYS_FULL_READ_EVERY === 0;
    const since = full ? null : this.keysReadAt;
    // Since the last read (all, the first time), less the overlap; the last row carries the database's clock.
    const rows = await this.reads.query<{ key: string | null; read_at: Date | string }>(
      `SELECT left(key, ${SHORT_KEY_LENGTH}) AS key, now() AS read_at FROM query_embeddings
       WHERE created_at > greatest(now() - make_interval(days => $1), $2::timestamptz - make_interval(secs => $3))
       UNION ALL SELECT NULL, now()`,
      [this.options.retentionDays, since ?? new Date(0), KEYS_OVERLAP_SECONDS],
    );
    const keys = full || this.keys === null ? new Set<string>() : this.keys;
    for (const row of rows) {
      if (row.key !== null) keys.add(row.key);
      this.keysReadAt = new Date(row.read_at);
    }
    this.keys = keys;
  }

  put(key: QueryKey, vector: Vector): void {
    if (this.options.writable?.() === false) return;
    const id = queryKeyDigest(key);
    if (!this.pending.has(id) && this.pending.size >= (this.options.maxPending ?? 2000)) {
      this.dropped++;
      return;
    }
    this.pending.set(id, { key, vector });
    this.schedule.queued(this.pending.size >= this.maxBatch);
  }

  flush(): Promise<void> {
    return this.schedule.flush();
  }

  /** Stores what is queued, and waits for a background prune: before closing the database. */
  async close(): Promise<void> {
    clearInterval(this.keysTimer);
    await this.keysReading;
    await this.flush();
    await this.settled();
  }

  /**
   * Deletes the expired entries and, past maxRows, the oldest down to nine tenths of maxRows;
   * returns how many. The search for the oldest sorts the whole table (66 ms of the database's CPU
   * at 100,000 entries): it is skipped while the keys this process knows of are no more than
   * maxRows, and the tenth it frees makes it run once per tenth of maxRows stored, not every
   * `pruneEvery` (at 200 that cost a full cache 0.33 ms of database CPU per query stored).
   */
  async prune(): Promise<number> {
    const expired = await this.writes.query<{ key: string }>(
      "DELETE FROM query_embeddings WHERE created_at <= now() - make_interval(days => $1) RETURNING key",
      [this.options.retentionDays],
    );
    for (const { key } of expired) this.keys?.delete(short(key));
    if (this.keys !== null && this.keys.size <= this.options.maxRows) return expired.length;
    const surplus = await this.writes.query<{ key: string }>(
      `DELETE FROM query_embeddings WHERE key IN (
         SELECT key FROM query_embeddings ORDER BY created_at DESC, key OFFSET $1
       ) RETURNING key`,
      [Math.floor(this.options.maxRows * KEPT_AFTER_PRUNE)],
    );
    for (const { key } of surplus) this.keys?.delete(short(key));
    return expired.length + surplus.length;
  }

  /** Resolves when the background prune, if one is running, has finished (for tests and shutdown). */
  async settled(): Promise<void> {
    await this.pruning;
  }

  private get maxBatch(): number {
    return this.options.maxBatch ?? 10;
  }

  private async storePending(): Promise<void> {
    if (this.dropped > 0) {
      this.options.log?.({ event: "query_cache_failed", operation: "put", dropped: this.dropped, error: "queue full" });
      this.dropped = 0;
    }
    while (this.pending.size > 0) {
      const batch = [...this.pending].slice(0, this.maxBatch);
      for (const [id, entry] of batch) {
        this.pending.delete(id);
        this.storing.set(id, entry);
      }
      try {
        await this.insert(batch);
        for (const [id] of batch) this.keys?.add(short(id));
        this.countStored(batch.length);
      } catch (error) {
        this.options.log?.({ event: "query_cache_failed", operation: "put", entries: batch.length, error });
      } finally {
        for (const [id] of batch) this.storing.delete(id);
      }
    }
  }

  private async insert(batch: readonly [string, Entry][]): Promise<void> {
    const params: unknown[] = [];
    const rows = batch.map(([id, { key, vector }]) => {
      params.push(id, key.model, encodeVector(vector));
      const n = params.length;
      return `($${n - 2}, $${n - 1}, $${n}::bytea)`;
    });
    await this.writes.query(
      `INSERT INTO query_embeddings (key, model, embedding) VALUES ${rows.join(", ")}
       ON CONFLICT (key) DO UPDATE SET embedding = EXCLUDED.embedding, created_at = now()`,
      params,
    );
  }

  private countStored(count: number): void {
    const every = this.options.pruneEvery ?? 200;
    const before = Math.floor(this.stored / every);
    this.stored += count;
    if (Math.floor(this.stored / every) > before && this.pruning === null) {
      this.pruning = this.prune()
        .catch((error) => {
          this.options.log?.({ event: "query_cache_failed", operation: "prune", error });
          return 0;
        })
        .finally(() => {
          this.pruning = null;
        });
    }
  }
}

/** The share of maxRows a prune past it keeps, so that the next one is a tenth of maxRows away. */
const KEPT_AFTER_PRUNE = 0.9;

/** Hex digits of a digest the key set keeps: 64 bits (a collision only costs a round trip). */
const SHORT_KEY_LENGTH = 16;

function short(id: string): string {
  return id.slice(0, SHORT_KEY_LENGTH);
}

/** The row's `key`: a digest of the model, the dimension and the normalised query. */
export function queryKeyDigest(key: QueryKey): string {
  return createHash("sha256").update(`${key.model}\u0000${key.dimension}\u0000${key.text}`).digest("hex");
}
