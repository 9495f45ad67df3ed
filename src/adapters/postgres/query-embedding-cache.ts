import { createHash } from "node:crypto";
import pgvector from "pgvector";
import type { Vector } from "../../domain/vector.ts";
import type { QueryEmbeddingCache, QueryKey } from "../../ports/query-embedding-cache.ts";
import { vectorParam } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresQueryEmbeddingCacheOptions {
  /** An entry older than this is not used and is eventually deleted. */
  retentionDays: number;
  /** One `put` in this many also deletes the expired entries (default 200). */
  pruneEvery?: number;
}

/**
 * Query embeddings in the `query_embeddings` table, shared by every replica on the database and
 * kept across restarts. Entries expire after `retentionDays`, so the table stays bounded by the
 * distinct queries of that period and a provider's silent model update is picked up eventually.
 */
export class PostgresQueryEmbeddingCache implements QueryEmbeddingCache {
  private puts = 0;

  constructor(
    private readonly db: SqlClient,
    private readonly options: PostgresQueryEmbeddingCacheOptions,
  ) {}

  async get(key: QueryKey): Promise<Vector | null> {
    const [row] = await this.db.query<{ embedding: string }>(
      `SELECT embedding::text AS embedding FROM query_embeddings
       WHERE key = $1 AND created_at > now() - make_interval(days => $2)`,
      [digest(key), this.options.retentionDays],
    );
    return row ? (pgvector.fromSql(row.embedding) as Vector) : null;
  }

  async put(key: QueryKey, vector: Vector): Promise<void> {
    await this.db.query(
      `INSERT INTO query_embeddings (key, model, embedding) VALUES ($1, $2, $3::vector)
       ON CONFLICT (key) DO UPDATE SET embedding = EXCLUDED.embedding, created_at = now()`,
      [digest(key), key.model, vectorParam(vector)],
    );
    this.puts++;
    if (this.puts % (this.options.pruneEvery ?? 200) === 0) await this.prune();
  }

  /** Deletes the expired entries; returns how many. */
  async prune(): Promise<number> {
    const rows = await this.db.query<{ key: string }>(
      "DELETE FROM query_embeddings WHERE created_at <= now() - make_interval(days => $1) RETURNING key",
      [this.options.retentionDays],
    );
    return rows.length;
  }
}

function digest(key: QueryKey): string {
  return createHash("sha256").update(`${key.model}\u0000${key.dimension}\u0000${key.text}`).digest("hex");
}
