import type { ScoredProduct } from "../domain/product.ts";

export interface RecommendationRequest {
  query: string;
  /** The retrieved products, most similar first: the only material the text may draw on. */
  products: readonly ScoredProduct[];
}

export interface Recommendation {
  text: string;
  /** Who wrote it, for the `[PROVIDER - model]` label, e.g. "OPENAI" and "gpt-4.1-mini". */
  provider: string;
  model: string;
}

/**
 * What a streamed recommendation sends, in this order: `delta` pieces of text as the model writes
 * them (a chain may interrupt them with a `reset`), then exactly one `done`.
 */
export type GenerationEvent =
  /** The next piece of the text, as written (whitespace included). */
  | { type: "delta"; text: string }
  /**
   * Every delta sent so far is withdrawn: the link that wrote them failed, and the next link's
   * deltas replace them. Only a chain sends it, and only after at least one delta.
   */
  | { type: "reset" }
  /**
   * The end. `recommendation.text` is the deltas since the last reset joined and trimmed;
   * `position` is the chain link that wrote it (0 for a generator that is not a chain).
   */
  | { type: "done"; recommendation: Recommendation; position: number };

/** One language model, or an ordered chain of them that answers with the first link that succeeds. */
export interface Generator {
  /** For logs, e.g. "local/plantilla-es" or "chain(openai, local)". */
  readonly name: string;
  /**
   * The whole recommendation at once (the JSON answer). Rejects when it cannot answer. `signal`
   * aborts when the caller stops waiting (a chain link's time limit): a remote generator cancels
   * its request then.
   */
  generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation>;
  /**
   * The same recommendation as it is written (the event-stream answer): see GenerationEvent.
   * The iteration throws when it cannot answer, a refusal or block detected mid-stream included,
   * and throws `signal.reason` once `signal` aborts; aborting `signal` is how a caller that stops
   * listening cancels the provider request at once (leaving the loop early cancels it too, but an
   * async generator only notices at its next event).
   */
  stream(request: RecommendationRequest, signal?: AbortSignal): AsyncIterable<GenerationEvent>;
}
