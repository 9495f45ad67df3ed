import { describe, expect, test } from "bun:test";
import { createHarness } from "../harness.ts";

const SHOP = "https://shop.example";
const preflight = (origin: string, method = "POST") => ({
  headers: {
    origin,
    "access-control-request-method": method,
    "access-control-request-headers": "authorization,content-type",
  },
});

describe("CORS off (no CORS_ORIGINS, the default)", () => {
  test("a preflight is 405 as any OPTIONS, and no answer names an origin", async () => {
    const h = await createHarness();
    const response = await h.call("OPTIONS", "/products/search", preflight(SHOP));
    expect(response.status).toBe(405);
    expect(response.json).toEqual({ detail: "Método no permitido" });
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const simple = await h.call("GET", "/health/live", { headers: { origin: SHOP } });
    expect(simple.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("CORS with CORS_ORIGINS", () => {
  test("a preflight from a listed origin is 204 with what the browser needs", async () => {
    const h = await createHarness({ settings: { corsOrigins: [SHOP, "http://localhost:3000"] } });
    for (const [path, method] of [
      ["/products/search", "POST"],
      ["/products/", "POST"],
      ["/products/17", "DELETE"],
    ] as const) {
      const response = await h.call("OPTIONS", path, preflight(SHOP, method));
      expect(response.status).toBe(204);
      expect(response.text).toBe("");
      expect(response.headers.get("access-control-allow-origin")).toBe(SHOP);
      expect(response.headers.get("access-control-allow-methods")?.split(", ")).toContain(method);
      expect(response.headers.get("access-control-allow-headers")).toBe(
        "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Prefer, X-Read-After, X-Request-Id",
      );
      expect(response.headers.get("access-control-max-age")).toBe("600");
      expect(response.headers.get("access-control-allow-credentials")).toBeNull();
      expect(response.headers.get("vary")).toBe("Origin");
    }
    const local = await h.call("OPTIONS", "/products/search", preflight("http://localhost:3000"));
    expect(local.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
  });

  test("a preflight from any other origin is 403; an OPTIONS that is no preflight stays 405", async () => {
    const h = await createHarness({ settings: { corsOrigins: [SHOP] } });
    for (const origin of ["https://evil.example", "https://shop.example.evil.example", "http://shop.example", "null"]) {
      const response = await h.call("OPTIONS", "/products/search", preflight(origin));
      expect(response.status).toBe(403);
      expect(response.json).toEqual({ detail: "Origen no permitido" });
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    }
    const plain = await h.call("OPTIONS", "/");
    expect(plain.status).toBe(405);
    expect(plain.headers.get("allow")).toBe("GET, HEAD");
  });

  test("answers to a listed origin name it and expose the headers clients read, errors included", async () => {
    const h = await createHarness({
      settings: { corsOrigins: [SHOP] },
      rateLimits: { search: { limit: 1, windowMs: 60_000 } },
    });
    const responses = [
      await h.call("POST", "/products/search", { token: h.token, json: { query: "x" }, headers: { origin: SHOP } }),
      await h.call("POST", "/products/search", { token: h.token, json: { query: "x" }, headers: { origin: SHOP } }),
      await h.call("POST", "/products/", { json: {}, headers: { origin: SHOP } }),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 429, 401]);
    for (const response of responses) {
      expect(response.headers.get("access-control-allow-origin")).toBe(SHOP);
      expect(response.headers.get("access-control-expose-headers")?.split(", ")).toEqual(
        expect.arrayContaining([
          "RateLimit-Limit",
          "RateLimit-Remaining",
          "RateLimit-Reset",
          "Retry-After",
          "X-Request-Id",
          "Idempotent-Replayed",
          "Location",
          "Preference-Applied",
        ]),
      );
    }
    const stranger = await h.call("GET", "/health/live", { headers: { origin: "https://evil.example" } });
    expect(stranger.status).toBe(200);
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
  });
});
