import { describe, expect, test } from "bun:test";
import { MemoryRateLimitCounters } from "../../src/adapters/in-process/rate-limit-counters.ts";
import { RateLimitExceeded } from "../../src/domain/errors.ts";
import { importCost, RateLimiter, rateLimitState } from "../../src/domain/rate-limit.ts";
import { FakeClock } from "../fakes/fake-clock.ts";

const MINUTE = 60_000;

describe("rateLimitState", () => {
  const policy = { limit: 3, windowMs: MINUTE };

  test("counts down what is left, and refuses past the limit", () => {
    expect([1, 2, 3, 4].map((hits) => rateLimitState(policy, hits, 30_000))).toEqual([
      { allowed: true, limit: 3, remaining: 2, resetSeconds: 30, windowSeconds: 60 },
      { allowed: true, limit: 3, remaining: 1, resetSeconds: 30, windowSeconds: 60 },
      { allowed: true, limit: 3, remaining: 0, resetSeconds: 30, windowSeconds: 60 },
      { allowed: false, limit: 3, remaining: 0, resetSeconds: 30, windowSeconds: 60 },
    ]);
  });

  test("the reset is in whole seconds, rounded up, and never 0", () => {
    expect(rateLimitState(policy, 1, 1_001).resetSeconds).toBe(2);
    expect(rateLimitState(policy, 1, 0).resetSeconds).toBe(1);
  });
});

describe("RateLimiter", () => {
  function limiter() {
    const clock = new FakeClock();
    const counters = new MemoryRateLimitCounters(clock);
    const events: Record<string, unknown>[] = [];
    const rateLimiter = new RateLimiter({
      policies: { search: { limit: 2, windowMs: MINUTE } },
      counters,
      log: (event) => events.push(event),
    });
    return { clock, counters, events, rateLimiter };
  }

  test("refuses a client past its limit with the state, until its window ends", async () => {
    const { clock, rateLimiter } = limiter();
    expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ allowed: true, remaining: 1 });
    clock.advance(20_000);
    expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 0, resetSeconds: 40 });
    const refused = await rateLimiter.spend("search", "user:1").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitExceeded);
    expect((refused as RateLimitExceeded).state).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 40 });
    expect((refused as RateLimitExceeded).message).toBe("Demasiadas peticiones. Inténtelo de nuevo en 40 segundos");
    clock.advance(40_000);
    expect(await rateLimiter.spend("search", "user:1")).toMatchObject({
      allowed: true,
      remaining: 1,
      resetSeconds: 60,
    });
  });

  test("a request of several units spends them all, or nothing when they do not fit what is left", async () => {
    const { rateLimiter } = limiter();
    const big = new RateLimiter({
      policies: { write: { limit: 10, windowMs: MINUTE } },
      counters: new MemoryRateLimitCounters(new FakeClock()),
    });
    expect(await big.spend("write", "user:1", 6)).toMatchObject({ allowed: true, remaining: 4 });
    const refused = await big.spend("write", "user:1", 5).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitExceeded);
    expect((refused as RateLimitExceeded).state).toMatchObject({ allowed: false, remaining: 4 });
    expect((refused as RateLimitExceeded).message).toBe(
      "Esta petición cuesta 5 unidades del cupo y quedan 4. Inténtelo de nuevo en 60 segundos",
    );
    // What the refused request did not spend is still there.
    expect(await big.spend("write", "user:1", 4)).toMatchObject({ allowed: true, remaining: 0 });
    // A request never costs more than a whole window: a fresh window lets the largest through.
    expect(await rateLimiter.spend("search", "user:9", 50)).toMatchObject({ allowed: true, remaining: 0 });
  });

  test("a bulk import costs one unit per 100 products started", () => {
    expect([1, 100, 101, 1_500, 5_000].map(importCost)).toEqual([1, 1, 2, 15, 50]);
  });

  test("each client and each budget counts apart", async () => {
    const { rateLimiter } = limiter();
    await rateLimiter.spend("search", "user:1");
    await rateLimiter.spend("search", "user:1");
    expect(await rateLimiter.spend("search", "user:2")).toMatchObject({ remaining: 1 });
    expect(await rateLimiter.spend("search", "address:10.0.0.1")).toMatchObject({ remaining: 1 });
  });

  test("a budget without a policy is not limited", async () => {
    const { rateLimiter } = limiter();
    expect(rateLimiter.limits("write")).toBe(false);
    for (let i = 0; i < 5; i++) expect(await rateLimiter.spend("write", "user:1")).toBeNull();
  });

  test("when the counters fail and there is no fallback, the request passes and the failure is logged", async () => {
    const { counters, events, rateLimiter } = limiter();
    counters.down = true;
    expect(await rateLimiter.spend("search", "user:1")).toBeNull();
    expect(events).toEqual([
      { event: "rate_limit_unavailable", bucket: "search", error: expect.any(Error), fallback: false },
    ]);
  });

  describe("with a fallback counting in the process", () => {
    function withFallback(counters: { hit: MemoryRateLimitCounters["hit"] }) {
      const clock = new FakeClock();
      const fallback = new MemoryRateLimitCounters(clock);
      const events: Record<string, unknown>[] = [];
      const rateLimiter = new RateLimiter({
        policies: { search: { limit: 2, windowMs: MINUTE } },
        counters,
        fallback,
        countersTimeoutMs: 50,
        retryCountersAfterMs: 5_000,
        clock,
        log: (event) => events.push(event),
      });
      return { clock, rateLimiter, events };
    }

    test("failing counters: the fallback counts and refuses past the limit (never open), visibly", async () => {
      const counters = new MemoryRateLimitCounters(new FakeClock());
      counters.down = true;
      const { rateLimiter, events } = withFallback(counters);
      expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 1 });
      expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 0 });
      expect(rateLimiter.spend("search", "user:1")).rejects.toBeInstanceOf(RateLimitExceeded);
      // One warning for the outage, and a counted event per request for the metrics.
      expect(events.filter((event) => event.event === "rate_limit_unavailable")).toHaveLength(1);
      expect(events.filter((event) => event.event === "rate_limit_fallback")).toHaveLength(3);
    });

    test("counters that hang are given up after the timeout: the fallback counts", async () => {
      const { rateLimiter, events } = withFallback({ hit: () => new Promise(() => {}) });
      expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 1 });
      expect(events.map((event) => event.event)).toEqual(["rate_limit_unavailable", "rate_limit_fallback"]);
    });

    test("the counters are tried again once the retry time has passed, and take over again", async () => {
      const counters = new MemoryRateLimitCounters(new FakeClock());
      counters.down = true;
      const { clock, rateLimiter, events } = withFallback(counters);
      await rateLimiter.spend("search", "user:1");
      counters.down = false;
      // Within the retry time the counters are not asked (they would have counted 1 here).
      expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 0 });
      clock.advance(5_000);
      expect(await rateLimiter.spend("search", "user:1")).toMatchObject({ remaining: 1 });
      expect(events.at(-1)).toEqual({ event: "rate_limit_restored", bucket: "search" });
    });
  });
});
