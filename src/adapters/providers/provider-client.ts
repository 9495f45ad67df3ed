import type { GenerationEvent, Recommendation } from "../../ports/generator.ts";
import type { Timers } from "../../ports/timers.ts";
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
  /** The clock, backoff waits and attempt time limits of the retries (default: the real ones). */
  timers?: Timers | undefined;
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

/**
 * A remote model's text pieces as a Generator's stream: each non-empty piece as a `delta`, then
 * `done` with the whole text trimmed (blank is left to the chain to reject, as with `generate`).
 * `pieces` gets a signal of its own for its request, aborted when the caller's aborts and when the
 * stream is left early, so the HTTP request is cancelled either way. `pieces` must throw when the
 * model declined (GenerationRefused) and when the stream ended before the model finished (a cut
 * connection); once the caller's signal aborts, the iteration throws its reason.
 */
export async function* recommendationStream(
  signal: AbortSignal | undefined,
  author: Omit<Recommendation, "text">,
  pieces: (signal: AbortSignal) => AsyncIterable<string>,
): AsyncGenerator<GenerationEvent> {
  signal?.throwIfAborted();
  const controller = new AbortController();
  const stop = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", stop, { once: true });
  let text = "";
  try {
    for await (const piece of pieces(controller.signal)) {
      if (piece === "") continue;
      text += piece;
      yield { type: "delta", text: piece };
    }
  } catch (error) {
    // The SDKs report a cancelled request in their own ways; the caller gets its own reason.
    if (signal?.aborted) throw signal.reason;
    throw error;
  } finally {
    signal?.removeEventListener("abort", stop);
    // A stream left early still has its request open: this cancels it (and does nothing once read to the end).
    controller.abort(new Error("the stream was closed"));
  }
  yield { type: "done", recommendation: { ...author, text: text.trim() }, position: 0 };
}
