import { beforeEach, describe, expect, test } from "bun:test";
import { LoginThrottle, type ThrottlePolicy } from "../../src/domain/login-throttle.ts";
import { FakeClock } from "../fakes/fake-clock.ts";

const POLICY: ThrottlePolicy = { maxFailures: 3, windowMs: 60_000, lockoutMs: 120_000 };

let clock: FakeClock;
let throttle: LoginThrottle;

beforeEach(() => {
  clock = new FakeClock();
  throttle = new LoginThrottle(POLICY, clock);
});

function fail(key: string, times: number): void {
  for (let i = 0; i < times; i++) throttle.recordFailure(key);
}

describe("LoginThrottle", () => {
  test("a key with no failures, or fewer than maxFailures, may try now", () => {
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    fail("ana", POLICY.maxFailures - 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
  });

  test("maxFailures failures inside the window lock the key for lockoutMs", () => {
    fail("ana", POLICY.maxFailures);
    expect(throttle.retryAfterSeconds("ana")).toBe(POLICY.lockoutMs / 1000);
    clock.advance(POLICY.lockoutMs / 2);
    expect(throttle.retryAfterSeconds("ana")).toBe(POLICY.lockoutMs / 2000);
    clock.advance(POLICY.lockoutMs / 2 - 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(1);
    clock.advance(1);
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
  });

  test("the lockout counts from the failure that caused it", () => {
    fail("ana", POLICY.maxFailures - 1);
    clock.advance(30_000);
    fail("ana", 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(POLICY.lockoutMs / 1000);
  });

  test("retryAfterSeconds rounds a part of a second up, never down to 0", () => {
    fail("ana", POLICY.maxFailures);
    const lockedUntil = clock.now() + POLICY.lockoutMs;
    const cases: [remainingMs: number, seconds: number][] = [
      [2001, 3],
      [2000, 2],
      [1999, 2],
      [1001, 2],
      [1000, 1],
      [1, 1],
      [0, 0],
    ];
    for (const [remainingMs, seconds] of cases) {
      clock.advance(lockedUntil - remainingMs - clock.now());
      expect({ remainingMs, seconds: throttle.retryAfterSeconds("ana") }).toEqual({ remainingMs, seconds });
    }
  });

  test("failures older than the window are forgotten", () => {
    fail("ana", POLICY.maxFailures - 1);
    clock.advance(POLICY.windowMs + 1);
    fail("ana", POLICY.maxFailures - 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    fail("ana", 1);
    expect(throttle.retryAfterSeconds("ana")).toBeGreaterThan(0);
  });

  test("failures spread over less than the window add up", () => {
    fail("ana", POLICY.maxFailures - 1);
    clock.advance(POLICY.windowMs);
    fail("ana", 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(POLICY.lockoutMs / 1000);
  });

  test("after a lockout the key starts again from zero failures", () => {
    fail("ana", POLICY.maxFailures);
    clock.advance(POLICY.lockoutMs);
    fail("ana", POLICY.maxFailures - 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    fail("ana", 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(POLICY.lockoutMs / 1000);
  });

  test("reset forgets the failures and lifts a lockout", () => {
    fail("ana", POLICY.maxFailures - 1);
    throttle.reset("ana");
    fail("ana", POLICY.maxFailures - 1);
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    fail("ana", 1);
    expect(throttle.retryAfterSeconds("ana")).toBeGreaterThan(0);
    throttle.reset("ana");
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
  });

  test("keys are independent", () => {
    fail("ana", POLICY.maxFailures);
    fail("luis", POLICY.maxFailures - 1);
    expect(throttle.retryAfterSeconds("ana")).toBeGreaterThan(0);
    expect(throttle.retryAfterSeconds("luis")).toBe(0);
    throttle.reset("luis");
    expect(throttle.retryAfterSeconds("ana")).toBeGreaterThan(0);
  });

  test("attempts in flight count against the limit until they end", () => {
    fail("ana", POLICY.maxFailures - 2);
    throttle.begin("ana");
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    throttle.begin("ana");
    expect(throttle.retryAfterSeconds("ana")).toBeGreaterThan(0);
    expect(throttle.retryAfterSeconds("luis")).toBe(0);
    throttle.end("ana");
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
    throttle.end("ana");
    expect(throttle.retryAfterSeconds("ana")).toBe(0);
  });

  test("with maxKeys, the oldest keys are forgotten first and the newest are kept", () => {
    const bounded = new LoginThrottle(POLICY, clock, 3);
    for (const key of ["a", "b", "c"]) for (let i = 0; i < POLICY.maxFailures; i++) bounded.recordFailure(key);
    for (const key of ["a", "b", "c"]) expect(bounded.retryAfterSeconds(key)).toBeGreaterThan(0);

    bounded.recordFailure("d");
    expect(bounded.retryAfterSeconds("a")).toBe(0);
    expect(bounded.retryAfterSeconds("b")).toBeGreaterThan(0);
    expect(bounded.retryAfterSeconds("c")).toBeGreaterThan(0);

    for (let i = 0; i < 10; i++) bounded.recordFailure(`flood-${i}`);
    // Only the last three keys are remembered: one more failure each locks them.
    for (let i = 7; i < 10; i++) {
      for (let j = 1; j < POLICY.maxFailures; j++) bounded.recordFailure(`flood-${i}`);
      expect(bounded.retryAfterSeconds(`flood-${i}`)).toBeGreaterThan(0);
    }
    for (const key of ["b", "c", "d", "flood-0", "flood-6"]) expect(bounded.retryAfterSeconds(key)).toBe(0);
  });

  test("the number of keys held never exceeds maxKeys", () => {
    const maxKeys = 50;
    const bounded = new LoginThrottle(POLICY, clock, maxKeys);
    for (let i = 0; i < 1000; i++) bounded.recordFailure(`key-${i}`);
    const held = (bounded as unknown as { failures: Map<string, unknown> }).failures;
    expect(held.size).toBe(maxKeys);
  });
});
