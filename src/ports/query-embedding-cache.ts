import type { Vector } from "../domain/vector.ts";

/**
 * Query embeddings already computed, keyed by the embedder's vector space (model and dimension)
 * and the normalised query text, so a repeated query costs no call to the embedding provider.
 */
export interface QueryEmbeddingCache {
  /** The vector, or null when the query is not cached (or no longer). */
  get(key: QueryKey): Promise<Vector | null>;
  /**
   * Remembers the vector. It may be stored later, with others (write-behind): a `get` of this
   * process finds it at once, other processes once it is stored. Never throws: a failure to store
   * is the cache's to report, a search does not wait for it.
   */
  put(key: QueryKey, vector: Vector): void;
  /** Stores whatever `put` still holds; resolves when it is stored (or failed and was reported). */
  flush(): Promise<void>;
}

export interface QueryKey {
  model: string;
  dimension: number;
  /** The query normalised, so that equal queries meet (see CachingEmbedder). */
  text: string;
}
