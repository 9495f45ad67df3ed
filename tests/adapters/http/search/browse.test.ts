/** Paging, sorting and facets of a search over HTTP (browse-results.ts). */
import { describe, expect, test } from "bun:test";
import { create } from "../catalogue-fixtures.ts";
import { createHarness, type Harness } from "../harness.ts";

const BRANDS = ["Acme", "Zeta", "Órbita"];

async function shop(count: number): Promise<{ h: Harness; ids: number[] }> {
  const h = await createHarness();
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const attributes = { brand: BRANDS[i % 3] as string, price: 10 + (i % 4) * 10, in_stock: i % 2 === 0 };
    ids.push(
      (await create(h, { name: `Zapatilla ${i}`, description: "Para correr", category: "calzado", attributes })).id,
    );
  }
  return { h, ids };
}

async function search(h: Harness, body: Record<string, unknown>) {
  const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "zapatillas", ...body } });
  expect(response.status).toBe(200);
  return response.json;
}

describe("browsing a search", () => {
  test("a search without offset, sort or facets answers as before: no total, no facets", async () => {
    const { h } = await shop(4);
    const answer = await search(h, { limit: 2 });
    expect(Object.keys(answer).sort()).toEqual(["cited_ids", "query", "recommendation", "results", "search_id"]);
  });

  test("pages cover every relevant result exactly once, with the total, sorted or not", async () => {
    const { h, ids } = await shop(11);
    for (const sort of [undefined, [{ price: "asc" }], [{ brand: "desc" }, { price: "asc" }]]) {
      const seen: number[] = [];
      for (let offset = 0; offset < 12; offset += 4) {
        const page = await search(h, { limit: 4, offset, ...(sort ? { sort } : {}) });
        expect(page.total).toBe(11);
        expect(page.total_relation).toBe("eq");
        seen.push(...page.results.map((hit: { id: number }) => hit.id));
        // The recommendation speaks only of the page's products.
        for (const cited of page.cited_ids) expect(page.results.map((hit: { id: number }) => hit.id)).toContain(cited);
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(ids);
      if (sort?.length === 1) {
        const prices = [];
        for (const id of seen) prices.push(10 + ((id - (ids[0] as number)) % 4) * 10);
        expect(prices).toEqual([...prices].sort((a, b) => a - b));
      }
    }
  });

  test("facets are counted over the relevant results, under the filter", async () => {
    const { h } = await shop(12);
    const answer = await search(h, { limit: 1, facets: ["brand", "price", "in_stock"], filter: { in_stock: true } });
    expect(answer.total).toBe(6);
    // In stock: i = 0, 2, 4, 6, 8, 10 → brands Acme, Órbita, Zeta, Acme, Órbita, Zeta; prices 10, 30, 10, 30, 10, 30.
    expect(answer.facets).toEqual({
      brand: [
        { value: "Acme", count: 2 },
        { value: "Órbita", count: 2 },
        { value: "Zeta", count: 2 },
      ],
      price: {
        min: 10,
        max: 30,
        buckets: [
          { from: 10, to: 14, count: 3 },
          { from: 14, to: 18, count: 0 },
          { from: 18, to: 22, count: 0 },
          { from: 22, to: 26, count: 0 },
          { from: 26, to: 30, count: 3 },
        ],
      },
      in_stock: [{ value: true, count: 6 }],
    });
  });

  test("the URL form and the event stream browse the same way", async () => {
    const { h } = await shop(6);
    const sort = encodeURIComponent(JSON.stringify([{ price: "desc" }]));
    const url = `/products/search?query=zapatillas&limit=2&offset=2&sort=${sort}&facets=brand,price`;
    const viaUrl = await h.call("GET", url, { token: h.token });
    expect(viaUrl.status).toBe(200);
    const viaBody = await search(h, { limit: 2, offset: 2, sort: [{ price: "desc" }], facets: ["brand", "price"] });
    expect(viaUrl.json.results.map((hit: { id: number }) => hit.id)).toEqual(
      viaBody.results.map((hit: { id: number }) => hit.id),
    );
    expect(viaUrl.json.facets).toEqual(viaBody.facets);
    const streamed = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "zapatillas", limit: 2, offset: 2, facets: ["brand"] },
      headers: { accept: "text/event-stream" },
    });
    const results = JSON.parse(/^data: (.*)$/m.exec(streamed.text)?.[1] ?? "null");
    expect(results).toMatchObject({ total: 6, total_relation: "eq", facets: { brand: expect.any(Array) } });
  });

  test("an invalid offset, sort or facets is 422 naming the field", async () => {
    const { h } = await shop(2);
    for (const [body, named] of [
      [{ offset: 999, limit: 5 }, "'offset'"],
      [{ sort: [{ price: "up" }] }, "'sort'"],
      [{ sort: [{ Price: "asc" }] }, "'Price'"],
      [{ facets: ["Marca"] }, "'Marca'"],
    ] as const) {
      const response = await h.call("POST", "/products/search", {
        token: h.token,
        json: { query: "zapatillas", ...body },
      });
      expect(response.status).toBe(422);
      expect(response.json.detail).toContain(named);
    }
  });
});

describe("highlight", () => {
  test("each result gets its name and description with the matched words marked and the rest escaped", async () => {
    const h = await createHarness();
    await create(h, { name: "Zapatilla <b>Acme</b>", description: "Zapatillas & calcetines", category: "calzado" });
    const answer = await search(h, { highlight: true });
    expect(answer.results[0].highlights).toEqual({
      name: "<mark>Zapatilla</mark> &lt;b&gt;Acme&lt;/b&gt;",
      description: "<mark>Zapatillas</mark> &amp; calcetines",
    });
    expect((await search(h, {})).results[0]).not.toHaveProperty("highlights");
    const viaUrl = await h.call("GET", "/products/search?query=zapatillas&highlight=true", { token: h.token });
    expect(viaUrl.json.results[0].highlights.name).toContain("<mark>Zapatilla</mark>");
  });
});
