/** Attribute filters over HTTP: the search (JSON, URL, stream), the list, their 422s and tenant tokens. */
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { create } from "../catalogue-fixtures.ts";
import { createHarness, type Harness } from "../harness.ts";

const SHOES = [
  { name: "Zapatilla running Acme", attributes: { brand: "Acme", price: 49.9, in_stock: true, sizes: ["41", "42"] } },
  { name: "Zapatilla running Zeta", attributes: { brand: "Zeta", price: 59.9, in_stock: false, sizes: ["42"] } },
  { name: "Zapatilla running Órbita", attributes: { brand: "Órbita", price: 89, in_stock: true, color: "rojo" } },
  { name: "Zapatilla running sin marca" },
].map((shoe) => ({ description: "Para correr", category: "calzado", ...shoe }));

async function shop(): Promise<{ h: Harness; ids: number[] }> {
  const h = await createHarness();
  const ids: number[] = [];
  for (const shoe of SHOES) ids.push((await create(h, shoe)).id);
  return { h, ids };
}

/** The ids a search answers, sorted. */
async function searched(h: Harness, body: Record<string, unknown>, token = h.token): Promise<number[]> {
  const response = await h.call("POST", "/products/search", {
    token,
    json: { query: "zapatillas", limit: 50, ...body },
  });
  expect(response.status).toBe(200);
  return response.json.results.map((hit: { id: number }) => hit.id).sort((a: number, b: number) => a - b);
}

function tenantToken(key: string, keyId: string, filter: unknown, now: number): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ key_id: keyId, exp: now / 1000 + 60, filter })}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

describe("filter", () => {
  test("the search answers only products meeting every condition, in each mode", async () => {
    const { h, ids } = await shop();
    const [acme, zeta, orbita] = ids as [number, number, number, number];
    for (const mode of ["semantic", "hybrid", "lexical"]) {
      expect(await searched(h, { mode, filter: { brand: "Acme" } })).toEqual([acme]);
      expect(await searched(h, { mode, filter: { brand: ["Acme", "Zeta"] } })).toEqual([acme, zeta]);
      expect(await searched(h, { mode, filter: { price: { gte: 50, lt: 90 } } })).toEqual([zeta, orbita]);
      expect(await searched(h, { mode, filter: { in_stock: true, sizes: "42" } })).toEqual([acme]);
      expect(await searched(h, { mode, filter: { color: { exists: true } } })).toEqual([orbita]);
      expect(await searched(h, { mode, filter: { category: "calzado", brand: "Nadie" } })).toEqual([]);
      expect(await searched(h, { mode, category: "hogar", filter: { category: "calzado" } })).toEqual([]);
    }
  });

  test("a search without a filter answers as before; the recommendation speaks only of the filtered products", async () => {
    const { h, ids } = await shop();
    expect(await searched(h, {})).toEqual(ids);
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "zapatillas", filter: { brand: "Zeta" } },
    });
    expect(response.json.cited_ids.every((id: number) => id === ids[1])).toBe(true);
    expect(response.json.recommendation).not.toContain("Acme");
  });

  test("GET /products/search takes the filter as JSON text, and so does the event stream", async () => {
    const { h, ids } = await shop();
    const filter = encodeURIComponent(JSON.stringify({ brand: ["Zeta", "Órbita"], in_stock: true }));
    const response = await h.call("GET", `/products/search?query=zapatillas&filter=${filter}`, { token: h.token });
    expect(response.status).toBe(200);
    expect(response.json.results.map((hit: { id: number }) => hit.id)).toEqual([ids[2]]);
    const streamed = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "zapatillas", filter: { brand: "Acme" } },
      headers: { accept: "text/event-stream" },
    });
    expect(streamed.text).toContain("Zapatilla running Acme");
    expect(streamed.text).not.toContain("Zapatilla running Zeta");
  });

  test("GET /products filters the list the same way, with its total", async () => {
    const { h, ids } = await shop();
    const filter = encodeURIComponent(JSON.stringify({ price: { lte: 59.9 } }));
    const response = await h.call("GET", `/products?filter=${filter}`, { token: h.token });
    expect(response.status).toBe(200);
    expect(response.json.items.map((item: { id: number }) => item.id)).toEqual([ids[0], ids[1]]);
    expect(response.json.total).toBe(2);
  });

  test("an invalid filter is 422 naming the key", async () => {
    const { h } = await shop();
    const cases: [unknown, string][] = [
      [{ Brand: "Acme" }, "'Brand'"],
      [{ price: { gte: "10" } }, "'price'"],
      [{ price: { between: [1, 2] } }, "'price'"],
      [{ price: { gte: 1, exists: true } }, "'price'"],
      [{ color: { exists: "yes" } }, "'color'"],
      [{ brand: [] }, "'brand'"],
      [{ brand: [{ a: 1 }] }, "'brand'"],
      [{ brand: null }, "'brand'"],
      [{ category: 3 }, "'category'"],
      [["Acme"], "'filter'"],
    ];
    for (const [filter, named] of cases) {
      const response = await h.call("POST", "/products/search", {
        token: h.token,
        json: { query: "zapatillas", filter },
      });
      expect({ filter, status: response.status }).toEqual({ filter, status: 422 });
      expect(response.json.detail).toContain(named);
      const listed = await h.call("GET", `/products?filter=${encodeURIComponent(JSON.stringify(filter))}`, {
        token: h.token,
      });
      expect(listed.status).toBe(422);
      expect(listed.json.detail).toContain(named);
    }
    const notJson = await h.call("GET", "/products/search?query=zapatillas&filter={brand", { token: h.token });
    expect(notJson.status).toBe(422);
    expect(notJson.json.detail).toContain("'filter'");
  });

  test("a tenant token's attribute filter holds whatever the request asks: the request only narrows it", async () => {
    const { h, ids } = await shop();
    const [acme, , orbita] = ids as [number, number, number, number];
    const { key, id } = await h.keyOf({ actions: ["search"] });
    const token = tenantToken(key, id, { in_stock: true }, h.clock.now());
    expect(await searched(h, {}, token)).toEqual([acme, orbita]);
    expect(await searched(h, { filter: { in_stock: false } }, token)).toEqual([]);
    expect(await searched(h, { filter: { brand: ["Zeta", "Órbita"] } }, token)).toEqual([orbita]);
    const me = await h.call("GET", "/auth/me", { token });
    expect(me.json.filter).toEqual({ in_stock: true });
    const ranged = tenantToken(
      key,
      id,
      { category: "calzado", price: { lt: 60 }, color: { exists: false } },
      h.clock.now(),
    );
    expect((await h.call("GET", "/auth/me", { token: ranged })).json.filter).toEqual({
      category: ["calzado"],
      price: { lt: 60 },
      color: { exists: false },
    });
    expect(await searched(h, {}, ranged)).toEqual(ids.filter((_, i) => i !== 2 && i !== 3).sort((a, b) => a - b));
    const invalid = tenantToken(key, id, { Brand: "x" }, h.clock.now());
    const refused = await h.call("POST", "/products/search", { token: invalid, json: { query: "zapatillas" } });
    expect(refused.status).toBe(401);
  });
});
