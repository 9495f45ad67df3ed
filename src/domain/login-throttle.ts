import type { Clock } from "../ports/clock.ts";

export interface ThrottlePolicy {
  /** Failures allowed per key inside the window before further attempts are refused. */
  maxFailures: number;
  windowMs: number;
  /** How long a key stays refused once it passes maxFailures. */
  lockoutMs: number;
}

interface Failures {
  count: number;
  firstAt: number;
  lockedUntil: number;
}

/**
 * Counts failed logins per key (a username, a client address) and refuses a key for a while
 * once it fails too often. Kept in memory: each replica throttles what it sees, which bounds
 * guessing per replica without a shared store on the login path.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, Failures>();
  /** Attempts begun and not yet ended, per key: they count against the limit until they settle. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly policy: ThrottlePolicy,
    private readonly clock: Clock,
    /** Bounds memory under a flood of distinct keys. */
    private readonly maxKeys = 100_000,
  ) {}

  /**
   * Seconds until the key may try again, or 0 when it may try now. Attempts in flight count as
   * failures, so parallel requests cannot all pass this check before any failure is recorded.
   */
  retryAfterSeconds(key: string): number {
    const entry = this.failures.get(key);
    const now = this.clock.now();
    if (entry && entry.lockedUntil > now) return Math.ceil((entry.lockedUntil - now) / 1000);
    if (entry && now - entry.firstAt > this.policy.windowMs) this.failures.delete(key);
    const pending = this.inFlight.get(key) ?? 0;
    const failures = this.failures.get(key)?.count ?? 0;
    return pending > 0 && failures + pending >= this.policy.maxFailures ? 1 : 0;
  }

  /** Marks an attempt for the key as in flight; pair every call with `end`. */
  begin(key: string): void {
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
  }

  end(key: string): void {
    const pending = (this.inFlight.get(key) ?? 0) - 1;
    if (pending > 0) this.inFlight.set(key, pending);
    else this.inFlight.delete(key);
  }

  recordFailure(key: string): void {
    const now = this.clock.now();
    let entry = this.failures.get(key);
    if (!entry || (now - entry.firstAt > this.policy.windowMs && entry.lockedUntil <= now)) {
      if (!entry && this.failures.size >= this.maxKeys) this.evictOldest();
      entry = { count: 0, firstAt: now, lockedUntil: 0 };
      this.failures.set(key, entry);
    }
    entry.count += 1;
    if (entry.count >= this.policy.maxFailures) {
      entry.lockedUntil = now + this.policy.lockoutMs;
      entry.count = 0;
      entry.firstAt = now;
    }
  }

  reset(key: string): void {
    this.failures.delete(key);
  }

  private evictOldest(): void {
    const oldest = this.failures.keys().next();
    if (!oldest.done) this.failures.delete(oldest.value);
  }
}
