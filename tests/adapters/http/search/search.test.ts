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
    // The contract's query, recommendation and results; cited_ids, and the search_id its clicks are reported with.
    expect(Object.keys(response.json).sort()).toEqual(["cited_ids", "query", "recommendation", "results", "search_id"]);
    expect(response.json.search_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
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
    expect(response.json).toEqual({
      search_id: expect.any(String),
      query: "portátil",
      recommendation: NOTHING_MATCHED,
      results: [],
      cited_ids: [],
    });
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
    expect(events[0]?.data.search_id).toEqual(expect.any(String));
    expect(events.at(-1)?.data).toEqual({
      search_id: events[0]?.data.search_id,
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

  test("a streamed search whose writers all fail after the results ends with a failure event (not `error`)", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    h.generator.fail = true;
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop" },
      headers: { accept: "text/event-stream" },
    });
    const events = parseEvents(response.text);
    expect(events.map((event) => event.event)).toEqual(["results", "failure"]);
    expect(events[1]?.data).toEqual({ detail: "Ningún proveedor pudo generar la recomendación", status: 503 });
    const requestId = response.headers.get("x-request-id");
    expect(events.map((event) => event.id)).toEqual([`${requestId}:1`, `${requestId}:end`]);
  });
});

/** The events of a text/event-stream body, comments (heartbeats) and the `retry:` block left out. */
// biome-ignore lint/suspicious/noExplicitAny: tests read whatever shape each event carries.
function parseEvents(text: string): { event: string; id?: string; data: Record<string, any> }[] {
  return text
    .split("\n\n")
    .filter((block) => /^data: /m.test(block))
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? "null");
      return { event, id, data };
    });
}

describe("the search's event stream works with standard clients", () => {
  const streamed = { accept: "text/event-stream" };

  test("the stream begins with retry:, and every event has an id: <request id>:1, :2, ... and :end for done", async () => {
    const h = await createHarness({ settings: { eventStreamReconnectMs: 1234 } });
    await create(h, LAPTOP);
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "laptop" },
      headers: { ...streamed, "x-request-id": "busqueda-7" },
    });
    expect(response.text).toStartWith("retry: 1234\n\n");
    const events = parseEvents(response.text);
    expect(events.length).toBeGreaterThan(2);
    expect(events.map((event) => event.id)).toEqual([
      ...events.slice(0, -1).map((_, i) => `busqueda-7:${i + 1}`),
      "busqueda-7:end",
    ]);
    expect(events.at(-1)?.event).toBe("done");
  });

  test("a reconnect carrying the id of a stream's last event gets 204: no search runs and none is counted", async () => {
    const h = await createHarness({ rateLimits: { search: { limit: 2, windowMs: 60_000 } } });
    await create(h, LAPTOP);
    // Each search embeds its query once.
    const searches = () => h.embedder.calls.filter((call) => call.purpose === "query").length;
    const first = await h.call("GET", "/products/search?query=laptop", { token: h.token, headers: streamed });
    expect(first.status).toBe(200);
    const last = parseEvents(first.text).at(-1)?.id as string;
    for (const method of ["GET", "POST"]) {
      const reconnect = await h.call(method, "/products/search?query=laptop", {
        token: h.token,
        headers: { ...streamed, "last-event-id": last },
        ...(method === "POST" ? { json: { query: "laptop" } } : {}),
      });
      expect({ method, status: reconnect.status, text: reconnect.text }).toEqual({ method, status: 204, text: "" });
    }
    expect(searches()).toBe(1);
    // The budget of 2 still has its second search.
    expect((await h.call("GET", "/products/search?query=laptop", { token: h.token })).status).toBe(200);
    expect((await h.call("GET", "/products/search?query=laptop", { token: h.token })).status).toBe(429);
  });

  test("a reconnect after a stream was cut before its end runs the search again, from results", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    const again = await h.call("GET", "/products/search?query=laptop", {
      token: h.token,
      headers: { ...streamed, "last-event-id": "otra-busqueda:2" },
    });
    expect(again.status).toBe(200);
    expect(parseEvents(again.text).map((event) => event.event)[0]).toBe("results");
  });

  test("a Last-Event-ID without Accept: text/event-stream is ignored: the JSON answer", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    const response = await h.call("GET", "/products/search?query=laptop", {
      token: h.token,
      headers: { "last-event-id": "x:end" },
    });
    expect(response.status).toBe(200);
    expect(response.json.results).toHaveLength(1);
  });
});

describe("GET /products/search", () => {
  test("takes the body's fields as query parameters and answers the same JSON as POST", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE, CHAIR]) await create(h, product);
    const body = { query: "ergonómico", limit: 2, category: ["muebles", "periféricos"], mode: "hybrid", alpha: 0.5 };
    const posted = await h.call("POST", "/products/search", { token: h.token, json: body });
    const got = await h.call(
      "GET",
      "/products/search?query=ergon%C3%B3mico&limit=2&category=muebles&category=perif%C3%A9ricos&mode=hybrid&alpha=0.5",
      { token: h.token },
    );
    expect(got.status).toBe(200);
    // The same answer, but for the search's own id.
    expect({ ...got.json, search_id: "" }).toEqual({ ...posted.json, search_id: "" });
    expect(got.json.search_id).not.toBe(posted.json.search_id);
    const one = await h.call("GET", "/products/search?query=silla&category=muebles", { token: h.token });
    expect(one.json.results.map((product: { name: string }) => product.name)).toEqual([CHAIR.name]);
  });

  test("with Accept: text/event-stream it streams, as POST does", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    const response = await h.call("GET", "/products/search?query=laptop&limit=1", {
      token: h.token,
      headers: { accept: "text/event-stream" },
    });
    expect(response.headers.get("content-type")).toStartWith("text/event-stream");
    expect(response.headers.get("x-request-id")).toBeTruthy();
    const events = parseEvents(response.text);
    expect(events[0]?.event).toBe("results");
    expect(events.at(-1)?.event).toBe("done");
  });

  test("bad parameters are 422 naming the field; no token is 401 when the search needs one", async () => {
    const h = await createHarness();
    const cases: [string, string][] = [
      ["limit=3", "Campo 'query': es obligatorio"],
      ["query=%20", "El campo 'query' no puede estar vacío"],
      ["query=x&limit=0", "Campo 'limit': debe ser un entero entre 1 y 50"],
      ["query=x&limit=2.5", "Campo 'limit': debe ser un entero entre 1 y 50"],
      ["query=x&limit=muchos", "Campo 'limit': debe ser un entero entre 1 y 50"],
      [`query=x&category=${"x".repeat(101)}`, "El campo 'category' admite como máximo 100 caracteres"],
      ["query=x&mode=keyword", "Campo 'mode': debe ser uno de: semantic, hybrid, lexical"],
      ["query=x&mode=hybrid&alpha=2", "Campo 'alpha': debe ser un número entre 0 y 1"],
      ["query=x&alpha=0.5", 'El campo \'alpha\' solo se usa con "mode": "hybrid"'],
      ["query=x&top_k=3", "Campo 'top_k': no está permitido"],
    ];
    for (const [query, detail] of cases) {
      const response = await h.call("GET", `/products/search?${query}`, { token: h.token });
      expect({ query, status: response.status, json: response.json }).toEqual({ query, status: 422, json: { detail } });
    }
    expect((await h.call("GET", "/products/search?query=x")).status).toBe(401);
  });

  test("no log line holds what the query string carries (a `key` parameter will carry credentials)", async () => {
    const h = await createHarness();
    await create(h, LAPTOP);
    const secret = "clave-que-no-debe-salir-en-los-registros";
    for (const query of [`query=laptop&key=${secret}`, `key=${secret}`]) {
      await h.call("GET", `/products/search?${query}`, { token: h.token, headers: { accept: "text/event-stream" } });
    }
    expect(h.logs.length).toBeGreaterThan(0);
    expect(JSON.stringify(h.logs)).not.toContain(secret);
  });
});

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
