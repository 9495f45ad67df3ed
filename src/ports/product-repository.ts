import type { NewProduct, Product, ScoredProduct } from "../domain/product.ts";
import type { Vector } from "../domain/vector.ts";

/** A create sent with an Idempotency-Key: its first answer is recorded with the product, atomically. */
export interface IdempotencyRecord {
  userId: number;
  key: string;
  /** The request as the use case normalised it: a retry with the same key must carry the same. */
  fingerprint: string;
  /** Records older than this no longer count (and may be replaced). */
  ttlHours: number;
}

/** What a recorded key first answered. */
export interface IdempotentAnswer {
  fingerprint: string;
  product: Product;
}

export type AddResult = { created: Product } | { alreadyAnswered: IdempotentAnswer };

export interface ProductRepository {
  /**
   * Stores the product together with its embedding, atomically, and returns it with its id. With
   * `idempotency`, the key is recorded in the same transaction; when the key already holds a
   * record younger than its ttl, nothing is stored and that record is returned instead.
   */
  add(product: NewProduct, embedding: Vector, idempotency?: IdempotencyRecord): Promise<AddResult>;
  /** The recorded answer of a key younger than `ttlHours`, or null. */
  findIdempotentAnswer(userId: number, key: string, ttlHours: number): Promise<IdempotentAnswer | null>;
  /** Deletes the key records older than `ttlHours`; returns how many. */
  pruneIdempotencyKeys(ttlHours: number): Promise<number>;
  /** The `limit` products most similar to `embedding` by cosine similarity, most similar first. */
  searchByVector(embedding: Vector, limit: number): Promise<ScoredProduct[]>;
}
