import { systemTimers, type Timers } from "../../ports/timers.ts";
import { describeError } from "./describe-error.ts";

/** How one provider call (one SDK request) is retried. */
export interface RetryPolicy {
  /** Time limit of one HTTP attempt, response body included, in ms. */
  attemptTimeoutMs: number;
  /** Total time for the call, every attempt and wait included, in ms: no retry starts that would end after it. */
  budgetMs: number;
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First backoff delay in ms; it doubles with each retry up to maxDelayMs, with full jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export type ProviderLog = (event: Record<string, unknown>) => void;

export interface ResilientFetchOptions {
  /** For the logs and metrics, e.g. "openai". */
  provider: string;
  policy: RetryPolicy;
  log?: ProviderLog;
  /** The fetch that does the work (default: the global one). */
  fetch?: typeof fetch;
  /** A number in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
  /** The clock, the backoff waits and the attempts' time limits (default: the real ones). */
  timers?: Timers;
}

/** An attempt that got no answer within RetryPolicy.attemptTimeoutMs. */
export class ProviderTimeout extends Error {
  override readonly name = "ProviderTimeout";
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/**
 * A `fetch` for the provider SDKs (whose own retries are switched off), so that every provider
 * retries the same way, with the real status and headers in hand:
 * - 429, 5xx, a network error or an attempt timeout is retried, with exponential backoff and full
 *   jitter, or after the server's `Retry-After` / `retry-after-ms` when it gives one;
 * - any other status (a 4xx: bad key, bad request) is answered at once, for the SDK to report;
 * - no retry is started when its wait would end after the budget, nor once the caller aborts;
 * - after the last attempt, the last response (or error) is what the SDK sees.
 * Every call ends with one `provider_call` event {provider, outcome, attempts, ms}: outcome `ok`
 * (answered at the first attempt), `retried` (answered after retries), `failed` (an error status or
 * no answer, retries spent), `cancelled` (the caller stopped waiting). Each retry and the giving up
 * are also logged (`provider_retry`, `provider_gave_up`).
 */
export function resilientFetch(options: ResilientFetchOptions): typeof fetch {
  const { provider, policy } = options;
  const log = options.log ?? (() => {});
  const send = options.fetch ?? fetch;
  const random = options.random ?? Math.random;
  const timers = options.timers ?? systemTimers;

  const call = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const started = timers.now();
    let attempts = 0;
    const ended = (outcome: "ok" | "retried" | "failed" | "cancelled") =>
      log({ event: "provider_call", provider, outcome, attempts, ms: Math.round(timers.now() - started) });
    try {
      const response = await withRetries(input, init, (count) => {
        attempts = count;
      });
      ended(response.status >= 400 ? "failed" : attempts > 1 ? "retried" : "ok");
      return response;
    } catch (error) {
      ended(init?.signal?.aborted ? "cancelled" : "failed");
      throw error;
    }
  };

  const withRetries = async (
    input: Parameters<typeof fetch>[0],
    init: RequestInit | undefined,
    counted: (attempts: number) => void,
  ): Promise<Response> => {
    const deadline = timers.now() + policy.budgetMs;
    const callerSignal = init?.signal ?? undefined;
    const replayable = isReplayable(init?.body);
    for (let attempt = 1; ; attempt++) {
      counted(attempt);
      const remaining = deadline - timers.now();
      const attemptTimeoutMs = Math.max(1, Math.min(policy.attemptTimeoutMs, remaining));
      const timeout = timers.timeout(attemptTimeoutMs);
      const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;

      let failure: { response: Response } | { error: Error };
      try {
        const response = await send(input, { ...init, signal });
        if (!isRetryableStatus(response.status)) return response;
        failure = { response };
      } catch (error) {
        if (callerSignal?.aborted) throw error;
        failure = {
          error: timeout.aborted ? new ProviderTimeout(attemptTimeoutMs) : asError(error),
        };
      }

      const delayMs =
        "response" in failure
          ? (retryAfterMs(failure.response.headers) ?? backoffMs(attempt, policy, random))
          : backoffMs(attempt, policy, random);
      const reason = "response" in failure ? `HTTP ${failure.response.status}` : describeError(failure.error);
      const givesUp =
        attempt > policy.maxRetries || !replayable || timers.now() + delayMs >= deadline || callerSignal?.aborted;
      log({
        event: givesUp ? "provider_gave_up" : "provider_retry",
        provider,
        attempt,
        reason,
        ...(givesUp ? {} : { delayMs: Math.round(delayMs) }),
      });
      if (givesUp) {
        if ("response" in failure) return failure.response;
        throw failure.error;
      }
      if ("response" in failure) await failure.response.body?.cancel().catch(() => {});
      await timers.sleep(delayMs, callerSignal);
    }
  };
  return Object.assign(call, { preconnect: fetch.preconnect });
}

/** 429 (rate limit) and 5xx (server trouble, overload) may pass; other statuses will not. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** `retry-after-ms` (OpenAI, Anthropic), else `Retry-After` in seconds or as an HTTP date; null if none. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const milliseconds = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers.get("retry-after")?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Full jitter: a random wait up to base·2^(attempt-1), capped. */
function backoffMs(attempt: number, policy: RetryPolicy, random: () => number): number {
  return random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
}

/** A body the SDK gave as a value (JSON text, bytes) can be sent again; a stream cannot. */
function isReplayable(body: RequestInit["body"]): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === "string" ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof URLSearchParams ||
    body instanceof Blob
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
