import type { Clock } from "../ports/clock.ts";
import type { RateLimitCounters, WindowCount } from "../ports/rate-limit-counters.ts";
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
  /** Units left in the window (a request costs one, a bulk import more: `importCost`). */
  remaining: number;
  /** Whole seconds until the window ends (at least 1). */
  resetSeconds: number;
  windowSeconds: number;
}

/**
 * The state once the window holds `hits` units, `resetMs` before it ends; `allowed` says whether the
 * request was let through (by default: whether the hits fit the limit).
 */
export function rateLimitState(
  policy: RateLimitPolicy,
  hits: number,
  resetMs: number,
  allowed = hits <= policy.limit,
): RateLimitState {
  return {
    allowed,
    limit: policy.limit,
    remaining: Math.max(0, policy.limit - hits),
    resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    windowSeconds: Math.max(1, Math.round(policy.windowMs / 1000)),
  };
}

/**
 * Products of a bulk import that cost one unit of the write budget, as one single write does. So
 * the page's batches of 100 cost one unit each, as before, and the largest import of the default
 * BULK_MAX_ITEMS (5,000) costs 50 of the default 120: the budget bounds products, not requests.
 */
export const IMPORT_ITEMS_PER_UNIT = 100;

/** What a bulk import of `items` products costs of the write budget: one unit per 100 started. */
export function importCost(items: number): number {
  return Math.max(1, Math.ceil(items / IMPORT_ITEMS_PER_UNIT));
}

export interface RateLimiterDeps {
  /** A bucket without a policy is not limited. */
  policies: Partial<Record<RateLimitBucket, RateLimitPolicy>>;
  counters: RateLimitCounters;
  /**
   * Counts in their place while `counters` fail or are slow (the database takes no writes: a
   * standby, a primary lost). Each instance then limits on its own, so N instances let a client
   * through up to N times its limit, but none lets it through unlimited. Absent: a failing counter
   * lets the request through.
   */
  fallback?: RateLimitCounters | undefined;
  /** How long `counters` may take before the fallback counts instead, in ms (default 500). */
  countersTimeoutMs?: number;
  /** After `counters` failed, how long the fallback counts alone before they are tried again, in ms (default 5000). */
  retryCountersAfterMs?: number;
  /** For the retry time above (default: the system's). */
  clock?: Clock;
  /**
   * `rate_limit_unavailable` {bucket, error, fallback} when the counters fail (once per outage when a
   * fallback counts), `rate_limit_fallback` {bucket} for each request the fallback counted (metrics),
   * `rate_limit_restored` when the counters answer again.
   */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * Per-client request budgets. `client` identifies who spends: a user, or an address for anonymous
 * clients. When the counters cannot be reached, the fallback counts (visible as
 * `rate_limit_fallback` events and in the metrics); without one the request passes: refusing every
 * client because the counter store is down would turn its outage into ours.
 */
export class RateLimiter {
  /** While the counters are failing: the time (clock ms) to try them again. */
  private countersFailedUntil: number | undefined;

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
   * Counts a request of `client` costing `units` (default 1) against `bucket`. Returns the state for
   * the answer's headers, or null when the bucket is not limited or nothing could count; throws
   * RateLimitExceeded (with the state) when the units do not fit what is left of the window: then
   * nothing is spent. A request never costs more than a whole window (it could never pass).
   */
  async spend(bucket: RateLimitBucket, client: string, units = 1): Promise<RateLimitState | null> {
    const policy = this.deps.policies[bucket];
    if (!policy) return null;
    const cost = Math.min(Math.max(1, Math.ceil(units)), policy.limit);
    const count = await this.count(bucket, `${bucket}:${client}`, policy.windowMs, cost, policy.limit);
    if (count === null) return null;
    const state = rateLimitState(policy, count.hits, count.resetMs, count.counted);
    if (!state.allowed) throw new RateLimitExceeded(state, cost);
    return state;
  }

  private async count(
    bucket: RateLimitBucket,
    key: string,
    windowMs: number,
    cost: number,
    limit: number,
  ): Promise<WindowCount | null> {
    const { fallback, log } = this.deps;
    const now = (this.deps.clock ?? { now: () => Date.now() }).now();
    if (fallback && this.countersFailedUntil !== undefined && now < this.countersFailedUntil) {
      log?.({ event: "rate_limit_fallback", bucket });
      return fallback.hit(key, windowMs, cost, limit);
    }
    try {
      const count = await this.hitCounters(key, windowMs, cost, limit);
      if (this.countersFailedUntil !== undefined) {
        this.countersFailedUntil = undefined;
        log?.({ event: "rate_limit_restored", bucket });
      }
      return count;
    } catch (error) {
      if (!fallback) {
        log?.({ event: "rate_limit_unavailable", bucket, error, fallback: false });
        return null;
      }
      if (this.countersFailedUntil === undefined) {
        log?.({ event: "rate_limit_unavailable", bucket, error, fallback: true });
      }
      this.countersFailedUntil = now + (this.deps.retryCountersAfterMs ?? 5_000);
      log?.({ event: "rate_limit_fallback", bucket });
      return fallback.hit(key, windowMs, cost, limit);
    }
  }

  /** The counters' answer, or a rejection once they took longer than countersTimeoutMs (with a fallback to turn to). */
  private hitCounters(key: string, windowMs: number, cost: number, limit: number): Promise<WindowCount> {
    const pending = this.deps.counters.hit(key, windowMs, cost, limit);
    if (!this.deps.fallback) return pending;
    const timeoutMs = this.deps.countersTimeoutMs ?? 500;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const slow = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the rate limit counters took longer than ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    pending.catch(() => {});
    return Promise.race([pending, slow]).finally(() => clearTimeout(timer));
  }
}
