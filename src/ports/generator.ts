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

/** One language model, or an ordered chain of them that answers with the first link that succeeds. */
export interface Generator {
  /** For logs, e.g. "local/plantilla-es" or "chain(openai, local)". */
  readonly name: string;
  /**
   * Rejects when it cannot answer. `signal` aborts when the caller stops waiting (a chain link's
   * time limit): a remote generator cancels its request then.
   */
  generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation>;
}
