/** POST /products/search over HTTP: the JSON answer, filters, the event stream and hybrid mode. */
import { describe, expect, test } from "bun:test";
import { NOTHING_GROUNDED, NOTHING_MATCHED } from "../../../../src/domain/search-and-recommend.ts";
import { addProducts, CHAIR, create, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

describe("POST /products/search", () => {
  test("returns the query, a recommendation and the results most similar first, with scores", async () => {
    const h = await createHarness();
    await addProducts(h, MOUSE, LAPTOP, CHAIR);
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop para videojuegos" },
    });
    expect(response.status).toBe(200);
    expect(Object.keys(response.json).sort()).toEqual(["cited_ids", "query", "recommendation", "results"]);
    expect(response.json.query).toBe("laptop para videojuegos");

    const results = response.json.results as { id: number; name: string; score: number }[];
    expect(results.length).toBe(3);
    expect(results[0]).toEqual({ id: 2, ...LAPTOP, score: expect.any(Number) });
    for (const result of results)
      expect(Object.keys(result).sort()).toEqual(["category", "description", "id", "name", "score"]);
    const scores = results.map((result) => result.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores[0]).toBeGreaterThan(scores[1] ?? 1);

    expect(response.json.recommendation).toStartWith("[FAKE - fake-1] ");
    // The recommendation is generated from the query and the returned products only.
    expect(h.generator.requests.at(-1)?.products.map((product) => product.id)).toEqual(
      results.map((result) => result.id),
    );
  });

  test("answers at /products/search/ too", async () => {
    const h = await createHarness();
    await addProducts(h, LAPTOP);
    expect((await h.call("POST", "/products/search/", { token: h.token, json: { query: "laptop" } })).status).toBe(200);
  });

  test("limit defaults to 5 and caps the results", async () => {
    const h = await createHarness();
    for (let i = 1; i <= 7; i++)
      await addProducts(h, { name: `Cable ${i}`, description: `cable usb modelo ${i}`, category: "cables" });
    const byDefault = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable usb" } });
    expect((byDefault.json.results as unknown[]).length).toBe(5);
    const two = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable usb", limit: 2 } });
    expect((two.json.results as unknown[]).length).toBe(2);
    const fifty = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable usb", limit: 50 } });
    expect((fifty.json.results as unknown[]).length).toBe(7);
    const one = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable usb", limit: 1 } });
    expect((one.json.results as unknown[]).length).toBe(1);
  });

  test("limit outside 1..50, not an integer, a string or null is 422", async () => {
    const h = await createHarness();
    for (const limit of [0, 51, -1, 2.5, "5", null, true, [5]]) {
      const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable", limit } });
      expect(response.status).toBe(422);
      expect(response.json).toEqual({ detail: "Campo 'limit': debe ser un entero entre 1 y 50" });
    }
  });

  test("a missing, empty or non-string query is 422, and so is any other field", async () => {
    const h = await createHarness();
    const missing = await h.call("POST", "/products/search", { token: h.token, json: { limit: 3 } });
    expect(missing.json).toEqual({ detail: "Campo 'query': es obligatorio" });
    for (const query of ["", "   "]) {
      const response = await h.call("POST", "/products/search", { token: h.token, json: { query } });
      expect(response.status).toBe(422);
      expect(response.json).toEqual({ detail: "El campo 'query' no puede estar vacío" });
    }
    const notString = await h.call("POST", "/products/search", { token: h.token, json: { query: 5 } });
    expect(notString.status).toBe(422);
    const extra = await h.call("POST", "/products/search", { token: h.token, json: { query: "cable", top_k: 3 } });
    expect(extra.status).toBe(422);
    expect(extra.json).toEqual({ detail: "Campo 'top_k': no está permitido" });
  });

  test("cited_ids lists the products the recommendation cites; a cited id that was not retrieved is removed", async () => {
    const h = await createHarness();
    await addProducts(h, MOUSE, LAPTOP, CHAIR);
    h.generator.write = ({ products }) =>
      `Le recomiendo ${products[0]?.name} [#${products[0]?.id}], y no la tostadora [#999], ni [#abc].`;
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop para videojuegos", limit: 2 },
    });
    expect(response.status).toBe(200);
    const [first] = response.json.results as { id: number; name: string }[];
    expect(response.json.cited_ids).toEqual([first?.id]);
    expect(response.json.recommendation).toBe(
      `[FAKE - fake-1] Le recomiendo ${first?.name} [#${first?.id}], y no la tostadora, ni.`,
    );
  });

  test("a recommendation made only of citations of products not given says so instead", async () => {
    const h = await createHarness();
    await addProducts(h, MOUSE);
    h.generator.write = () => "[#41] [#42]";
    const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "ratón" } });
    expect(response.json.cited_ids).toEqual([]);
    expect(response.json.recommendation).toBe(`[FAKE - fake-1] ${NOTHING_GROUNDED}`);
  });

  test("an empty catalogue gives no results and a recommendation saying nothing matched", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "portátil" } });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ query: "portátil", recommendation: NOTHING_MATCHED, results: [], cited_ids: [] });
  });

  test("embedder failure, zero vector, generation failure and a database down are all 503", async () => {
    const h = await createHarness();
    await addProducts(h, LAPTOP);
    const search = () => h.call("POST", "/products/search", { token: h.token, json: { query: "laptop" } });

    h.embedder.mode = "fail";
    expect((await search()).status).toBe(503);
    h.embedder.mode = "zero";
    expect((await search()).status).toBe(503);
    h.embedder.mode = "ok";

    h.generator.fail = true;
    const generation = await search();
    expect(generation.status).toBe(503);
    expect(generation.json).toEqual({ detail: "Ningún proveedor pudo generar la recomendación" });
    h.generator.fail = false;

    h.products.down = true;
    expect((await search()).status).toBe(503);
  });
});

describe("POST /products/search: filters and streaming", () => {
  test("category restricts the results (a string or a list); a bad filter is 422", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE, CHAIR]) await create(h, product);
    const one = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "ergonómico", category: "muebles" },
    });
    expect(one.json.results.map((product: { name: string }) => product.name)).toEqual([CHAIR.name]);
    const two = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "ergonómico", category: ["muebles", "periféricos"] },
    });
    expect(two.json.results).toHaveLength(2);
    for (const category of [[], [1], "", "x".repeat(101)]) {
      const bad = await h.call("POST", "/products/search", { token: h.token, json: { query: "x", category } });
      expect(bad.status).toBe(422);
    }
  });

  test("Accept: text/event-stream answers results, the text in deltas and done, as server-sent events", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE]) await create(h, product);
    h.generator.write = ({ products }) => `Le recomiendo ${products[0]?.name} [#${products[0]?.id}] o [#42].`;
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop para videojuegos", limit: 2 },
      headers: { accept: "text/event-stream" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("text/event-stream");
    const events = parseEvents(response.text);
    expect(events.map((event) => event.event)).toEqual(["results", ...Array(events.length - 2).fill("delta"), "done"]);
    expect(events[0]?.data.results.map((product: { id: number }) => product.id)).toEqual([1, 2]);
    const text = events
      .filter((event) => event.event === "delta")
      .map((event) => event.data.text)
      .join("");
    expect(text).toBe(`Le recomiendo ${LAPTOP.name} [#1] o.`);
    expect(events.at(-1)?.data).toEqual({
      recommendation: `[FAKE - fake-1] ${text}`,
      cited_ids: [1],
      provider: "FAKE",
      model: "fake-1",
      position: 0,
    });
  });

  test("a streamed search that fails before any result is an ordinary JSON error", async () => {
    const h = await createHarness();
    h.embedder.mode = "fail";
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "x" },
      headers: { accept: "text/event-stream" },
    });
    expect(response.status).toBe(503);
    expect(response.json.detail).toContain("embeddings");
  });

  test("a streamed search whose writers all fail after the results ends with an error event", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    h.generator.fail = true;
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop" },
      headers: { accept: "text/event-stream" },
    });
    const events = parseEvents(response.text);
    expect(events.map((event) => event.event)).toEqual(["results", "error"]);
    expect(events[1]?.data).toEqual({ detail: "Ningún proveedor pudo generar la recomendación", status: 503 });
  });
});

/** The events of a text/event-stream body, comments (heartbeats) left out. */
// biome-ignore lint/suspicious/noExplicitAny: tests read whatever shape each event carries.
function parseEvents(text: string): { event: string; data: Record<string, any> }[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "" && !block.startsWith(":"))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? "null");
      return { event, data };
    });
}

describe("POST /products/search: hybrid mode", () => {
  test("mode hybrid adds fused_score and lets an exact word match rank first; semantic has no fused_score", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE, CHAIR]) await create(h, product);
    const semantic = await h.call("POST", "/products/search", { token: h.token, json: { query: "bluetooth" } });
    expect(semantic.json.results[0]).not.toHaveProperty("fused_score");
    const hybrid = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "bluetooth", mode: "hybrid", alpha: 0.2 },
    });
    expect(hybrid.status).toBe(200);
    const scores: number[] = hybrid.json.results.map((result: { fused_score: number }) => result.fused_score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(typeof scores[0]).toBe("number");
    expect(hybrid.json.results[0].name).toBe(MOUSE.name);
  });

  test("a bad mode or alpha, or alpha without hybrid, is 422", async () => {
    const h = await createHarness();
    for (const json of [
      { query: "x", mode: "keyword" },
      { query: "x", mode: "hybrid", alpha: 1.5 },
      { query: "x", mode: "hybrid", alpha: -0.1 },
      { query: "x", mode: "hybrid", alpha: "0.5" },
      { query: "x", alpha: 0.5 },
    ]) {
      const response = await h.call("POST", "/products/search", { token: h.token, json });
      expect({ json, status: response.status }).toEqual({ json, status: 422 });
      expect(typeof response.json.detail).toBe("string");
    }
  });
});
