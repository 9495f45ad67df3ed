import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { KEY_REFUSALS } from "../../../../src/domain/authenticate-keys.ts";
import { createHarness, type Harness } from "../harness.ts";

const LAPTOP = { name: "Portátil ligero", description: "13 pulgadas, 1 kg", category: "Informática" };
const MUG = { name: "Taza de café", description: "Cerámica", category: "Cocina" };

async function newKey(h: Harness, json: Record<string, unknown>, token = h.token) {
  return h.call("POST", "/keys/", { token, json: { name: "Tienda", catalogues: ["default"], ...json } });
}

function tenantToken(key: string, keyId: string, filter: unknown, exp = Date.UTC(2025, 0, 1) / 1000 + 3600) {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ key_id: keyId, exp, filter })}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

describe("POST, GET and DELETE /keys", () => {
  test("create answers the key once; the listing shows its prefix and last use, never the key", async () => {
    const h = await createHarness();
    const created = await newKey(h, { actions: ["search"], expires_at: "2030-01-01T00:00:00Z" });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      name: "Tienda",
      key: expect.stringMatching(/^sks_[0-9a-f]{16}_/),
      prefix: `sks_${created.json.id}`,
      actions: ["search"],
      catalogues: ["default"],
      expires_at: "2030-01-01T00:00:00.000Z",
      created_at: expect.any(String),
    });
    const { key } = created.json;
    expect(key.startsWith(created.json.prefix)).toBe(true);

    await h.call("POST", "/products/search", { token: key, json: { query: "portátil" } });
    const listed = await h.call("GET", "/keys", { token: h.token });
    expect(listed.status).toBe(200);
    expect(listed.json.keys).toEqual([
      { ...created.json, key: undefined, last_used_at: new Date(h.clock.now()).toISOString() },
    ]);
    expect(listed.text).not.toContain(key);

    expect((await h.call("DELETE", `/keys/${created.json.id}`, { token: h.token })).status).toBe(204);
    const after = await h.call("POST", "/products/search", { token: key, json: { query: "portátil" } });
    expect(after).toMatchObject({ status: 401, json: { detail: KEY_REFUSALS.unknown } });
    expect((await h.call("DELETE", `/keys/${created.json.id}`, { token: h.token })).status).toBe(404);
    expect((await h.call("GET", "/keys", { token: h.token })).json.keys).toEqual([]);
  });

  test("bad fields are 422 and store nothing", async () => {
    const h = await createHarness();
    for (const json of [
      { actions: [] },
      { actions: ["todo"] },
      { actions: ["search"], catalogues: ["Tienda"] },
      { actions: ["search"], catalogues: [] },
      { actions: ["search"], expires_at: "2020-01-01T00:00:00Z" },
      { actions: ["search"], expires_at: "mañana" },
      { actions: ["search"], key: "sks_elegida" },
      { actions: ["search"], name: "" },
    ]) {
      const response = await newKey(h, json);
      expect({ json, status: response.status }).toEqual({ json, status: 422 });
    }
    expect((await h.call("GET", "/keys", { token: h.token })).json.keys).toEqual([]);
  });

  test("a key with keys.manage makes keys no wider than itself; a viewer manages none", async () => {
    const h = await createHarness();
    const manager = (await newKey(h, { actions: ["keys.manage", "search"] })).json.key as string;
    expect((await newKey(h, { actions: ["search"] }, manager)).status).toBe(201);
    expect((await newKey(h, { actions: ["products.write"] }, manager)).status).toBe(403);
    expect((await newKey(h, { actions: ["search"], catalogues: ["*"] }, manager)).status).toBe(403);
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await newKey(h, { actions: ["search"] }, viewer)).status).toBe(403);
    expect((await h.call("GET", "/keys", { token: viewer })).status).toBe(403);
  });

  test("X-API-Key works like a bearer key; two credentials at once, or a token in X-API-Key, are 401", async () => {
    const h = await createHarness();
    const key = (await newKey(h, { actions: ["products.read"] })).json.key as string;
    expect((await h.call("GET", "/products", { headers: { "x-api-key": key } })).status).toBe(200);
    expect((await h.call("GET", "/products", { token: h.token, headers: { "x-api-key": key } })).status).toBe(401);
    expect((await h.call("GET", "/products", { headers: { "x-api-key": h.token } })).status).toBe(401);
  });
});

describe("tenant tokens", () => {
  test("search within the token's filter; a request narrows it, never widens it", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MUG]) await h.call("POST", "/products/", { token: h.token, json: product });
    const { key, id } = (await newKey(h, { actions: ["search"] })).json;
    const token = tenantToken(key, id, { category: "Cocina" });
    const search = (json: Record<string, unknown>) => h.call("POST", "/products/search", { token, json });

    const all = await search({ query: "portátil ligero", limit: 10 });
    expect(all.status).toBe(200);
    expect(all.json.results.map((product: { name: string }) => product.name)).toEqual([MUG.name]);
    const widened = await search({ query: "portátil ligero", category: ["Informática"] });
    expect(widened.status).toBe(200);
    expect(widened.json.results).toEqual([]);
    const mixed = await search({ query: "portátil", category: ["Informática", "Cocina"] });
    expect(mixed.json.results.map((product: { name: string }) => product.name)).toEqual([MUG.name]);
    // The GET form, as EventSource asks for it: the token in the `key` parameter.
    const viaQuery = await h.call("GET", `/products/search?query=port%C3%A1til&category=Inform%C3%A1tica&key=${token}`);
    expect(viaQuery).toMatchObject({ status: 200, json: { results: [] } });
    // Searching only: reading the catalogue is 403.
    expect((await h.call("GET", "/products", { token })).status).toBe(403);
  });

  test("the `key` query parameter takes a search-only key, nothing wider, and never reaches a log line", async () => {
    const h = await createHarness();
    const searchOnly = (await newKey(h, { actions: ["search"] })).json.key as string;
    const wider = (await newKey(h, { actions: ["search", "products.read"] })).json.key as string;
    expect((await h.call("GET", `/products/search?query=x&key=${searchOnly}`)).status).toBe(200);
    expect((await h.call("GET", `/products/search?query=x&key=${wider}`)).status).toBe(403);
    expect((await h.call("GET", `/products/search?query=x&key=${h.token}`)).status).toBe(401);
    expect((await h.call("GET", `/products/search?query=x&key=${searchOnly}`, { token: h.token })).status).toBe(401);
    // Only GET /products/search takes it: elsewhere it is an unknown parameter.
    expect((await h.call("GET", `/products?key=${searchOnly}`, { token: h.token })).status).toBe(422);
    const logged = JSON.stringify(h.logs);
    for (const secret of [searchOnly, wider]) expect(logged).not.toContain(secret);
  });
});
