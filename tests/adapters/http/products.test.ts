import { describe, expect, test } from "bun:test";
import { PRODUCT_FIELD_MAX_LENGTH } from "../../../src/domain/product.ts";
import { NOTHING_GROUNDED, NOTHING_MATCHED } from "../../../src/domain/search-and-recommend.ts";
import { createHarness, type Harness } from "./harness.ts";

const LAPTOP = { name: "Portátil gamer", description: "laptop potente para videojuegos", category: "informática" };
const MOUSE = { name: "Ratón inalámbrico", description: "mouse ergonómico bluetooth", category: "periféricos" };
const CHAIR = { name: "Silla de oficina", description: "asiento ergonómico con respaldo", category: "muebles" };

async function addProducts(h: Harness, ...products: object[]) {
  for (const product of products) {
    expect((await h.call("POST", "/products/", { token: h.token, json: product })).status).toBe(201);
  }
}

describe("POST /products/", () => {
  test("creates a product: 201 with id, name, description, category and no embedding", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(201);
    expect(response.json).toEqual({ id: 1, ...LAPTOP });
    expect(h.products.products).toEqual([{ id: 1, ...LAPTOP }]);
    expect(h.embedder.calls).toEqual([{ text: `${LAPTOP.name}\n${LAPTOP.description}`, purpose: "document" }]);
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
