import type { Vector } from "../domain/vector.ts";

/** Some models embed queries and documents differently (e.g. retrieval task types). */
export type EmbeddingPurpose = "document" | "query";

export interface Embedder {
  /** Identifies the vector space: vectors of different models must never be compared. */
  readonly model: string;
  readonly dimension: number;
  /**
   * One vector per text, in order. Rejects when the provider fails (after its own retries), or with
   * `signal.reason` once `signal` aborts (the request's deadline passed or its client left): a
   * remote embedder cancels its request then.
   */
  embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]>;
}
