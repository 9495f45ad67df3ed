/**
 * The attack suite: every route that takes a credential, read from the app's own routes (so a new
 * route is covered the day it is added), against every kind of caller and forged credential. Each
 * gets the status its credential deserves, decided before the route's own answer (so a request the
 * credential may make is sent in a form the route refuses harmlessly, or answers), and no answer
 * or log line ever holds a key, a token or the server's secret.
 */
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { PERMISSION_EXTENSION } from "../../../../src/adapters/http/auth/auth-macro.ts";
import { allows, type Caller, PERMISSIONS, type Permission } from "../../../../src/domain/caller.ts";
import { createHarness, type Harness, SECRET } from "../harness.ts";

/** What a route is: its method, its path with `:params` filled, the permission its macro declared. */
interface Route {
  method: string;
  path: string;
  permission: Permission;
}

/**
 * Every route of the app whose auth macro declared a permission (Elysia keeps the macro's detail in
 * its hooks), its `:catalogue` the default one (so /catalogues/default/products… answers as
 * /products… does, and DELETE /catalogues/default is the 409 of a catalogue that cannot go).
 */
function protectedRoutes(h: Harness): Route[] {
  return h.app.routes.flatMap((route) => {
    const detail = (route.hooks as { detail?: Record<string, unknown> } | undefined)?.detail;
    const permission = detail?.[PERMISSION_EXTENSION] as Permission | undefined;
    if (permission === undefined) return [];
    const path = route.path.replace(":catalogue", "default").replace(/:[a-z]+/g, "1");
    return [{ method: route.method, path, permission }];
  });
}

/** A request the route takes (search) or refuses by its own rules (422, 404), never by the credential's. */
function requestFor(route: Route): { path: string; json?: unknown } {
  if (route.path.includes("/products/search")) {
    return route.method === "GET"
      ? { path: `${route.path}?query=port%C3%A1til&category=Inform%C3%A1tica` }
      : { path: route.path, json: { query: "portátil", category: ["Informática"] } };
  }
  if (["POST", "PUT", "PATCH"].includes(route.method)) return { path: route.path, json: { campo: "desconocido" } };
  return { path: route.path };
}

const LAPTOP = { name: "Portátil ligero", description: "13 pulgadas", category: "Informática" };
const MUG = { name: "Taza de café", description: "Cerámica", category: "Cocina" };

function jwt(header: object, payload: object, signingKey: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part(header)}.${part(payload)}`;
  return `${signed}.${createHmac("sha256", signingKey).update(signed).digest("base64url")}`;
}

/** What a credential must get on a route: through (the route's own answer), or refused with this status. */
type Verdict = "through" | 401 | 403 | 404;

interface Attacker {
  name: string;
  headers: Record<string, string>;
  verdict(route: Route): Verdict;
}

async function attackers(h: Harness): Promise<{ all: Attacker[]; secrets: string[] }> {
  const hour = h.clock.now() / 1000 + 3600;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const as = (caller: Pick<Caller, "grants">) => (route: Route) =>
    allows({ ...caller, kind: "key", catalogues: "*", id: "x" }, route.permission) ? "through" : (403 as const);

  const viewer = await h.tokenOf("vera", "viewer");
  const searchOnly = await h.keyOf({ actions: ["search"] });
  const lacking = await h.keyOf({ actions: ["search", "products.read"] });
  const writer = await h.keyOf({ actions: ["products.write"] });
  const expired = await h.keyOf({ actions: ["*"], expiresAt: new Date(h.clock.now() + 1000) });
  const revoked = await h.keyOf({ actions: ["*"] });
  const otherCatalogue = await h.keyOf({ actions: ["*"], catalogues: ["outlet"] });
  const tenantKey = await h.keyOf({ actions: ["search"] });
  const tenant = jwt(
    { alg: "HS256", typ: "JWT" },
    { key_id: tenantKey.id, exp: hour, filter: { category: "Cocina" } },
    tenantKey.key,
  );
  const [tenantHeader, , tenantSignature] = tenant.split(".");
  const widenedPayload = Buffer.from(JSON.stringify({ key_id: tenantKey.id, exp: hour, filter: {} })).toString(
    "base64url",
  );
  const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
  const revokedParent = await h.keyOf({ actions: ["search"] });
  const orphan = jwt({ alg: "HS256" }, { key_id: revokedParent.id, exp: hour }, revokedParent.key);

  h.clock.advance(1000);
  await h.apiKeys.remove(revoked.id);
  await h.apiKeys.remove(revokedParent.id);

  const searchOnlyRoute = (route: Route): Verdict => (route.permission === "search" ? "through" : 403);
  // A key of the outlet alone: the default catalogue is not there for it, as if it did not exist
  // (its routes, its analytics, and removing it); it may list catalogues (none), make one (refused
  // here as 422) and ask what it may do (GET /auth/me, in no catalogue).
  const inDefaultCatalogue = (route: Route): Verdict =>
    /^\/(products|events|analytics)\b|^\/catalogues\/default\//.test(route.path) ||
    (route.method === "DELETE" && route.path === "/catalogues/default")
      ? 404
      : "through";
  const all: Attacker[] = [
    { name: "no credential", headers: {}, verdict: () => 401 },
    { name: "viewer", headers: bearer(viewer), verdict: as({ grants: ["search", "products.read"] }) },
    { name: "search-only key", headers: bearer(searchOnly.key), verdict: searchOnlyRoute },
    {
      name: "key without products.write",
      headers: { "x-api-key": lacking.key },
      verdict: as({ grants: ["search", "products.read"] }),
    },
    { name: "key with products.write alone", headers: bearer(writer.key), verdict: as({ grants: ["products.write"] }) },
    { name: "expired key", headers: bearer(expired.key), verdict: () => 401 },
    { name: "revoked key", headers: bearer(revoked.key), verdict: () => 401 },
    { name: "key of another catalogue", headers: bearer(otherCatalogue.key), verdict: inDefaultCatalogue },
    { name: "forged key", headers: bearer(`${searchOnly.key.slice(0, -2)}xx`), verdict: () => 401 },
    { name: "tenant token", headers: bearer(tenant), verdict: searchOnlyRoute },
    {
      name: "tampered tenant token",
      headers: bearer(`${tenantHeader}.${widenedPayload}.${tenantSignature}`),
      verdict: () => 401,
    },
    { name: "alg none", headers: bearer(`${none}.${widenedPayload}.`), verdict: () => 401 },
    {
      name: "token signed with another key",
      headers: bearer(jwt({ alg: "HS256" }, { key_id: tenantKey.id, exp: hour }, searchOnly.key)),
      verdict: () => 401,
    },
    { name: "token of a revoked parent", headers: bearer(orphan), verdict: () => 401 },
    {
      name: "login token signed with alg none",
      headers: bearer(
        `${none}.${Buffer.from(JSON.stringify({ sub: "1", username: "ana", exp: hour })).toString("base64url")}.`,
      ),
      verdict: () => 401,
    },
  ];
  const secrets = [
    SECRET,
    h.token,
    viewer,
    tenant,
    orphan,
    ...[searchOnly, lacking, writer, expired, revoked, otherCatalogue, tenantKey, revokedParent].map((k) => k.key),
  ];
  return { all, secrets };
}

describe("the attack suite: every protected route × every credential", () => {
  test("each gets the status its credential deserves, and nothing leaks", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MUG]) await h.call("POST", "/products/", { token: h.token, json: product });
    const routes = protectedRoutes(h);
    // The app's own routes: the products', the search's, the import's, the synonyms' (under /products
    // and under /catalogues/{catalogue}/products), the analytics' (of the default catalogue and of
    // each), the jobs', the catalogues', the keys' and the credential's own (GET /auth/me).
    expect(routes.length).toBeGreaterThanOrEqual(36);
    for (const path of [
      "/events",
      "/analytics",
      "/catalogues/default/events",
      "/catalogues/default/analytics",
      "/auth/me",
    ]) {
      expect(routes.map((route) => route.path)).toContain(path);
    }
    expect(routes.filter((route) => route.path.startsWith("/catalogues/default/products"))).toHaveLength(
      routes.filter((route) => route.path.startsWith("/products")).length,
    );
    expect(new Set(routes.map((route) => route.permission))).toEqual(new Set(PERMISSIONS));
    const { all, secrets } = await attackers(h);
    const answers: string[] = [];
    const outcomes: string[] = [];
    for (const route of routes) {
      for (const attacker of all) {
        const { path, json } = requestFor(route);
        const response = await h.call(route.method, path, { headers: attacker.headers, json });
        answers.push(response.text, JSON.stringify([...response.headers]));
        const expected = attacker.verdict(route);
        const got =
          response.status === 404 && /catálogo/.test(response.json?.detail ?? "")
            ? 404
            : [401, 403].includes(response.status)
              ? response.status
              : "through";
        if (got !== expected)
          outcomes.push(`${route.method} ${route.path} × ${attacker.name}: ${response.status} ${response.text}`);
        if (got !== "through") expect(response.json).toEqual({ detail: expect.any(String) });
        if (got === 401) expect(response.headers.get("www-authenticate")).toBe("Bearer");
      }
    }
    expect(outcomes).toEqual([]);
    const seen = `${answers.join("\n")}\n${JSON.stringify(h.logs)}`;
    for (const secret of secrets) expect(seen.includes(secret)).toBe(false);
  });

  test("a tenant token's search never answers a product outside its filter, whatever the request asks", async () => {
    const h = await createHarness();
    for (const product of [LAPTOP, MUG]) await h.call("POST", "/products/", { token: h.token, json: product });
    const { key, id } = await h.keyOf({ actions: ["search"] });
    const token = jwt(
      { alg: "HS256" },
      { key_id: id, exp: h.clock.now() / 1000 + 60, filter: { category: ["Cocina"] } },
      key,
    );
    for (const category of [undefined, "Informática", ["Informática", "Cocina"], ["Cocina"]]) {
      for (const stream of [false, true]) {
        const response = await h.call("POST", "/products/search", {
          token,
          json: { query: "portátil ligero", limit: 50, ...(category === undefined ? {} : { category }) },
          headers: stream ? { accept: "text/event-stream" } : {},
        });
        expect(response.status).toBe(200);
        expect(response.text).not.toContain(LAPTOP.name);
      }
    }
  });
});
