import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { Clock } from "../../ports/clock.ts";
import type { RateLimitCounters, WindowCount } from "../../ports/rate-limit-counters.ts";

interface Window {
  startedAt: number;
  endsAt: number;
  hits: number;
}

/**
 * Counters in this process: exact when it is the only one serving (the embedded database allows
 * no other), per replica otherwise. At most `maxKeys` keys are kept: the windows that ended go
 * first, then the oldest. Set `down` to make every hit fail (tests).
 */
export class MemoryRateLimitCounters implements RateLimitCounters {
  down = false;
  /** In the order their windows began: the first one is always the oldest. */
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 100_000,
  ) {}

  get size(): number {
    return this.windows.size;
  }

  async hit(key: string, windowMs: number, cost = 1, limit = Number.POSITIVE_INFINITY): Promise<WindowCount> {
    if (this.down) throw new DatabaseUnavailable();
    const now = this.clock.now();
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      this.windows.delete(key);
      this.makeRoom(now);
      window = { startedAt: now, endsAt: now + windowMs, hits: 0 };
      this.windows.set(key, window);
    }
    const counted = window.hits + cost <= limit;
    if (counted) window.hits += cost;
    return { hits: window.hits, resetMs: window.endsAt - now, counted };
  }

  private makeRoom(now: number): void {
    for (const [key, window] of this.windows) {
      if (window.endsAt > now && this.windows.size < this.maxKeys) break;
      this.windows.delete(key);
    }
  }
}
