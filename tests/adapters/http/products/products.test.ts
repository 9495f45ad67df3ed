/** The catalogue over HTTP: creating a product, its lifecycle and the categories. */
import { describe, expect, test } from "bun:test";
import { PRODUCT_FIELD_MAX_LENGTH } from "../../../../src/domain/product.ts";
import { CHAIR, create, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

describe("POST /products/", () => {
  test("creates a product: 201 with id, name, description, category and no embedding", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(201);
    expect(response.json).toEqual({ id: 1, ...LAPTOP });
    expect(h.products.products).toEqual([{ id: 1, ...LAPTOP }]);
    expect(h.embedder.calls).toEqual([
      { text: `${LAPTOP.name}. ${LAPTOP.category}. ${LAPTOP.description}`, purpose: "document" },
    ]);
  });

  test("answers at /products without the trailing slash too", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products", { token: h.token, json: MOUSE });
    expect(response.status).toBe(201);
    expect(response.json.name).toBe(MOUSE.name);
  });

  test("trims every field", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/", {
      token: h.token,
      json: {
        name: "  Portátil gamer ",
        description: "\tlaptop potente para videojuegos\n",
        category: " informática ",
      },
    });
    expect(response.status).toBe(201);
    expect(response.json).toEqual({ id: 1, ...LAPTOP });
  });

  test("any field besides name, description and category is 422 naming it, and nothing is stored", async () => {
    const h = await createHarness();
    for (const extra of [{ id: 7 }, { embedding: [0.1, 0.2] }, { price: 10 }]) {
      const response = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, ...extra } });
      expect(response.status).toBe(422);
      expect(response.json).toEqual({ detail: `Campo '${Object.keys(extra)[0]}': no está permitido` });
    }
    expect(h.products.products).toEqual([]);
  });

  test("missing fields and non-string values are 422 naming the field", async () => {
    const h = await createHarness();
    const { category: _, ...noCategory } = LAPTOP;
    const missing = await h.call("POST", "/products/", { token: h.token, json: noCategory });
    expect(missing.status).toBe(422);
    expect(missing.json).toEqual({ detail: "Campo 'category': es obligatorio" });

    const notString = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, name: 12 } });
    expect(notString.status).toBe(422);
    expect(notString.json.detail).toStartWith("Campo 'name': debe ser un texto");

    for (const body of [[LAPTOP], "texto", 3, null]) {
      const response = await h.call("POST", "/products/", { token: h.token, json: body });
      expect(response.status).toBe(422);
      expect(response.json.detail).toBeString();
    }
    expect(h.products.products).toEqual([]);
  });

  test("empty, blank or invisible name and category are 422; an empty description is accepted", async () => {
    const h = await createHarness();
    for (const field of ["name", "category"] as const) {
      for (const value of ["", "   \t\n", "\u200b\u200c\ufeff"]) {
        const response = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, [field]: value } });
        expect(response.status).toBe(422);
        expect(response.json).toEqual({ detail: `El campo '${field}' no puede estar vacío` });
      }
    }
    expect(h.products.products).toEqual([]);
    const noDescription = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, description: " " } });
    expect(noDescription.status).toBe(201);
    expect(noDescription.json.description).toBe("");
  });

  test("fields over their maximum length are 422; at the maximum they are accepted", async () => {
    const h = await createHarness();
    for (const field of ["name", "description", "category"] as const) {
      const max = PRODUCT_FIELD_MAX_LENGTH[field];
      const tooLong = await h.call("POST", "/products/", {
        token: h.token,
        json: { ...LAPTOP, [field]: "x".repeat(max + 1) },
      });
      expect(tooLong.status).toBe(422);
      expect(tooLong.json).toEqual({ detail: `Campo '${field}': debe ser un texto de como máximo ${max} caracteres` });
      const atMax = await h.call("POST", "/products/", {
        token: h.token,
        json: { ...LAPTOP, [field]: "x".repeat(max) },
      });
      expect(atMax.status).toBe(201);
    }
  });

  test("when the embedder fails: 503 and nothing stored", async () => {
    const h = await createHarness();
    h.embedder.mode = "fail";
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(503);
    expect(response.json).toEqual({
      detail: "El servicio de embeddings no está disponible. Inténtelo de nuevo más tarde",
    });
    expect(h.products.products).toEqual([]);

    h.embedder.mode = "ok";
    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: "laptop" } });
    expect(search.json.results).toEqual([]);
  });

  test("when the embedder returns a zero vector: 503 and nothing stored", async () => {
    const h = await createHarness();
    h.embedder.mode = "zero";
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(503);
    expect(h.products.products).toEqual([]);

    h.embedder.mode = "ok";
    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: "laptop" } });
    expect(search.json.results).toEqual([]);
  });

  test("a database that does not answer is 503", async () => {
    const h = await createHarness();
    h.products.down = true;
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(503);
    expect(response.json).toEqual({ detail: "La base de datos no está disponible" });
  });
});

describe("product lifecycle", () => {
  test("DELETE reads no body: whatever one it carries is ignored", async () => {
    const h = await createHarness();
    for (const [body, type] of [
      ["{", "application/json"],
      ["--x\r\nbroken", "multipart/form-data; boundary=x"],
    ] as const) {
      const { id } = await create(h, LAPTOP);
      const response = await h.call("DELETE", `/products/${id}`, {
        token: h.token,
        body,
        headers: { "content-type": type },
      });
      expect(response.status).toBe(204);
    }
  });

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

  test("PATCH changes some fields, re-embedding only when the name, category or description changes", async () => {
    const h = await createHarness();
    const { id } = await create(h, LAPTOP);
    h.embedder.calls.length = 0;
    const skuOnly = await h.call("PATCH", `/products/${id}`, { token: h.token, json: { sku: "G-1" } });
    expect(skuOnly.json).toEqual({ id, ...LAPTOP, sku: "G-1" });
    expect(h.embedder.calls).toEqual([]);
    const recategorised = await h.call("PATCH", `/products/${id}`, {
      token: h.token,
      json: { category: "gaming", sku: null },
    });
    expect(recategorised.status).toBe(200);
    expect(recategorised.json).toEqual({ id, ...LAPTOP, category: "gaming" });
    expect(h.embedder.calls.map((call) => call.text)).toEqual([`${LAPTOP.name}. gaming. ${LAPTOP.description}`]);
    h.embedder.calls.length = 0;

    const renamed = await h.call("PATCH", `/products/${id}`, {
      token: h.token,
      json: { name: "Portátil ultraligero", sku: "UL-1" },
    });
    expect(renamed.json).toEqual({ id, ...LAPTOP, category: "gaming", name: "Portátil ultraligero", sku: "UL-1" });
    expect(h.embedder.calls.map((call) => call.text)).toEqual([`Portátil ultraligero. gaming. ${LAPTOP.description}`]);

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
