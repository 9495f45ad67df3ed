import type { Vector } from "../domain/vector.ts";

/**
 * Query embeddings already computed, keyed by the embedder's vector space (model and dimension)
 * and the normalised query text, so a repeated query costs no call to the embedding provider.
 */
export interface QueryEmbeddingCache {
  /** The vector, or null when the query is not cached (or no longer). */
  get(key: QueryKey): Promise<Vector | null>;
  put(key: QueryKey, vector: Vector): Promise<void>;
}

export interface QueryKey {
  model: string;
  dimension: number;
  /** The query normalised, so that equal queries meet (see CachingEmbedder). */
  text: string;
}
