import { createHash } from "node:crypto";
import pgvector from "pgvector";
import type { Vector } from "../../domain/vector.ts";
import type { QueryEmbeddingCache, QueryKey } from "../../ports/query-embedding-cache.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import { vectorParam } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresQueryEmbeddingCacheOptions {
  /** An entry older than this is not used and is eventually deleted. */
  retentionDays: number;
  /** Most entries kept: beyond it the oldest are deleted (a client sending endless distinct queries cannot grow the table). */
  maxRows: number;
  /** One `put` in this many starts a prune in the background (default 200). */
  pruneEvery?: number;
  /** Receives a warning when a background prune fails. */
  log?: (event: Record<string, unknown>) => void;
  /** False while the database takes no writes (a standby, a primary lost): then `put` stores nothing. */
  writable?: () => boolean;
}

/**
 * Query embeddings in the `query_embeddings` table, shared by every replica on the database and
 * kept across restarts. Entries expire after `retentionDays` (so a provider's silent model update
 * is picked up eventually) and at most `maxRows` are kept. Pruning runs in the background now and
 * then, never on a search's path; the table may pass `maxRows` by up to `pruneEvery` rows per replica
 * in between. Entries are read from the read pool and written to the primary; while the database
 * takes no writes, nothing is written (the search embeds and goes on).
 */
export class PostgresQueryEmbeddingCache implements QueryEmbeddingCache {
  private puts = 0;
  private pruning: Promise<number> | null = null;
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;

  constructor(
    db: SqlClient | ReadWriteClients,
    private readonly options: PostgresQueryEmbeddingCacheOptions,
  ) {
    ({ reads: this.reads, writes: this.writes } = poolsOf(db));
  }

  async get(key: QueryKey): Promise<Vector | null> {
    const [row] = await this.reads.query<{ embedding: string }>(
      `SELECT embedding::text AS embedding FROM query_embeddings
       WHERE key = $1 AND created_at > now() - make_interval(days => $2)`,
      [digest(key), this.options.retentionDays],
    );
    return row ? (pgvector.fromSql(row.embedding) as Vector) : null;
  }

  async put(key: QueryKey, vector: Vector): Promise<void> {
    if (this.options.writable?.() === false) return;
    await this.writes.query(
      `INSERT INTO query_embeddings (key, model, embedding) VALUES ($1, $2, $3::vector)
       ON CONFLICT (key) DO UPDATE SET embedding = EXCLUDED.embedding, created_at = now()`,
      [digest(key), key.model, vectorParam(vector)],
    );
    this.puts++;
    if (this.puts % (this.options.pruneEvery ?? 200) === 0 && this.pruning === null) {
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

  /** Deletes the expired entries and the oldest beyond maxRows; returns how many. */
  async prune(): Promise<number> {
    const expired = await this.writes.query<{ key: string }>(
      "DELETE FROM query_embeddings WHERE created_at <= now() - make_interval(days => $1) RETURNING key",
      [this.options.retentionDays],
    );
    const surplus = await this.writes.query<{ key: string }>(
      `DELETE FROM query_embeddings WHERE key IN (
         SELECT key FROM query_embeddings ORDER BY created_at DESC, key OFFSET $1
       ) RETURNING key`,
      [this.options.maxRows],
    );
    return expired.length + surplus.length;
  }

  /** Resolves when the background prune, if one is running, has finished (for tests and shutdown). */
  async settled(): Promise<void> {
    await this.pruning;
  }
}

function digest(key: QueryKey): string {
  return createHash("sha256").update(`${key.model}\u0000${key.dimension}\u0000${key.text}`).digest("hex");
}
