import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import {
  ProviderTimeout,
  type RetryPolicy,
  resilientFetch,
  retryAfterMs,
} from "../../../src/adapters/providers/resilient-fetch.ts";
import { FakeProviderServer } from "../../fakes/fake-provider-server.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";

const ok = { json: { ok: true } };
const server = FakeProviderServer.start(() => ok);
afterAll(() => server.stop());
beforeEach(() => server.reset());

const policy: RetryPolicy = {
  attemptTimeoutMs: 2_000,
  budgetMs: 5_000,
  maxRetries: 3,
  baseDelayMs: 100,
  maxDelayMs: 400,
};

/**
 * A resilientFetch on fake timers (time passes only when the test moves it, or, with
 * `sleepsEndAtOnce`, when a backoff sleeps) and with the jitter's random number fixed at 0.5,
 * so each backoff is half its cap: 50, 100, 200, 200... ms.
 */
function client(options: { policy?: Partial<RetryPolicy>; sleepsEndAtOnce?: boolean } = {}) {
  const events: Record<string, unknown>[] = [];
  const timers = new FakeTimers({ sleepsEndAtOnce: options.sleepsEndAtOnce ?? false });
  const send = resilientFetch({
    provider: "test",
    policy: { ...policy, ...options.policy },
    log: (event) => events.push(event),
    random: () => 0.5,
    timers,
  });
  const post = (signal?: AbortSignal) =>
    send(`${server.url}/v1/thing`, { method: "POST", body: JSON.stringify({ q: 1 }), signal });
  return { events, post, timers };
}

describe("resilientFetch", () => {
  test("waits as long as Retry-After says on a 429, then answers with the retry's response", async () => {
    server.enqueue({ json: { error: "slow down" }, status: 429, headers: { "retry-after": "0.2" } });
    const { events, post, timers } = client();
    const answered = post();
    expect(await timers.nextSleep()).toBe(200);
    await timers.advance(199);
    expect(server.requests).toHaveLength(1);
    await timers.advance(1);
    const response = await answered;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.body).toEqual({ q: 1 });
    expect(events).toEqual([
      { event: "provider_retry", provider: "test", attempt: 1, reason: "HTTP 429", delayMs: 200 },
      { event: "provider_call", provider: "test", outcome: "retried", attempts: 2, ms: 200 },
    ]);
  });

  test("retries 5xx with exponential backoff and gives the SDK the last response when retries run out", async () => {
    server.enqueue(...Array.from({ length: 4 }, () => ({ json: { error: "down" }, status: 503 })));
    const { events, post, timers } = client({ sleepsEndAtOnce: true });
    const response = await post();
    expect(response.status).toBe(503);
    expect(server.requests).toHaveLength(4);
    // Full jitter at 0.5 of a cap that doubles from 100 ms up to 400 ms.
    expect(timers.sleeps).toEqual([50, 100, 200]);
    expect(events.map((event) => event.event)).toEqual([
      "provider_retry",
      "provider_retry",
      "provider_retry",
      "provider_gave_up",
      "provider_call",
    ]);
    expect(events.at(-1)).toMatchObject({ outcome: "failed", attempts: 4, ms: 350 });
  });

  test("does not retry a 4xx other than 429", async () => {
    for (const status of [400, 401, 403, 404, 422]) {
      server.reset();
      server.enqueue({ json: { error: "no" }, status });
      const { post, timers } = client();
      const response = await post();
      expect(response.status).toBe(status);
      expect(server.requests).toHaveLength(1);
      expect(timers.sleeps).toEqual([]);
    }
  });

  test("gives up at once when Retry-After is beyond the budget", async () => {
    server.enqueue({ json: { error: "later" }, status: 429, headers: { "retry-after": "60" } });
    const { events, post, timers } = client({ policy: { budgetMs: 1_000 } });
    expect((await post()).status).toBe(429);
    expect(timers.sleeps).toEqual([]);
    expect(server.requests).toHaveLength(1);
    expect(events[0]?.event).toBe("provider_gave_up");
  });

  test("an attempt with no answer times out, is cancelled, and is retried", async () => {
    server.enqueue({ hang: true });
    const { events, post, timers } = client({ policy: { attemptTimeoutMs: 100 } });
    const answered = post();
    await server.received(1);
    await timers.advance(99);
    expect(events).toEqual([]);
    await timers.advance(1);
    await server.requests[0]?.clientGone;
    await timers.advance(await timers.nextSleep());
    expect((await answered).status).toBe(200);
    expect(server.requests).toHaveLength(2);
    expect(String(events[0]?.reason)).toContain("ProviderTimeout");
  });

  test("the last attempt gets what is left of the budget, and its timeout is thrown when the budget is spent", async () => {
    server.enqueue({ hang: true }, { hang: true }, { hang: true });
    const { post, timers } = client({ policy: { attemptTimeoutMs: 100, budgetMs: 220 }, sleepsEndAtOnce: true });
    const failed = post().then(
      () => null,
      (error: unknown) => error,
    );
    await server.received(1);
    await timers.advance(100);
    // A backoff of 50 ms: 150 ms spent, 70 left of the budget.
    await server.received(2);
    await timers.advance(70);
    const error = await failed;
    expect(error).toBeInstanceOf(ProviderTimeout);
    expect((error as ProviderTimeout).timeoutMs).toBe(70);
    // The next backoff (100 ms) would end beyond the budget: no third attempt.
    expect(server.requests).toHaveLength(2);
    expect(timers.now()).toBe(220);
  });

  test("a caller's abort stops the wait and starts no further attempt", async () => {
    server.enqueue({ json: {}, status: 429, headers: { "retry-after": "2" } });
    const { events, post, timers } = client();
    const controller = new AbortController();
    const answered = post(controller.signal);
    expect(await timers.nextSleep()).toBe(2_000);
    controller.abort(new Error("caller gave up"));
    await expect(answered).rejects.toThrow("caller gave up");
    await timers.advance(2_000);
    expect(server.requests).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ event: "provider_call", outcome: "cancelled", attempts: 1 });
  });

  test("a refused connection is retried, then thrown", async () => {
    const gone = FakeProviderServer.start(() => ok);
    const url = gone.url;
    await gone.stop();
    const events: Record<string, unknown>[] = [];
    const timers = new FakeTimers({ sleepsEndAtOnce: true });
    const send = resilientFetch({
      provider: "test",
      policy: { ...policy, maxRetries: 2 },
      log: (e) => events.push(e),
      timers,
    });
    await expect(send(`${url}/x`)).rejects.toThrow();
    expect(timers.sleeps).toHaveLength(2);
    expect(events.map((event) => event.event)).toEqual([
      "provider_retry",
      "provider_retry",
      "provider_gave_up",
      "provider_call",
    ]);
    expect(events.at(-1)).toMatchObject({ outcome: "failed", attempts: 3 });
  });

  test("each call ends with one provider_call event saying how it ended", async () => {
    const outcomes = async (replies: Parameters<typeof server.enqueue>, cancel = false) => {
      server.reset();
      server.enqueue(...replies);
      const { events, post } = client({ sleepsEndAtOnce: true });
      const controller = new AbortController();
      const call = post(controller.signal).catch(() => {});
      if (cancel) {
        await server.received(1);
        controller.abort(new Error("the caller went away"));
      }
      await call;
      return events
        .filter((event) => event.event === "provider_call")
        .map(({ outcome, attempts }) => [outcome, attempts]);
    };
    expect(await outcomes([])).toEqual([["ok", 1]]);
    expect(await outcomes([{ json: {}, status: 503 }])).toEqual([["retried", 2]]);
    expect(await outcomes([{ json: { error: "bad key" }, status: 401 }])).toEqual([["failed", 1]]);
    expect(await outcomes([{ hang: true }], true)).toEqual([["cancelled", 1]]);
  });
});

describe("retryAfterMs", () => {
  const headers = (entries: Record<string, string>) => new Headers(entries);
  test("reads retry-after-ms, seconds and HTTP dates", () => {
    expect(retryAfterMs(headers({ "retry-after-ms": "150" }))).toBe(150);
    expect(retryAfterMs(headers({ "retry-after": "3" }))).toBe(3000);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs(headers({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), now)).toBe(5000);
    expect(retryAfterMs(headers({}))).toBeNull();
    expect(retryAfterMs(headers({ "retry-after": "soon" }))).toBeNull();
  });
});
