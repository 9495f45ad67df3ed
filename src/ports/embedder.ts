import type { Vector } from "../domain/vector.ts";

/** Some models embed queries and documents differently (e.g. retrieval task types). */
export type EmbeddingPurpose = "document" | "query";

export interface Embedder {
  /** Identifies the vector space: vectors of different models must never be compared. */
  readonly model: string;
  readonly dimension: number;
  /**
   * How many embed calls this embedder serves at once faster than one after another: a remote
   * provider's calls wait on the network, so an import embeds that many chunks ahead of the one it
   * writes. Absent: 1 (a local model is busy computing; a call ahead of the write is all it needs).
   */
  readonly callsAtOnce?: number;
  /**
   * How many texts a call is best given when the caller chooses (re-embedding a catalogue): a
   * remote provider's calls cost a round trip each, so many. Absent: 64 (a local model's call then
   * takes a second or two, and progress shows).
   */
  readonly textsPerCall?: number;
  /**
   * One vector per text, in order. Rejects when the provider fails (after its own retries), or with
   * `signal.reason` once `signal` aborts (the request's deadline passed or its client left): a
   * remote embedder cancels its request then.
   */
  embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]>;
}
