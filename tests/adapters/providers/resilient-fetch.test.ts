import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import {
  ProviderTimeout,
  type RetryPolicy,
  resilientFetch,
  retryAfterMs,
} from "../../../src/adapters/providers/resilient-fetch.ts";
import { FakeProviderServer } from "../../fakes/fake-provider-server.ts";

const ok = { json: { ok: true } };
const server = FakeProviderServer.start(() => ok);
afterAll(() => server.stop());
beforeEach(() => server.reset());

const fast: RetryPolicy = { attemptTimeoutMs: 2_000, budgetMs: 5_000, maxRetries: 3, baseDelayMs: 5, maxDelayMs: 20 };

function client(policy: Partial<RetryPolicy> = {}) {
  const events: Record<string, unknown>[] = [];
  const send = resilientFetch({ provider: "test", policy: { ...fast, ...policy }, log: (event) => events.push(event) });
  const post = (signal?: AbortSignal) =>
    send(`${server.url}/v1/thing`, { method: "POST", body: JSON.stringify({ q: 1 }), signal });
  return { events, post };
}

describe("resilientFetch", () => {
  test("waits as long as Retry-After says on a 429, then answers with the retry's response", async () => {
    server.enqueue({ json: { error: "slow down" }, status: 429, headers: { "retry-after": "0.2" } });
    const { events, post } = client();
    const started = performance.now();
    const response = await post();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.body).toEqual({ q: 1 });
    expect(events).toEqual([
      { event: "provider_retry", provider: "test", attempt: 1, reason: "HTTP 429", delayMs: 200 },
      { event: "provider_call", provider: "test", outcome: "retried", attempts: 2, ms: expect.any(Number) },
    ]);
  });

  test("retries 5xx with backoff and gives the SDK the last response when retries run out", async () => {
    server.enqueue(...Array.from({ length: 4 }, () => ({ json: { error: "down" }, status: 503 })));
    const { events, post } = client({ maxRetries: 3 });
    const response = await post();
    expect(response.status).toBe(503);
    expect(server.requests).toHaveLength(4);
    expect(events.map((event) => event.event)).toEqual([
      "provider_retry",
      "provider_retry",
      "provider_retry",
      "provider_gave_up",
      "provider_call",
    ]);
    expect(events.at(-1)).toMatchObject({ outcome: "failed", attempts: 4 });
  });

  test("does not retry a 4xx other than 429", async () => {
    for (const status of [400, 401, 403, 404, 422]) {
      server.reset();
      server.enqueue({ json: { error: "no" }, status });
      const response = await client().post();
      expect(response.status).toBe(status);
      expect(server.requests).toHaveLength(1);
    }
  });

  test("gives up at once when Retry-After is beyond the budget", async () => {
    server.enqueue({ json: { error: "later" }, status: 429, headers: { "retry-after": "60" } });
    const { events, post } = client({ budgetMs: 1_000 });
    const started = performance.now();
    expect((await post()).status).toBe(429);
    expect(performance.now() - started).toBeLessThan(900);
    expect(server.requests).toHaveLength(1);
    expect(events[0]?.event).toBe("provider_gave_up");
  });

  test("an attempt with no answer times out and is retried", async () => {
    server.enqueue({ hang: true });
    const { events, post } = client({ attemptTimeoutMs: 100 });
    expect((await post()).status).toBe(200);
    expect(server.requests).toHaveLength(2);
    expect(String(events[0]?.reason)).toContain("ProviderTimeout");
  });

  test("the last timeout is thrown when the budget is spent", async () => {
    server.enqueue({ hang: true }, { hang: true }, { hang: true });
    const { post } = client({ attemptTimeoutMs: 100, budgetMs: 250 });
    await expect(post()).rejects.toBeInstanceOf(ProviderTimeout);
  });

  test("a caller's abort stops the wait and starts no further attempt", async () => {
    server.enqueue({ json: {}, status: 429, headers: { "retry-after": "2" } });
    const { post } = client();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("caller gave up")), 100);
    const started = performance.now();
    await expect(post(controller.signal)).rejects.toThrow("caller gave up");
    await Bun.sleep(150);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(server.requests).toHaveLength(1);
  });

  test("a refused connection is retried, then thrown", async () => {
    const gone = FakeProviderServer.start(() => ok);
    const url = gone.url;
    await gone.stop();
    const events: Record<string, unknown>[] = [];
    const send = resilientFetch({ provider: "test", policy: { ...fast, maxRetries: 2 }, log: (e) => events.push(e) });
    await expect(send(`${url}/x`)).rejects.toThrow();
    await Bun.sleep(200);
    expect(events.map((event) => event.event)).toEqual([
      "provider_retry",
      "provider_retry",
      "provider_gave_up",
      "provider_call",
    ]);
    expect(events.at(-1)).toMatchObject({ outcome: "failed", attempts: 3 });
  });

  test("each call ends with one provider_call event saying how it ended", async () => {
    const outcomes = async (replies: Parameters<typeof server.enqueue>, signal?: AbortSignal) => {
      server.reset();
      server.enqueue(...replies);
      const { events, post } = client();
      await post(signal).catch(() => {});
      return events
        .filter((event) => event.event === "provider_call")
        .map(({ outcome, attempts }) => [outcome, attempts]);
    };
    expect(await outcomes([])).toEqual([["ok", 1]]);
    expect(await outcomes([{ json: {}, status: 503 }])).toEqual([["retried", 2]]);
    expect(await outcomes([{ json: { error: "bad key" }, status: 401 }])).toEqual([["failed", 1]]);
    expect(await outcomes([{ hang: true }], AbortSignal.timeout(50))).toEqual([["cancelled", 1]]);
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
