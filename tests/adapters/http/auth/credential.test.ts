/**
 * GET /auth/me: what a credential may do and in which catalogues, as a page that starts with a key
 * or a tenant token reads it. A credential learns the names of the catalogues it can see, and of
 * no other.
 */
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { createHarness, type Harness } from "../harness.ts";

function tenantToken({ key, id }: { key: string; id: string }, payload: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ key_id: id, ...payload })}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

/** A harness with the catalogues default, norte and sur. */
async function threeShops(options: Parameters<typeof createHarness>[0] = {}): Promise<Harness> {
  const h = await createHarness(options);
  for (const name of ["norte", "sur"]) {
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name } })).status).toBe(201);
  }
  return h;
}

const me = (h: Harness, headers: Record<string, string>) => h.call("GET", "/auth/me", { headers });

describe("GET /auth/me", () => {
  test("a search-only key: search, in the catalogues it names that exist, and no other's name", async () => {
    const h = await threeShops();
    const { key, id } = await h.keyOf({ actions: ["search"], catalogues: ["norte", "todavia-no"] });
    const answer = await me(h, { authorization: `Bearer ${key}` });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      kind: "key",
      id: `key:${id}`,
      actions: ["search"],
      catalogues: ["norte"],
      filter: null,
    });
    expect(answer.text).not.toContain("sur");
    // Once the catalogue it also names is made, it is there.
    await h.call("POST", "/catalogues", { token: h.token, json: { name: "todavia-no" } });
    expect((await me(h, { "x-api-key": key })).json.catalogues).toEqual(["norte", "todavia-no"]);
  });

  test("a tenant token: its key's catalogues and its filter, as lists", async () => {
    const h = await threeShops();
    const parent = await h.keyOf({ actions: ["search"], catalogues: ["sur"] });
    const exp = h.clock.now() / 1000 + 600;
    const token = tenantToken(parent, { exp, filter: { category: "Cocina" } });
    expect((await me(h, { authorization: `Bearer ${token}` })).json).toEqual({
      kind: "tenant",
      id: `tenant:${parent.id}`,
      actions: ["search"],
      catalogues: ["sur"],
      filter: { category: ["Cocina"] },
    });
    // A token without a filter: an empty one.
    const open = tenantToken(parent, { exp });
    expect((await me(h, { authorization: `Bearer ${open}` })).json.filter).toEqual({});
  });

  test("users: an admin does everything everywhere; a viewer searches and reads everywhere", async () => {
    const h = await threeShops();
    expect((await me(h, { authorization: `Bearer ${h.token}` })).json).toEqual({
      kind: "user",
      id: expect.stringMatching(/^user:\d+$/),
      actions: ["*"],
      catalogues: ["default", "norte", "sur"],
      filter: null,
    });
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await me(h, { authorization: `Bearer ${viewer}` })).json).toMatchObject({
      actions: ["search", "products.read"],
      catalogues: ["default", "norte", "sur"],
    });
  });

  test("refused: no credential or a bad one (401), one that may not search (403); in no catalogue", async () => {
    const h = await threeShops();
    expect((await me(h, {})).status).toBe(401);
    expect((await me(h, { authorization: "Bearer sks_0000000000000000_nada" })).status).toBe(401);
    const revoked = await h.keyOf({ actions: ["search"] });
    await h.apiKeys.remove(revoked.id);
    expect((await me(h, { "x-api-key": revoked.key })).status).toBe(401);
    const writer = await h.keyOf({ actions: ["products.read", "products.write"] });
    const refused = await me(h, { "x-api-key": writer.key });
    expect(refused.status).toBe(403);
    expect(refused.json.detail).toContain("'search'");
    // A key of no existing catalogue is answered (nothing to search yet), not taken for the default one's.
    const elsewhere = await h.keyOf({ actions: ["search"], catalogues: ["otra-tienda"] });
    expect((await me(h, { "x-api-key": elsewhere.key })).json).toMatchObject({ catalogues: [] });
  });

  test("with the search open to anyone, no credential lists every catalogue, as it may search them all", async () => {
    const h = await threeShops({ settings: { searchRequiresAuth: false } });
    expect((await me(h, {})).json).toEqual({
      kind: "anonymous",
      id: "anonymous",
      actions: ["search"],
      catalogues: ["default", "norte", "sur"],
      filter: null,
    });
  });
});
