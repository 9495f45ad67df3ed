/**
 * Catalogues over HTTP: /catalogues, and every product route under /catalogues/{catalogue}/products,
 * which answers as the contract's /products… (the default catalogue) does, within its catalogue
 * alone. A credential of one catalogue finds the others as if they did not exist.
 */
import { describe, expect, test } from "bun:test";
import { PERMISSION_EXTENSION } from "../../../../src/adapters/http/auth/auth-macro.ts";
import { createHarness, type Harness } from "../harness.ts";

const CAFETERA = { name: "Cafetera italiana", description: "Acero, seis tazas", category: "Cocina", sku: "C-1" };
const TETERA = { name: "Tetera de hierro", description: "Japonesa", category: "Cocina", sku: "T-1" };

/** Two shops: `norte` with a cafetera, `sur` with a tetera of the same sku; the tokens of an admin. */
async function twoShops(options: Parameters<typeof createHarness>[0] = {}) {
  const h = await createHarness(options);
  for (const name of ["norte", "sur"]) {
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name } })).status).toBe(201);
  }
  const norte = (await h.call("POST", "/catalogues/norte/products/", { token: h.token, json: CAFETERA })).json;
  const sur = (await h.call("POST", "/catalogues/sur/products/", { token: h.token, json: { ...TETERA, sku: "C-1" } }))
    .json;
  return { h, norte: norte as { id: number }, sur: sur as { id: number } };
}

/** Every route under /catalogues/{catalogue}/products, read from the app itself. */
function catalogueRoutes(h: Harness) {
  return h.app.routes
    .filter((route) => route.path.startsWith("/catalogues/:catalogue/products"))
    .map((route) => ({
      method: route.method,
      pattern: route.path,
      permission: (route.hooks as { detail?: Record<string, unknown> }).detail?.[PERMISSION_EXTENSION],
    }));
}

describe("POST, GET and DELETE /catalogues", () => {
  test("a catalogue is made empty, listed with its product count, and removed with its products", async () => {
    const h = await createHarness();
    const made = await h.call("POST", "/catalogues", { token: h.token, json: { name: "tienda-norte" } });
    expect(made.status).toBe(201);
    expect(made.json).toEqual({
      name: "tienda-norte",
      products: 0,
      created_at: expect.any(String),
      embedded_attributes: [],
    });
    await h.call("POST", "/catalogues/tienda-norte/products/", { token: h.token, json: CAFETERA });
    await h.call("POST", "/products/", { token: h.token, json: TETERA });
    const listed = await h.call("GET", "/catalogues", { token: h.token });
    expect(
      listed.json.catalogues.map(({ name, products }: { name: string; products: number }) => [name, products]),
    ).toEqual([
      ["default", 1],
      ["tienda-norte", 1],
    ]);
    expect((await h.call("DELETE", "/catalogues/tienda-norte", { token: h.token })).status).toBe(204);
    expect((await h.call("GET", "/catalogues/tienda-norte/products", { token: h.token })).status).toBe(404);
    expect(h.products.products.map((product) => product.name)).toEqual([TETERA.name]);
  });

  test("a name breaking the rule is 422; a taken one 409; default cannot go (409); a missing one is 404", async () => {
    const h = await createHarness();
    for (const name of ["Norte", "-x", "a b", "a".repeat(64), ""]) {
      const response = await h.call("POST", "/catalogues", { token: h.token, json: { name } });
      expect(response.status).toBe(422);
      expect(response.json.detail).toContain("'name'");
    }
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name: "x", products: 3 } })).status).toBe(
      422,
    );
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name: "default" } })).status).toBe(409);
    const protectedOne = await h.call("DELETE", "/catalogues/default", { token: h.token });
    expect(protectedOne.status).toBe(409);
    expect(protectedOne.json.detail).toContain("no se puede borrar");
    expect((await h.call("DELETE", "/catalogues/nunca", { token: h.token })).status).toBe(404);
  });

  test("they take catalogues.manage; a key limited to some catalogues lists, removes and makes only those", async () => {
    const { h } = await twoShops();
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await h.call("GET", "/catalogues", { token: viewer })).status).toBe(403);
    const { key } = await h.keyOf({ actions: ["catalogues.manage"], catalogues: ["norte"] });
    const headers = { "x-api-key": key };
    const listed = await h.call("GET", "/catalogues", { headers });
    expect(listed.json.catalogues.map((catalogue: { name: string }) => catalogue.name)).toEqual(["norte"]);
    const other = await h.call("DELETE", "/catalogues/sur", { headers });
    expect(other.status).toBe(404);
    expect((await h.call("POST", "/catalogues", { headers, json: { name: "este" } })).status).toBe(403);
    expect((await h.call("DELETE", "/catalogues/norte", { headers })).status).toBe(204);
    expect((await h.call("POST", "/catalogues", { headers, json: { name: "norte" } })).status).toBe(201);
  });
});

describe("a catalogue's products", () => {
  test("every route answers there as under /products, within the catalogue: same sku, its own list and search", async () => {
    const { h, norte, sur } = await twoShops();
    expect(norte.id).not.toBe(sur.id);
    const list = await h.call("GET", "/catalogues/norte/products", { token: h.token });
    expect(list.json).toEqual({ items: [{ id: norte.id, ...CAFETERA }], total: 1, next_cursor: null });
    expect((await h.call("GET", `/catalogues/sur/products/${sur.id}`, { token: h.token })).json.sku).toBe("C-1");
    expect((await h.call("GET", "/catalogues/norte/products/categories", { token: h.token })).json).toEqual({
      categories: [{ name: "Cocina", products: 1 }],
    });
    const patched = await h.call("PATCH", `/catalogues/norte/products/${norte.id}`, {
      token: h.token,
      json: { name: "Cafetera moka" },
    });
    expect(patched.json.name).toBe("Cafetera moka");
    // A sku is unique within its catalogue.
    const twice = await h.call("POST", "/catalogues/norte/products/", { token: h.token, json: CAFETERA });
    expect(twice.status).toBe(409);
    // The default catalogue is /products and /catalogues/default/products alike.
    const made = await h.call("POST", "/catalogues/default/products/", { token: h.token, json: TETERA });
    expect((await h.call("GET", `/products/${made.json.id}`, { token: h.token })).json).toEqual(made.json);
    expect((await h.call("DELETE", `/catalogues/norte/products/${norte.id}`, { token: h.token })).status).toBe(204);
  });

  test("another catalogue's product is 404 under this one, for reads, changes and deletion, and stays as it was", async () => {
    const { h, sur } = await twoShops();
    for (const [method, json] of [
      ["GET", undefined],
      ["PATCH", { name: "Robada" }],
      ["PUT", { name: "Robada", description: "", category: "x" }],
      ["DELETE", undefined],
    ] as const) {
      const response = await h.call(method, `/catalogues/norte/products/${sur.id}`, { token: h.token, json });
      expect(response.status).toBe(404);
      expect(response.json.detail).toContain("No existe ningún producto");
      expect((await h.call(method, `/products/${sur.id}`, { token: h.token, json })).status).toBe(404);
    }
    expect((await h.call("GET", `/catalogues/sur/products/${sur.id}`, { token: h.token })).json).toMatchObject({
      name: TETERA.name,
      sku: "C-1",
    });
  });

  test("no search returns another catalogue's product: POST, GET, streamed, semantic and hybrid", async () => {
    const { h, norte, sur } = await twoShops();
    // The query is the sur product's own text: its nearest product by far, were it visible.
    const query = `${TETERA.name} ${TETERA.description}`;
    const searches = [
      { method: "POST", path: "/catalogues/norte/products/search", json: { query, limit: 50 } },
      { method: "POST", path: "/catalogues/norte/products/search", json: { query, limit: 50, mode: "hybrid" } },
      { method: "GET", path: `/catalogues/norte/products/search?query=${encodeURIComponent(query)}&limit=50` },
    ];
    for (const { method, path, json } of searches) {
      for (const accept of ["application/json", "text/event-stream"]) {
        const response = await h.call(method, path, { token: h.token, json, headers: { accept } });
        expect(response.status).toBe(200);
        // The answer echoes the query; never the sur product itself.
        expect(response.text).toContain(`"name":"${CAFETERA.name}"`);
        expect(response.text).not.toContain(`"name":"${TETERA.name}"`);
        expect(response.text).not.toContain(`"id":${sur.id}`);
      }
    }
    const fromSur = await h.call("POST", "/catalogues/sur/products/search", { token: h.token, json: { query } });
    expect(fromSur.json.results.map((result: { id: number }) => result.id)).toEqual([sur.id]);
    expect(fromSur.text).not.toContain(`"id":${norte.id}`);
  });

  test("a list cursor made from another catalogue's ids shows nothing of it", async () => {
    const { h, norte, sur } = await twoShops();
    for (const order of ["id", "newest"]) {
      for (const id of [sur.id - 1, sur.id, sur.id + 1, norte.id]) {
        const cursor = btoa(`${order}:${Math.max(1, id)}`).replace(/=+$/, "");
        const page = await h.call("GET", `/catalogues/norte/products?order=${order}&cursor=${cursor}`, {
          token: h.token,
        });
        expect(page.status).toBe(200);
        expect(page.text).not.toContain(TETERA.name);
        expect(page.json.total).toBe(1);
      }
    }
  });

  test("a bulk upsert by a sku another catalogue has creates the product here and leaves that one alone", async () => {
    const { h, sur } = await twoShops();
    const bulk = await h.call("POST", "/catalogues/norte/products/bulk", {
      token: h.token,
      json: [
        { ...TETERA, sku: "C-1", name: "Cafetera nueva" },
        { ...TETERA, sku: "T-1" },
      ],
    });
    expect(bulk.status).toBe(200);
    // C-1 is norte's own cafetera (updated); T-1 exists nowhere in norte (created), whatever sur holds.
    expect(bulk.json.items.map((item: { status: string }) => item.status)).toEqual(["updated", "created"]);
    expect(bulk.json.items.map((item: { id: number }) => item.id)).not.toContain(sur.id);
    expect((await h.call("GET", `/catalogues/sur/products/${sur.id}`, { token: h.token })).json).toMatchObject({
      name: TETERA.name,
      sku: "C-1",
    });
    const sures = await h.call("GET", "/catalogues/sur/products", { token: h.token });
    expect(sures.json.total).toBe(1);
  });

  test("a bulk that becomes a job writes into its catalogue; the job stays its caller's", async () => {
    const { h } = await twoShops();
    const accepted = await h.call("POST", "/catalogues/sur/products/bulk", {
      token: h.token,
      headers: { prefer: "respond-async" },
      json: [{ ...CAFETERA, sku: "S-9" }],
    });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("location")).toBe(`/jobs/${accepted.json.id}`);
    const worker = new AbortController();
    const running = h.importJobs.run(worker.signal);
    const job = await h.endedJob(`/jobs/${accepted.json.id}`);
    worker.abort();
    await running;
    expect(job.status).toBe("succeeded");
    const sures = await h.call("GET", "/catalogues/sur/products", { token: h.token });
    expect(sures.json.items.map((product: { sku?: string }) => product.sku).sort()).toEqual(["C-1", "S-9"]);
    expect((await h.call("GET", "/catalogues/norte/products", { token: h.token })).json.total).toBe(1);
    const other = await h.tokenOf("otra");
    expect((await h.call("GET", `/jobs/${accepted.json.id}`, { token: other })).status).toBe(404);
  });

  test("a key of one catalogue follows its own import's job; another caller's job is 404 to it", async () => {
    const { h } = await twoShops();
    const { key } = await h.keyOf({ actions: ["products.write"], catalogues: ["sur"] });
    const headers = { "x-api-key": key };
    const accepted = await h.call("POST", "/catalogues/sur/products/bulk", {
      headers: { ...headers, prefer: "respond-async" },
      json: [{ ...TETERA, sku: "S-2" }],
    });
    expect(accepted.status).toBe(202);
    const worker = new AbortController();
    const running = h.importJobs.run(worker.signal);
    const job = await h.endedJob(`/jobs/${accepted.json.id}`, { headers });
    // The admin's job (in the default catalogue) is not the key's.
    const theirs = await h.call("POST", "/products/bulk", {
      token: h.token,
      headers: { prefer: "respond-async" },
      json: [{ ...CAFETERA, sku: "D-1" }],
    });
    worker.abort();
    await running;
    expect(job).toMatchObject({ status: "succeeded", counts: { created: 1 } });
    const refused = await h.call("GET", `/jobs/${theirs.json.id}`, { headers });
    expect(refused.status).toBe(404);
    expect(refused.json.detail).not.toMatch(/catálogo/);
  });

  test("an Idempotency-Key used in one catalogue and sent to another is a key reused (422), never the other's answer", async () => {
    const { h } = await twoShops();
    const headers = { "idempotency-key": "alta-1" };
    const first = await h.call("POST", "/catalogues/norte/products/", { token: h.token, headers, json: TETERA });
    expect(first.status).toBe(201);
    const again = await h.call("POST", "/catalogues/norte/products/", { token: h.token, headers, json: TETERA });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const elsewhere = await h.call("POST", "/catalogues/sur/products/", { token: h.token, headers, json: TETERA });
    expect(elsewhere.status).toBe(422);
  });
});

describe("a credential of one catalogue", () => {
  test("gets 404 on every product route of another catalogue, as for one that does not exist", async () => {
    const { h, sur } = await twoShops();
    const { key } = await h.keyOf({ actions: ["*"], catalogues: ["norte"] });
    const routes = catalogueRoutes(h);
    expect(routes.length).toBeGreaterThanOrEqual(10);
    for (const { method, pattern, permission } of routes) {
      expect(permission).toBeString();
      for (const catalogue of ["sur", "no-existe"]) {
        const path = pattern.replace(":catalogue", catalogue).replace(":id", String(sur.id));
        const json = ["POST", "PUT", "PATCH"].includes(method)
          ? path.endsWith("/search")
            ? { query: "tetera" }
            : path.endsWith("/bulk")
              ? [TETERA]
              : { ...TETERA }
          : undefined;
        const response = await h.call(method, path, { headers: { "x-api-key": key }, json });
        expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
        expect(response.json).toEqual({ detail: `No existe el catálogo '${catalogue}'` });
      }
    }
    // Nothing of sur changed; in its own catalogue the key works.
    expect(h.products.products.filter((product) => product.id === sur.id)).toHaveLength(1);
    expect((await h.call("GET", "/catalogues/norte/products", { headers: { "x-api-key": key } })).status).toBe(200);
    expect((await h.call("GET", "/products", { headers: { "x-api-key": key } })).status).toBe(404);
  });

  test("revoked, it is 401 in its own catalogue too", async () => {
    const { h } = await twoShops();
    const { key, id } = await h.keyOf({ actions: ["search"], catalogues: ["norte"] });
    const search = () =>
      h.call("POST", "/catalogues/norte/products/search", { headers: { "x-api-key": key }, json: { query: "café" } });
    expect((await search()).status).toBe(200);
    expect((await h.call("DELETE", `/keys/${id}`, { token: h.token })).status).toBe(204);
    expect((await search()).status).toBe(401);
  });
});

describe("budgets and logs carry the catalogue", () => {
  test("a client's search budget counts per catalogue", async () => {
    const { h } = await twoShops({ rateLimits: { search: { limit: 1, windowMs: 60_000 } } });
    const search = (catalogue: string) =>
      h.call("POST", `/catalogues/${catalogue}/products/search`, { token: h.token, json: { query: "café" } });
    expect((await search("norte")).status).toBe(200);
    expect((await search("sur")).status).toBe(200);
    expect((await search("norte")).status).toBe(429);
    expect((await h.call("POST", "/products/search", { token: h.token, json: { query: "café" } })).status).toBe(200);
  });

  test("every log line of a request inside a catalogue names it", async () => {
    const { h } = await twoShops();
    h.logs.length = 0;
    await h.call("POST", "/catalogues/sur/products/search", { token: h.token, json: { query: "té" } });
    const lines = h.logs.filter((line) => line.event === "search" || line.event === "request");
    expect(lines.map((line) => [line.event, line.catalogue])).toEqual([
      ["search", "sur"],
      ["request", "sur"],
    ]);
  });
});

describe("PATCH /catalogues/{catalogue}: the attributes it embeds", () => {
  const ACME = { ...CAFETERA, sku: "Z-1", name: "Zapatilla", description: "Ligera", category: "Deporte" };
  const shoes = [
    { ...ACME, sku: "Z-1", attributes: { brand: "Acme", price: 40 } },
    { ...ACME, sku: "Z-2", attributes: { brand: "Zeta", price: 50 } },
  ];

  async function shop() {
    const h = await createHarness();
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name: "tienda" } })).status).toBe(201);
    const bulk = await h.call("POST", "/catalogues/tienda/products/bulk", { token: h.token, json: shoes });
    expect(bulk.json.counts).toMatchObject({ created: 2 });
    return h;
  }

  const searchFor = async (h: Harness, query: string) =>
    (
      await h.call("POST", "/catalogues/tienda/products/search", {
        token: h.token,
        json: { query, limit: 2, mode: "semantic" },
      })
    ).json.results as { sku: string; score: number }[];

  test("the setting makes the embedded attributes count in the search; the answer says how many products are stale", async () => {
    const h = await shop();
    // Two products of the same text: their brands are not embedded, so a search for one scores both alike.
    const before = await searchFor(h, "zapatilla zeta");
    expect(before[0]?.score).toBeCloseTo(before[1]?.score as number, 6);

    const patched = await h.call("PATCH", "/catalogues/tienda", {
      token: h.token,
      json: { embedded_attributes: ["brand"] },
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toEqual({
      name: "tienda",
      products: 2,
      created_at: expect.any(String),
      embedded_attributes: ["brand"],
      stale_embeddings: 2,
    });
    const listed = await h.call("GET", "/catalogues", { token: h.token });
    expect(listed.json.catalogues.find((c: { name: string }) => c.name === "tienda").embedded_attributes).toEqual([
      "brand",
    ]);

    // Re-importing the same products embeds the stale ones again, now with their brands.
    const again = await h.call("POST", "/catalogues/tienda/products/bulk", { token: h.token, json: shoes });
    expect(again.json.counts).toMatchObject({ updated: 2, unchanged: 0 });
    const after = await searchFor(h, "zapatilla zeta");
    expect(after.map((result) => result.sku)).toEqual(["Z-2", "Z-1"]);
    expect(after[0]?.score).toBeGreaterThan((after[1]?.score as number) + 0.1);
    expect((await searchFor(h, "zapatilla acme"))[0]?.sku).toBe("Z-1");
    const settled = await h.call("PATCH", "/catalogues/tienda", {
      token: h.token,
      json: { embedded_attributes: ["brand"] },
    });
    expect(settled.json.stale_embeddings).toBe(0);
  });

  test("a change of only a non-embedded attribute embeds nothing; of an embedded one, the product again", async () => {
    const h = await shop();
    await h.call("PATCH", "/catalogues/tienda", { token: h.token, json: { embedded_attributes: ["brand"] } });
    await h.call("POST", "/catalogues/tienda/products/bulk", { token: h.token, json: shoes });
    const [acme] = (await h.call("GET", "/catalogues/tienda/products", { token: h.token })).json.items;
    const embedded = h.embedder.calls.length;
    const path = `/catalogues/tienda/products/${acme.id}`;
    expect(
      (await h.call("PATCH", path, { token: h.token, json: { attributes: { brand: "Acme", price: 9 } } })).status,
    ).toBe(200);
    expect(h.embedder.calls.length).toBe(embedded);
    await h.call("PATCH", path, { token: h.token, json: { attributes: { brand: "Zeta", price: 9 } } });
    expect(h.embedder.calls.slice(embedded).map((call) => call.text)).toEqual([
      "Zapatilla. Deporte. Ligera. brand: Zeta",
    ]);
  });

  test("bad settings are 422 naming what is wrong, and nothing changes", async () => {
    const h = await shop();
    await h.call("PATCH", "/catalogues/tienda", { token: h.token, json: { embedded_attributes: ["brand"] } });
    const refusals: [unknown, string][] = [
      [{ embedded_attributes: ["Marca"] }, "'Marca'"],
      [{ embedded_attributes: ["brand", "brand"] }, "'brand' más de una vez"],
      [{ embedded_attributes: Array.from({ length: 9 }, (_, i) => `a${i}`) }, "el máximo es 8"],
      [{ embedded_attributes: "brand" }, "'embedded_attributes'"],
      [{ embedded_attributes: [3] }, "'embedded_attributes'"],
      [{ embedded_attributes: ["brand"], name: "otra" }, "'name'"],
      [{}, "'embedded_attributes'"],
    ];
    for (const [json, detail] of refusals) {
      const response = await h.call("PATCH", "/catalogues/tienda", { token: h.token, json });
      expect(response.status).toBe(422);
      expect(response.json.detail).toContain(detail);
    }
    const listed = await h.call("GET", "/catalogues", { token: h.token });
    expect(listed.json.catalogues.find((c: { name: string }) => c.name === "tienda").embedded_attributes).toEqual([
      "brand",
    ]);
  });

  test("it takes catalogues.manage (403 without it); a catalogue the credential cannot see, or none, is 404", async () => {
    const h = await shop();
    const json = { embedded_attributes: ["brand"] };
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await h.call("PATCH", "/catalogues/tienda", { token: viewer, json })).status).toBe(403);
    const writer = await h.keyOf({ actions: ["products.write", "products.read"], catalogues: ["tienda"] });
    const refused = await h.call("PATCH", "/catalogues/tienda", { headers: { "x-api-key": writer.key }, json });
    expect(refused.status).toBe(403);
    expect(refused.json.detail).toContain("catalogues.manage");
    const elsewhere = await h.keyOf({ actions: ["catalogues.manage"], catalogues: ["otra"] });
    expect(
      (await h.call("PATCH", "/catalogues/tienda", { headers: { "x-api-key": elsewhere.key }, json })).status,
    ).toBe(404);
    expect((await h.call("PATCH", "/catalogues/nunca", { token: h.token, json })).status).toBe(404);
    const listed = await h.call("GET", "/catalogues", { token: h.token });
    expect(listed.json.catalogues.find((c: { name: string }) => c.name === "tienda").embedded_attributes).toEqual([]);
    const manager = await h.keyOf({ actions: ["catalogues.manage"], catalogues: ["tienda"] });
    expect((await h.call("PATCH", "/catalogues/tienda", { headers: { "x-api-key": manager.key }, json })).status).toBe(
      200,
    );
  });
});
