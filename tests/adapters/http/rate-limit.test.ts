import { describe, expect, test } from "bun:test";
import { bucketOf } from "../../../src/adapters/http/rate-limit.ts";
import { createHarness } from "./harness.ts";

const MINUTE = 60_000;
const PRODUCT = { name: "Cafetera", description: "Espresso con espumador", category: "cocina" };
const LIMITS = { search: { limit: 3, windowMs: MINUTE }, write: { limit: 2, windowMs: MINUTE } };

function limitHeaders(headers: Headers) {
  return {
    limit: headers.get("ratelimit-limit"),
    remaining: headers.get("ratelimit-remaining"),
    reset: headers.get("ratelimit-reset"),
    policy: headers.get("ratelimit-policy"),
  };
}

describe("which routes spend which budget", () => {
  test("search, writes under /products (today's and the lifecycle routes to come), and nothing else", () => {
    expect(bucketOf("POST", "/products/search")).toBe("search");
    for (const [method, route] of [
      ["POST", "/products/"],
      ["POST", "/products"],
      ["POST", "/products/bulk"],
      ["PUT", "/products/:id"],
      ["PATCH", "/products/:id"],
      ["DELETE", "/products/:id"],
    ] as const) {
      expect(bucketOf(method, route)).toBe("write");
    }
    for (const [method, route] of [
      ["GET", "/products"],
      ["GET", "/products/:id"],
      ["POST", "/auth/login"],
      ["GET", "/"],
      ["GET", "/metrics"],
      ["POST", "/productsx"],
    ] as const) {
      expect(bucketOf(method, route)).toBeNull();
    }
  });
});

describe("rate limits", () => {
  test("searches carry RateLimit-* headers; past the limit, 429 with Retry-After and nothing is run", async () => {
    const h = await createHarness({ rateLimits: LIMITS });
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    const answers = [];
    for (let i = 0; i < 3; i++) {
      h.clock.advance(1_000);
      answers.push(await h.call("POST", "/products/search", { token: h.token, json: { query: "cafetera" } }));
    }
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(answers.map((answer) => limitHeaders(answer.headers))).toEqual([
      { limit: "3", remaining: "2", reset: "60", policy: "3;w=60" },
      { limit: "3", remaining: "1", reset: "59", policy: "3;w=60" },
      { limit: "3", remaining: "0", reset: "58", policy: "3;w=60" },
    ]);
    const generated = h.generator.requests.length;
    h.clock.advance(8_000);
    const refused = await h.call("POST", "/products/search", { token: h.token, json: { query: "cafetera" } });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ detail: "Demasiadas peticiones. Inténtelo de nuevo en 50 segundos" });
    expect(refused.headers.get("retry-after")).toBe("50");
    expect(limitHeaders(refused.headers)).toEqual({ limit: "3", remaining: "0", reset: "50", policy: "3;w=60" });
    expect(h.generator.requests.length).toBe(generated);

    h.clock.advance(50_000);
    const again = await h.call("POST", "/products/search", { token: h.token, json: { query: "cafetera" } });
    expect(again.status).toBe(200);
    expect(again.headers.get("ratelimit-remaining")).toBe("2");
  });

  test("each user has their own budget, and writes have one apart from searches", async () => {
    const h = await createHarness({ rateLimits: LIMITS });
    const bea = await h.users.create("bea", "hash-no-usado");
    const beaToken = await h.tokens.issue({ userId: bea.id, username: bea.username, tokenVersion: bea.tokenVersion });
    for (let i = 0; i < 2; i++) {
      expect((await h.call("POST", "/products/", { token: h.token, json: PRODUCT })).status).toBe(201);
    }
    expect((await h.call("POST", "/products/", { token: h.token, json: PRODUCT })).status).toBe(429);
    const other = await h.call("POST", "/products/", { token: beaToken, json: PRODUCT });
    expect(other.status).toBe(201);
    expect(limitHeaders(other.headers)).toMatchObject({ limit: "2", remaining: "1" });
    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: "cafetera" } });
    expect(search.status).toBe(200);
    expect(limitHeaders(search.headers)).toMatchObject({ limit: "3", remaining: "2" });
  });

  test("requests refused before the handler (no token, a bad body) spend nothing; other routes carry no headers", async () => {
    const h = await createHarness({ rateLimits: LIMITS });
    for (let i = 0; i < 4; i++) {
      expect((await h.call("POST", "/products/search", { json: { query: "x" } })).status).toBe(401);
      expect((await h.call("POST", "/products/search", { token: h.token, json: { limit: 0 } })).status).toBe(422);
    }
    const first = await h.call("POST", "/products/search", { token: h.token, json: { query: "x" } });
    expect(first.headers.get("ratelimit-remaining")).toBe("2");
    for (const [method, path] of [
      ["GET", "/"],
      ["GET", "/health/ready"],
      ["GET", "/openapi/json"],
    ] as const) {
      expect((await h.call(method, path)).headers.get("ratelimit-limit")).toBeNull();
    }
    const login = await h.call("POST", "/auth/login", { form: { username: "ana", password: "mala" } });
    expect(login.headers.get("ratelimit-limit")).toBeNull();
  });

  test("anonymous searches are counted by client address (X-Forwarded-For behind a trusted proxy)", async () => {
    const h = await createHarness({
      rateLimits: { search: { limit: 1, windowMs: MINUTE } },
      settings: { searchRequiresAuth: false, trustProxy: true },
    });
    const from = (address: string) =>
      h.call("POST", "/products/search", {
        json: { query: "x" },
        headers: { "x-forwarded-for": `198.51.100.9, ${address}` },
      });
    expect((await from("203.0.113.1")).status).toBe(200);
    expect((await from("203.0.113.1")).status).toBe(429);
    expect((await from("203.0.113.2")).status).toBe(200);
  });

  test("without limits configured, nothing is limited and no header is sent", async () => {
    const h = await createHarness();
    for (let i = 0; i < 5; i++) {
      const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "x" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit-limit")).toBeNull();
    }
  });

  test("when the counters fail, requests pass and a warning is logged", async () => {
    const h = await createHarness({ rateLimits: LIMITS });
    h.counters.down = true;
    for (let i = 0; i < 4; i++) {
      expect((await h.call("POST", "/products/search", { token: h.token, json: { query: "x" } })).status).toBe(200);
    }
    expect(h.logs.filter((event) => event.event === "rate_limit_unavailable")).toHaveLength(4);
  });
});
