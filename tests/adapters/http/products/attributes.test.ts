/** Product attributes over HTTP: created, changed, listed, found, imported; invalid ones 422 naming the key. */
import { describe, expect, test } from "bun:test";
import { create, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

const ATTRIBUTES = { brand: "Acme", in_stock: true, price: 899.5, sizes: ["13", "15"] };

describe("product attributes", () => {
  test("POST stores them and every answer shows them: GET, the list, the search; a product without any has no field", async () => {
    const h = await createHarness();
    const created = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, attributes: ATTRIBUTES } });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: 1, ...LAPTOP, attributes: ATTRIBUTES });
    const plain = await create(h, MOUSE);
    expect(plain).not.toHaveProperty("attributes");
    expect((await h.call("GET", "/products/1", { token: h.token })).json).toEqual(created.json);
    const list = await h.call("GET", "/products", { token: h.token });
    expect(list.json.items).toEqual([created.json, plain]);
    const search = await h.call("POST", "/products/search", { token: h.token, json: { query: "portátil" } });
    expect(search.json.results.find((hit: { id: number }) => hit.id === 1)).toMatchObject({ attributes: ATTRIBUTES });
    expect(search.json.results.find((hit: { id: number }) => hit.id === plain.id)).not.toHaveProperty("attributes");
  });

  test("invalid attributes are 422 naming the key, and nothing is stored", async () => {
    const h = await createHarness();
    const cases: [unknown, string][] = [
      [{ Brand: "Acme" }, "El atributo 'Brand' no tiene un nombre válido"],
      [{ price: { amount: 3 } }, "El atributo 'price' debe ser un texto, un número, un booleano o una lista de textos"],
      [{ sizes: [42] }, "El atributo 'sizes' debe ser un texto"],
      [
        Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])),
        "El campo 'attributes' tiene 65 atributos",
      ],
      [{ note: "x".repeat(17_000) }, "El campo 'attributes' ocupa"],
    ];
    for (const [attributes, detail] of cases) {
      const response = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, attributes } });
      expect(response.status).toBe(422);
      expect(response.json.detail).toStartWith(detail);
    }
    const notAnObject = await h.call("POST", "/products/", { token: h.token, json: { ...LAPTOP, attributes: "Acme" } });
    expect(notAnObject.status).toBe(422);
    expect(notAnObject.json.detail).toStartWith("Campo 'attributes'");
    expect(h.products.products).toEqual([]);
    expect(h.embedder.calls).toEqual([]);
  });

  test("PATCH replaces them without re-embedding; PUT without them keeps them; null removes them", async () => {
    const h = await createHarness();
    const { id } = await create(h, { ...LAPTOP, attributes: ATTRIBUTES });
    h.embedder.calls.length = 0;
    const patched = await h.call("PATCH", `/products/${id}`, { token: h.token, json: { attributes: { price: 799 } } });
    expect(patched.json).toEqual({ id, ...LAPTOP, attributes: { price: 799 } });
    expect(h.embedder.calls).toEqual([]);
    const bad = await h.call("PATCH", `/products/${id}`, {
      token: h.token,
      json: { attributes: { "precio-final": 1 } },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.detail).toContain("'precio-final'");
    const put = await h.call("PUT", `/products/${id}`, { token: h.token, json: { ...LAPTOP, name: "Portátil nuevo" } });
    expect(put.json).toEqual({ id, ...LAPTOP, name: "Portátil nuevo", attributes: { price: 799 } });
    const removed = await h.call("PATCH", `/products/${id}`, { token: h.token, json: { attributes: null } });
    expect(removed.json).toEqual({ id, ...LAPTOP, name: "Portátil nuevo" });
  });

  test("the bulk import stores them; an item with invalid ones fails naming the key; re-importing the same is unchanged", async () => {
    const h = await createHarness();
    const items = [
      { ...LAPTOP, sku: "L-1", attributes: ATTRIBUTES },
      { ...MOUSE, sku: "M-1", attributes: { Marca: "Zeta" } },
    ];
    const first = await h.call("POST", "/products/bulk", { token: h.token, json: items });
    expect(first.status).toBe(200);
    expect(first.json.items.map((item: { status: string }) => item.status)).toEqual(["created", "failed"]);
    expect(first.json.items[1].detail).toContain("'Marca'");
    expect(h.products.products).toEqual([{ id: 1, ...LAPTOP, sku: "L-1", attributes: ATTRIBUTES }]);
    const again = await h.call("POST", "/products/bulk", { token: h.token, json: [items[0]] });
    expect(again.json.items[0].status).toBe("unchanged");
    h.embedder.calls.length = 0;
    const changed = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, sku: "L-1", attributes: { price: 1 } }],
    });
    expect(changed.json.items[0].status).toBe("updated");
    expect(h.embedder.calls).toEqual([]);
    expect(h.products.products).toEqual([{ id: 1, ...LAPTOP, sku: "L-1", attributes: { price: 1 } }]);
  });
});
