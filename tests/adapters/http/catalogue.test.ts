/** The catalogue over HTTP: product lifecycle, bulk import, filtered and streamed search. */
import { describe, expect, test } from "bun:test";
import { createHarness, type Harness } from "./harness.ts";

const LAPTOP = { name: "Portátil gamer", description: "laptop potente para videojuegos", category: "informática" };
const MOUSE = { name: "Ratón inalámbrico", description: "mouse ergonómico bluetooth", category: "periféricos" };
const CHAIR = { name: "Silla de oficina", description: "asiento ergonómico con respaldo", category: "muebles" };

async function create(h: Harness, product: object) {
  const response = await h.call("POST", "/products/", { token: h.token, json: product });
  expect(response.status).toBe(201);
  return response.json as { id: number };
}

describe("product lifecycle", () => {
  test("every route takes the bearer token: 401 without it, before anything else", async () => {
    const h = await createHarness();
    for (const [method, path] of [
      ["GET", "/products"],
      ["GET", "/products?limit=abc"],
      ["GET", "/products/1"],
      ["PATCH", "/products/1"],
      ["PUT", "/products/1"],
      ["DELETE", "/products/1"],
      ["POST", "/products/bulk"],
    ] as const) {
      const response = await h.call(method, path, { json: { name: "x" } });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 401 });
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  test("GET /products/{id}: 200 with the product (and its sku when it has one), 404 otherwise", async () => {
    const h = await createHarness();
    const { id } = await create(h, { ...LAPTOP, sku: "LP-1" });
    const found = await h.call("GET", `/products/${id}`, { token: h.token });
    expect(found.status).toBe(200);
    expect(found.json).toEqual({ id, ...LAPTOP, sku: "LP-1" });
    for (const path of ["/products/999", "/products/abc", "/products/0", "/products/-1", "/products/1.5"]) {
      const missing = await h.call("GET", path, { token: h.token });
      expect(missing.status).toBe(404);
      expect(missing.json.detail).toContain("No existe ningún producto");
    }
  });

  test("GET /products lists with keyset pagination, order, category filters and the total", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE, CHAIR, { ...MOUSE, name: "Teclado" }]) await create(h, product);
    const first = await h.call("GET", "/products?limit=3", { token: h.token });
    expect(first.status).toBe(200);
    expect(first.json.total).toBe(4);
    expect(first.json.items.map((product: { id: number }) => product.id)).toEqual([1, 2, 3]);
    const next = await h.call("GET", `/products?limit=3&cursor=${first.json.next_cursor}`, { token: h.token });
    expect(next.json).toEqual({ items: [{ id: 4, ...MOUSE, name: "Teclado" }], total: 4, next_cursor: null });

    const newest = await h.call("GET", "/products?order=newest&limit=2", { token: h.token });
    expect(newest.json.items.map((product: { id: number }) => product.id)).toEqual([4, 3]);
    const filtered = await h.call("GET", "/products?category=periféricos&category=muebles", { token: h.token });
    expect(filtered.json.total).toBe(3);
    expect(filtered.json.items.map((product: { name: string }) => product.name)).toEqual([
      MOUSE.name,
      CHAIR.name,
      "Teclado",
    ]);
    const defaults = await h.call("GET", "/products", { token: h.token });
    expect(defaults.json.items).toHaveLength(4);

    for (const query of ["limit=0", "limit=101", "limit=x", "order=random", "cursor=zzz", "other=1"]) {
      const bad = await h.call("GET", `/products?${query}`, { token: h.token });
      expect({ query, status: bad.status }).toEqual({ query, status: 422 });
      expect(typeof bad.json.detail).toBe("string");
    }
  });

  test("PATCH changes some fields, re-embedding only when the name or description changes", async () => {
    const h = await createHarness();
    const { id } = await create(h, LAPTOP);
    h.embedder.calls.length = 0;
    const recategorised = await h.call("PATCH", `/products/${id}`, { token: h.token, json: { category: "gaming" } });
    expect(recategorised.status).toBe(200);
    expect(recategorised.json).toEqual({ id, ...LAPTOP, category: "gaming" });
    expect(h.embedder.calls).toEqual([]);

    const renamed = await h.call("PATCH", `/products/${id}`, {
      token: h.token,
      json: { name: "Portátil ultraligero", sku: "UL-1" },
    });
    expect(renamed.json).toEqual({ id, ...LAPTOP, category: "gaming", name: "Portátil ultraligero", sku: "UL-1" });
    expect(h.embedder.calls.map((call) => call.text)).toEqual([`Portátil ultraligero\n${LAPTOP.description}`]);

    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: "ultraligero" } });
    expect(search.json.results[0]).toMatchObject({ id, name: "Portátil ultraligero", sku: "UL-1" });
  });

  test("PATCH errors: empty body or unknown field 422, unknown id 404, another product's sku 409", async () => {
    const h = await createHarness();
    const { id } = await create(h, { ...LAPTOP, sku: "A" });
    const other = await create(h, MOUSE);
    expect((await h.call("PATCH", `/products/${id}`, { token: h.token, json: {} })).status).toBe(422);
    expect((await h.call("PATCH", `/products/${id}`, { token: h.token, json: { id: 5 } })).status).toBe(422);
    expect((await h.call("PATCH", `/products/${id}`, { token: h.token, json: { name: "" } })).status).toBe(422);
    expect((await h.call("PATCH", "/products/77", { token: h.token, json: { name: "x" } })).status).toBe(404);
    const taken = await h.call("PATCH", `/products/${other.id}`, { token: h.token, json: { sku: "A" } });
    expect(taken.status).toBe(409);
    expect(taken.json).toEqual({ detail: "Ya existe otro producto con el SKU 'A'" });
  });

  test("when the embedding cannot be computed, an update is 503 and the product is unchanged", async () => {
    const h = await createHarness();
    const { id } = await create(h, LAPTOP);
    h.embedder.mode = "fail";
    const response = await h.call("PUT", `/products/${id}`, { token: h.token, json: { ...MOUSE } });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("10");
    h.embedder.mode = "ok";
    expect((await h.call("GET", `/products/${id}`, { token: h.token })).json).toEqual({ id, ...LAPTOP });
  });

  test("PUT replaces the three fields (all required) and keeps the sku unless it is sent", async () => {
    const h = await createHarness();
    const { id } = await create(h, { ...LAPTOP, sku: "K" });
    const partial = await h.call("PUT", `/products/${id}`, { token: h.token, json: { name: "x" } });
    expect(partial.status).toBe(422);
    const replaced = await h.call("PUT", `/products/${id}`, { token: h.token, json: CHAIR });
    expect(replaced.json).toEqual({ id, ...CHAIR, sku: "K" });
    const cleared = await h.call("PUT", `/products/${id}`, { token: h.token, json: { ...CHAIR, sku: null } });
    expect(cleared.json).toEqual({ id, ...CHAIR });
  });

  test("DELETE answers 204 with no body, then 404; a deleted product is never found again", async () => {
    const h = await createHarness();
    const { id } = await create(h, LAPTOP);
    await create(h, MOUSE);
    const deleted = await h.call("DELETE", `/products/${id}`, { token: h.token });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect((await h.call("DELETE", `/products/${id}`, { token: h.token })).status).toBe(404);
    expect((await h.call("GET", `/products/${id}`, { token: h.token })).status).toBe(404);
    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: LAPTOP.name } });
    expect(search.json.results.map((product: { id: number }) => product.id)).not.toContain(id);
  });

  test("a create with a sku another product has is 409 and stores nothing", async () => {
    const h = await createHarness();
    await create(h, { ...LAPTOP, sku: "X-1" });
    const response = await h.call("POST", "/products/", { token: h.token, json: { ...MOUSE, sku: "X-1" } });
    expect(response.status).toBe(409);
    expect(h.products.products).toHaveLength(1);
  });
});

describe("POST /products/bulk", () => {
  const ndjson = { "content-type": "application/x-ndjson" };

  test("a JSON array: valid items stored, invalid ones reported by position, counts", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, sku: "L1" }, { name: "sin más" }, MOUSE],
    });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      items: [
        { index: 0, status: "created", id: 1, sku: "L1" },
        { index: 1, status: "failed", detail: "Campo 'description': es obligatorio" },
        { index: 2, status: "created", id: 2 },
      ],
      counts: { created: 2, updated: 0, unchanged: 0, failed: 1 },
    });
  });

  test("JSON Lines: a line that is not JSON fails alone; a second identical import changes nothing", async () => {
    const h = await createHarness();
    const body = [JSON.stringify({ ...LAPTOP, sku: "L1" }), "{roto", "", JSON.stringify({ ...CHAIR, sku: "C1" })].join(
      "\n",
    );
    const first = await h.call("POST", "/products/bulk", { token: h.token, body, headers: ndjson });
    expect(first.json.items.map((item: { status: string }) => item.status)).toEqual(["created", "failed", "created"]);
    expect(first.json.items[1]).toEqual({ index: 1, status: "failed", detail: "El elemento no es un JSON válido" });
    const embedded = h.embedder.calls.length;
    const second = await h.call("POST", "/products/bulk", { token: h.token, body, headers: ndjson });
    expect(second.json.counts).toEqual({ created: 0, updated: 0, unchanged: 2, failed: 1 });
    expect(h.embedder.calls.length).toBe(embedded);
  });

  test("limits and shapes: too many items or bytes 413, wrong type 415, a broken array 400, empty 422", async () => {
    const h = await createHarness({ settings: { bulk: { maxBytes: 2_000, maxItems: 3 } } });
    const tooMany = await h.call("POST", "/products/bulk", { token: h.token, json: [LAPTOP, LAPTOP, LAPTOP, LAPTOP] });
    expect(tooMany.status).toBe(413);
    const tooBig = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, description: "x".repeat(3_000) }],
    });
    expect(tooBig.status).toBe(413);
    const wrongType = await h.call("POST", "/products/bulk", { token: h.token, form: { a: "b" } });
    expect(wrongType.status).toBe(415);
    for (const body of ['{"name": "x"}', "[1, 2", "[1,,2]", "[1] x"]) {
      const broken = await h.call("POST", "/products/bulk", {
        token: h.token,
        body,
        headers: { "content-type": "application/json" },
      });
      expect({ body, status: broken.status }).toEqual({ body, status: 400 });
    }
    const empty = await h.call("POST", "/products/bulk", { token: h.token, json: [] });
    expect(empty.status).toBe(422);
    expect(h.products.products).toEqual([]);
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

describe("GET /products/categories", () => {
  test("lists every category with its number of products, most first; it takes the token", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MOUSE, CHAIR, { ...MOUSE, name: "Teclado" }]) await create(h, product);
    const response = await h.call("GET", "/products/categories", { token: h.token });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      categories: [
        { name: "periféricos", products: 2 },
        { name: "informática", products: 1 },
        { name: "muebles", products: 1 },
      ],
    });
    expect((await h.call("GET", "/products/categories")).status).toBe(401);
  });
});
