import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { requestLogFields } from "../../../../src/adapters/http/core/request-context.ts";
import { GeneratorChain } from "../../../../src/adapters/providers/generator-chain.ts";
import { OpenAIGenerator } from "../../../../src/adapters/providers/openai.ts";
import { FakeGenerator } from "../../../fakes/fake-generator.ts";
import { openAIError, openAIHandler } from "../../../fakes/fake-openai-server.ts";
import { FakeProviderServer } from "../../../fakes/fake-provider-server.ts";
import { createHarness } from "../harness.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PRODUCT = { name: "Cafetera", description: "Espresso con espumador", category: "cocina" };

const provider = FakeProviderServer.start(openAIHandler);
afterAll(() => provider.stop());
beforeEach(() => provider.reset());

/** The harness with a chain whose first link is OpenAI (on the fake server, one retry), then the fake. */
async function harnessWithChain() {
  return createHarness({
    generator: (log) =>
      new GeneratorChain(
        [
          new OpenAIGenerator({
            apiKey: "sk-test-key-0123456789",
            baseUrl: `${provider.url}/v1`,
            model: "gpt-test",
            retry: { attemptTimeoutMs: 2_000, budgetMs: 5_000, maxRetries: 1, baseDelayMs: 5, maxDelayMs: 10 },
            log: (event) => log.warn(event),
          }),
          new FakeGenerator(),
        ],
        { log: (event) => log.info(event) },
      ),
  });
}

describe("X-Request-Id", () => {
  test("without one, the answer gets a new UUID, which its request log line carries", async () => {
    const h = await createHarness();
    const response = await h.call("GET", "/health/live");
    const id = response.headers.get("x-request-id");
    expect(id).toMatch(UUID);
    expect(h.logs.find((event) => event.event === "request")).toMatchObject({ requestId: id, status: 200 });
    expect((await h.call("GET", "/health/live")).headers.get("x-request-id")).not.toBe(id);
  });

  test("a usable one from the client or its proxy is kept; anything else is replaced", async () => {
    const h = await createHarness();
    for (const kept of ["abc-123", "req_01HZX.9:edge/7@eu+a=b~", "x".repeat(128)]) {
      const response = await h.call("GET", "/health/live", { headers: { "x-request-id": kept } });
      expect(response.headers.get("x-request-id")).toBe(kept);
    }
    for (const refused of ["x".repeat(129), "con espacio", "ñandú", "a;b", "<script>", " "]) {
      const response = await h.call("GET", "/health/live", { headers: { "x-request-id": refused } });
      expect(response.headers.get("x-request-id")).toMatch(UUID);
    }
  });

  test("every answer carries it, errors included", async () => {
    const h = await createHarness({ settings: { maxBodyBytes: 1024 } });
    const json = { "content-type": "application/json" };
    const responses = [
      await h.call("GET", "/nada"),
      await h.call("DELETE", "/"),
      await h.call("POST", "/products/", { json: PRODUCT }),
      await h.call("POST", "/products/", { token: h.token, json: { name: 1 } }),
      await h.call("POST", "/products/", {
        token: h.token,
        body: "x".repeat(2000),
        headers: { ...json, "content-length": "2000" },
      }),
      await h.call("POST", "/auth/login", { form: { username: "nadie", password: "mala" } }),
    ];
    expect(responses.map((response) => response.status)).toEqual([404, 405, 401, 422, 413, 401]);
    for (const response of responses) expect(response.headers.get("x-request-id")).toMatch(UUID);
    const again = await h.call("GET", "/nada", { headers: { "x-request-id": "mio-1" } });
    expect(again.headers.get("x-request-id")).toBe("mio-1");
  });

  test("a provider retry and a chain fallback deep inside a search log the same id as its request line", async () => {
    const h = await harnessWithChain();
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    provider.enqueue(openAIError(500, "down", "server_error"), openAIError(500, "down", "server_error"));
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "cafetera" },
      headers: { "x-request-id": "busqueda-42" },
    });
    expect(response.status).toBe(200);
    expect(response.json.recommendation).toStartWith("[FAKE - fake-1]");
    const lines = h.logs.filter((event) => event.requestId === "busqueda-42").map((event) => event.event);
    expect(lines).toEqual([
      "provider_retry",
      "provider_gave_up",
      "provider_call",
      "generation_failed",
      "generation_answered",
      "search",
      "request",
    ]);
  });

  test("requests served at the same time each keep their own id", async () => {
    const h = await harnessWithChain();
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    provider.enqueue(...Array.from({ length: 8 }, () => openAIError(500, "down", "server_error")));
    const ids = ["uno", "dos", "tres", "cuatro"];
    await Promise.all(
      ids.map((id) =>
        h.call("POST", "/products/search", {
          token: h.token,
          json: { query: "cafetera" },
          headers: { "x-request-id": id },
        }),
      ),
    );
    for (const id of ids) {
      const lines = h.logs.filter((event) => event.requestId === id);
      expect(lines.map((event) => event.event)).toEqual([
        "provider_retry",
        "provider_gave_up",
        "provider_call",
        "generation_failed",
        "generation_answered",
        "search",
        "request",
      ]);
    }
  });

  test("outside a request, lines carry no id", async () => {
    const h = await createHarness();
    await h.call("GET", "/health/live");
    h.log.info({ event: "afterwards" });
    expect(h.logs.at(-1)).toEqual({ event: "afterwards" });
    expect(requestLogFields()).toEqual({});
  });
});
