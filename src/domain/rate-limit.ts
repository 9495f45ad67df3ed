import type { RateLimitCounters } from "../ports/rate-limit-counters.ts";
import { RateLimitExceeded } from "./errors.ts";

/** What a client may spend: `limit` requests per window of `windowMs`. */
export interface RateLimitPolicy {
  limit: number;
  windowMs: number;
}

/** The budgets that are limited: searches (they may call paid models) and catalogue writes. */
export type RateLimitBucket = "search" | "write";

/** Where a client stands in its window after one more request. */
export interface RateLimitState {
  allowed: boolean;
  limit: number;
  /** Requests left in the window (0 once refused). */
  remaining: number;
  /** Whole seconds until the window ends (at least 1). */
  resetSeconds: number;
  windowSeconds: number;
}

/** The state after the window's `hits`-th request, `resetMs` before the window ends. */
export function rateLimitState(policy: RateLimitPolicy, hits: number, resetMs: number): RateLimitState {
  return {
    allowed: hits <= policy.limit,
    limit: policy.limit,
    remaining: Math.max(0, policy.limit - hits),
    resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    windowSeconds: Math.max(1, Math.round(policy.windowMs / 1000)),
  };
}

export interface RateLimiterDeps {
  /** A bucket without a policy is not limited. */
  policies: Partial<Record<RateLimitBucket, RateLimitPolicy>>;
  counters: RateLimitCounters;
  /** Receives `rate_limit_unavailable` when the counters fail (the request is let through). */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * Per-client request budgets. `client` identifies who spends: a user, or an address for anonymous
 * clients. When the counters cannot be reached the request passes: the limit protects budgets, and
 * refusing every client because the counter store is down would turn its outage into ours.
 */
export class RateLimiter {
  constructor(private readonly deps: RateLimiterDeps) {}

  /** True when the bucket has a limit at all. */
  limits(bucket: RateLimitBucket): boolean {
    return this.deps.policies[bucket] !== undefined;
  }

  /** The bucket's policy; undefined when it is not limited. */
  policy(bucket: RateLimitBucket): RateLimitPolicy | undefined {
    return this.deps.policies[bucket];
  }

  /**
   * Counts one request of `client` against `bucket`. Returns the state for the answer's headers,
   * or null when the bucket is not limited or the counters failed; throws RateLimitExceeded (with
   * the state) when the client is over its limit.
   */
  async spend(bucket: RateLimitBucket, client: string): Promise<RateLimitState | null> {
    const policy = this.deps.policies[bucket];
    if (!policy) return null;
    let count: Awaited<ReturnType<RateLimitCounters["hit"]>>;
    try {
      count = await this.deps.counters.hit(`${bucket}:${client}`, policy.windowMs);
    } catch (error) {
      this.deps.log?.({ event: "rate_limit_unavailable", bucket, error });
      return null;
    }
    const state = rateLimitState(policy, count.hits, count.resetMs);
    if (!state.allowed) throw new RateLimitExceeded(state);
    return state;
  }
}
