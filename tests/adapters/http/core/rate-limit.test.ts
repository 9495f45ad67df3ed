import { describe, expect, test } from "bun:test";
import { createHarness } from "../harness.ts";

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
  test("each route spends the budget it declares: the search, every catalogue write, nothing else", async () => {
    // Budgets large enough for every request below, told apart by their limits.
    const h = await createHarness({
      rateLimits: { search: { limit: 30, windowMs: MINUTE }, write: { limit: 20, windowMs: MINUTE } },
    });
    const { id } = (await h.call("POST", "/products/", { token: h.token, json: PRODUCT })).json as { id: number };
    const requests: [string, string, Record<string, unknown>, "search" | "write" | null][] = [
      ["POST", "/products/", { json: { ...PRODUCT, name: "Otra" } }, "write"],
      ["POST", "/products/bulk", { json: [PRODUCT] }, "write"],
      ["PATCH", `/products/${id}`, { json: { name: "Cafetera nueva" } }, "write"],
      ["PUT", `/products/${id}`, { json: PRODUCT }, "write"],
      ["POST", "/products/search", { json: { query: "cafetera" } }, "search"],
      ["GET", "/products", {}, null],
      ["GET", `/products/${id}`, {}, null],
      ["GET", "/products/categories", {}, null],
      ["GET", "/", {}, null],
      ["GET", "/openapi/json", {}, null],
      ["DELETE", `/products/${id}`, {}, "write"],
    ];
    const limit = { search: "30", write: "20" };
    for (const [method, path, init, bucket] of requests) {
      const response = await h.call(method, path, { token: h.token, ...init });
      expect(response.status, `${method} ${path}`).toBeLessThan(300);
      expect({ method, path, limit: response.headers.get("ratelimit-limit") }).toEqual({
        method,
        path,
        limit: bucket === null ? null : limit[bucket],
      });
    }
    const login = await h.call("POST", "/auth/login", { form: { username: "ana", password: "mala" } });
    expect(login.headers.get("ratelimit-limit")).toBeNull();
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
    const bea = await h.users.create("bea", "hash-no-usado", "admin");
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

  test("a storefront's search-only key is counted per client address; a key that may write, per key", async () => {
    const h = await createHarness({
      rateLimits: { search: { limit: 1, windowMs: MINUTE } },
      settings: { trustProxy: true },
    });
    const storefront = await h.keyOf({ actions: ["search"] });
    const backend = await h.keyOf({ actions: ["search", "products.write"] });
    const search = (key: string, address: string) =>
      h.call("POST", "/products/search", {
        json: { query: "x" },
        headers: { authorization: `Bearer ${key}`, "x-forwarded-for": address },
      });
    expect((await search(storefront.key, "203.0.113.1")).status).toBe(200);
    expect((await search(storefront.key, "203.0.113.1")).status).toBe(429);
    // Another shopper of the same shop still searches.
    expect((await search(storefront.key, "203.0.113.2")).status).toBe(200);
    expect((await search(backend.key, "203.0.113.1")).status).toBe(200);
    expect((await search(backend.key, "203.0.113.2")).status).toBe(429);
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
