/**
 * Search ids, POST /events and GET /analytics (the default catalogue's; each catalogue's under
 * /catalogues/{catalogue}/…): how a shop finds the searches that fail it, and only its own.
 */
import { describe, expect, test } from "bun:test";
import { addProducts, CHAIR, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

const RANKING = { categoryBoost: 0.4, minScore: 0.3, relevantShare: 0 };

async function searched(h: Awaited<ReturnType<typeof createHarness>>, query: string) {
  const response = await h.call("POST", "/products/search", { token: h.token, json: { query } });
  expect(response.status).toBe(200);
  return response.json as { search_id: string; results: { id: number }[] };
}

describe("search analytics", () => {
  test("counts each search and each click: top queries, no-result queries and the click-through rate per query", async () => {
    const h = await createHarness({ ranking: RANKING });
    await addProducts(h, MOUSE, LAPTOP, CHAIR);
    const laptops = [
      await searched(h, "Portátil gamer"),
      await searched(h, "portátil  GAMER"),
      await searched(h, "portátil gamer"),
    ];
    await searched(h, "silla ergonómico");
    const nothing = await searched(h, "patinete eléctrico");
    expect(nothing.results).toEqual([]);
    for (const [search, type] of [
      [laptops[0], "click"],
      [laptops[0], "click"],
      [laptops[1], "click"],
      [laptops[1], "conversion"],
    ] as const) {
      const event = { search_id: search?.search_id, product_id: search?.results[0]?.id, type };
      const response = await h.call("POST", "/events", { token: h.token, json: event });
      expect(response.status).toBe(202);
      expect(response.text).toBe("");
    }
    const report = await h.call("GET", "/analytics?days=7", { token: h.token });
    expect(report.status).toBe(200);
    expect(report.json).toMatchObject({
      days: 7,
      searches: 5,
      no_result_searches: 1,
      clicked_searches: 2,
      click_through_rate: 0.4,
      clicks: 3,
      conversions: 1,
    });
    expect(report.json.top_queries[0]).toEqual({
      query: "portátil gamer",
      searches: 3,
      no_results: 0,
      clicked_searches: 2,
      click_through_rate: 0.667,
      clicks: 3,
      conversions: 1,
    });
    expect(report.json.no_result_queries).toEqual([
      {
        query: "patinete eléctrico",
        searches: 1,
        no_results: 1,
        clicked_searches: 0,
        click_through_rate: 0,
        clicks: 0,
        conversions: 0,
      },
    ]);
  });

  test("the stream carries the search id in its results and done events", async () => {
    const h = await createHarness();
    await addProducts(h, LAPTOP);
    const response = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "portátil" },
      headers: { accept: "text/event-stream" },
    });
    const ids = [...response.text.matchAll(/"search_id":"([^"]+)"/g)].map((match) => match[1]);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBe(ids[1]);
    expect(h.analyticsStore.searches.map((search) => search.searchId)).toEqual([ids[0] as string]);
  });

  test("a bad event is 422 naming the field, and nothing is kept; days out of range is 422", async () => {
    const h = await createHarness();
    const id = "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e";
    for (const json of [
      { search_id: "no-es-un-id", product_id: 1, type: "click" },
      { search_id: id, product_id: 0, type: "click" },
      { search_id: id, product_id: 1, type: "like" },
      { search_id: id, product_id: 1 },
      { search_id: id, product_id: 1, type: "click", user: "ana" },
    ]) {
      const response = await h.call("POST", "/events", { token: h.token, json });
      expect({ json, status: response.status }).toEqual({ json, status: 422 });
      expect(response.json.detail).toBeString();
    }
    expect(h.analyticsStore.events).toEqual([]);
    for (const days of ["0", "91", "1.5", "x"]) {
      expect((await h.call("GET", `/analytics?days=${days}`, { token: h.token })).status).toBe(422);
    }
  });

  test("events take the search's permission (a storefront sends them), the report products.read", async () => {
    const h = await createHarness({ settings: { searchRequiresAuth: false } });
    const event = { search_id: "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e", product_id: 1, type: "click" };
    expect((await h.call("POST", "/events", { json: event })).status).toBe(202);
    expect((await h.call("GET", "/analytics")).status).toBe(401);
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await h.call("GET", "/analytics", { token: viewer })).json).toMatchObject({ days: 7, searches: 0 });
  });

  test("each catalogue's figures are its own: its searches, and the events reported in it on them", async () => {
    const h = await createHarness();
    await h.call("POST", "/catalogues", { token: h.token, json: { name: "norte" } });
    await addProducts(h, LAPTOP);
    await h.call("POST", "/catalogues/norte/products/", { token: h.token, json: MOUSE });
    const inDefault = await searched(h, "portátil");
    const inNorte = (
      await h.call("POST", "/catalogues/norte/products/search", { token: h.token, json: { query: "ratón" } })
    ).json as { search_id: string; results: { id: number }[] };
    const click = (search: { search_id: string; results: { id: number }[] }) => ({
      search_id: search.search_id,
      product_id: search.results[0]?.id,
      type: "click",
    });
    expect((await h.call("POST", "/catalogues/norte/events", { token: h.token, json: click(inNorte) })).status).toBe(
      202,
    );
    // The default catalogue's search id reported in norte: accepted, and it counts for neither.
    expect((await h.call("POST", "/catalogues/norte/events", { token: h.token, json: click(inDefault) })).status).toBe(
      202,
    );
    const norte = await h.call("GET", "/catalogues/norte/analytics", { token: h.token });
    expect(norte.json).toMatchObject({ searches: 1, clicks: 1, top_queries: [{ query: "ratón", clicks: 1 }] });
    for (const path of ["/analytics", "/catalogues/default/analytics"]) {
      const report = await h.call("GET", path, { token: h.token });
      expect(report.json).toMatchObject({ searches: 1, clicks: 0, top_queries: [{ query: "portátil", clicks: 0 }] });
    }
  });

  test("a credential of another catalogue can neither read its figures nor report events in it: 404, nothing kept", async () => {
    const h = await createHarness();
    for (const name of ["norte", "sur"]) await h.call("POST", "/catalogues", { token: h.token, json: { name } });
    await h.call("POST", "/catalogues/sur/products/", { token: h.token, json: LAPTOP });
    const sur = (
      await h.call("POST", "/catalogues/sur/products/search", { token: h.token, json: { query: "portátil" } })
    ).json as { search_id: string; results: { id: number }[] };
    const event = { search_id: sur.search_id, product_id: sur.results[0]?.id, type: "conversion" };
    const { key } = await h.keyOf({ actions: ["search", "products.read"], catalogues: ["norte"] });
    const tenantKey = await h.keyOf({ actions: ["search"], catalogues: ["norte"] });
    const tenant = await tenantToken(tenantKey, h.clock.now() / 1000 + 60);
    const credentials: Record<string, string>[] = [{ "x-api-key": key }, { authorization: `Bearer ${tenant}` }];
    for (const credential of credentials) {
      for (const [method, path] of [
        ["POST", "/catalogues/sur/events"],
        ["POST", "/events"],
        ["GET", "/catalogues/sur/analytics"],
        ["GET", "/analytics"],
        ["GET", "/catalogues/nunca/analytics"],
      ] as const) {
        const response = await h.call(method, path, {
          headers: credential,
          json: method === "POST" ? event : undefined,
        });
        expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
        expect(response.json.detail).toMatch(/catálogo/);
      }
    }
    expect(h.analyticsStore.events).toEqual([]);
    // In its own catalogue: the key reads the figures; the tenant token reports events, and may not read them.
    expect((await h.call("GET", "/catalogues/norte/analytics", { headers: { "x-api-key": key } })).status).toBe(200);
    const own = await h.call("POST", "/catalogues/norte/events", {
      headers: { authorization: `Bearer ${tenant}` },
      json: event,
    });
    expect(own.status).toBe(202);
    expect(
      (await h.call("GET", "/catalogues/norte/analytics", { headers: { authorization: `Bearer ${tenant}` } })).status,
    ).toBe(403);
    // Reported in norte, the sur search's conversion counts for sur no more than for norte.
    expect((await h.call("GET", "/catalogues/sur/analytics", { token: h.token })).json).toMatchObject({
      searches: 1,
      conversions: 0,
    });
  });
});

/** A tenant token of `key` (HS256, signed with the key's secret), with no filter. */
async function tenantToken({ key, id }: { key: string; id: string }, exp: number): Promise<string> {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ key_id: id, exp })}`;
  const signature = new Bun.CryptoHasher("sha256", key).update(signed).digest("base64url");
  return `${signed}.${signature}`;
}
