import type { ProviderLog, RetryPolicy } from "./resilient-fetch.ts";

/** What every remote provider adapter needs to reach its API. */
export interface ProviderClientOptions {
  /** Sent to the provider only; never logged. */
  apiKey: string;
  /** Unset: the provider's own endpoint. Set: a compatible server or gateway. */
  baseUrl?: string | undefined;
  retry: RetryPolicy;
  /** Receives provider_retry / provider_gave_up events (never a key). */
  log?: ProviderLog | undefined;
}

/**
 * The SDKs' own time limit for one call: our resilientFetch enforces the real ones (per attempt and
 * per budget), so the SDK's must never cut in first.
 */
export function sdkTimeoutMs(retry: RetryPolicy): number {
  return retry.budgetMs + 1_000;
}

/** The model declined to answer (a refusal, a safety block, a content filter): the chain moves on. */
export class GenerationRefused extends Error {
  override readonly name = "GenerationRefused";
  constructor(reason: string) {
    super(`the model declined to answer: ${reason}`);
  }
}
