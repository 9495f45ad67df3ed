/**
 * Catalogues through the whole service (config → composition root → HTTP app) on the embedded
 * database and on PostgreSQL: a catalogue made over HTTP holds its own products, found only in it
 * (by id, list, search of either kind, bulk by sku), a key limited to one catalogue finds the others
 * as if they did not exist and stops at its revocation, and removing a catalogue takes its products;
 * on PostgreSQL, a catalogue made on one instance is served by another at once.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import type { Logger } from "../../src/app/logger.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { type CallOptions, callApp } from "../support/app-client.ts";
import { withMigratedDatabase } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { useTempDirs } from "../support/temp-dirs.ts";
import { POSTGRES_URL, schemaOfItsOwn } from "../support/test-databases.ts";

/** Each test's data folders, removed after the file's last test (its services closed by then). */
const tempDir = useTempDirs("catalogues", { concurrent: true });

setDefaultTimeout(120_000);

const ADMIN = { username: "admin", password: "una-contraseña-larga" };
const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const open: HttpService[] = [];
const schemas: { drop: () => Promise<void> }[] = [];
afterEach(async () => {
  for (const service of open.splice(0).reverse()) await service.close();
  for (const schema of schemas.splice(0)) await schema.drop();
});

const CAFETERA = { name: "Cafetera italiana", description: "Acero inoxidable", category: "Cocina", sku: "C-1" };
const TETERA = { name: "Tetera de hierro", description: "Hierro fundido japonés", category: "Cocina", sku: "C-1" };

async function start(env: Record<string, string>) {
  const config = loadConfig({
    JWT_SECRET: "un-secreto-compartido-por-las-instancias-de-prueba",
    ADMIN_PASSWORD: ADMIN.password,
    VECTOR_INDEX: "off",
    QUERY_CACHE_DAYS: "0",
    ...env,
  });
  const service = await createHttpService(config, quiet, {
    embedder: new FakeEmbedder(16),
    passwordHasher: lowCostHasher(),
  });
  open.push(service);
  const call = (method: string, path: string, init: CallOptions = {}) => callApp(service.app, method, path, init);
  const token = (await call("POST", "/auth/login", { form: ADMIN })).json.access_token as string;
  return { service, call, token };
}

/** A PostgreSQL schema of its own, as DATABASE_URL, dropped after the test. */
async function freshSchema(): Promise<string> {
  const schema = await schemaOfItsOwn("catalogues");
  schemas.push(schema);
  return schema.url;
}

const engines = [
  // A data directory whose database the service has migrated for its embedder: these tests are not of a first start.
  { name: "PGlite", env: async () => ({ DATA_DIR: await withMigratedDatabase(tempDir(), new FakeEmbedder(16)) }) },
  ...(POSTGRES_URL
    ? [
        {
          name: "PostgreSQL",
          env: async () => ({ DATA_DIR: tempDir(), DATABASE_URL: await freshSchema() }),
        },
      ]
    : []),
];

describe.each(engines)("catalogues on $name", ({ env }) => {
  test("a catalogue holds its own products: found only in it, by id, list, search and bulk; removed with it", async () => {
    const { call, token } = await start(await env());
    expect((await call("POST", "/catalogues", { token, json: { name: "outlet" } })).status).toBe(201);
    const mine = (await call("POST", "/products/", { token, json: CAFETERA })).json;
    const theirs = (await call("POST", "/catalogues/outlet/products/", { token, json: TETERA })).json;
    expect(theirs.sku).toBe(mine.sku);
    expect(theirs.id).toBeGreaterThan(mine.id);

    expect((await call("GET", `/products/${theirs.id}`, { token })).status).toBe(404);
    expect((await call("DELETE", `/products/${theirs.id}`, { token })).status).toBe(404);
    expect((await call("GET", `/catalogues/outlet/products/${theirs.id}`, { token })).json.name).toBe(TETERA.name);
    const cursor = btoa(`id:${theirs.id - 1}`).replace(/=+$/, "");
    expect((await call("GET", `/products?cursor=${cursor}`, { token })).json.items).toEqual([]);
    for (const mode of ["semantic", "hybrid"]) {
      // The tetera's own words and text: in default only the cafetera can come back.
      const query = `${TETERA.name} ${TETERA.description}`;
      const found = await call("POST", "/products/search", { token, json: { query, mode, limit: 50 } });
      expect(found.json.results.map((result: { id: number }) => result.id)).toEqual([mine.id]);
      const there = await call("POST", "/catalogues/outlet/products/search", { token, json: { query, mode } });
      expect(there.json.results.map((result: { id: number }) => result.id)).toEqual([theirs.id]);
    }
    // A bulk upsert by the outlet's sku changes the default catalogue's own product only.
    const bulk = await call("POST", "/products/bulk", { token, json: [{ ...CAFETERA, name: "Cafetera moka" }] });
    expect(bulk.json.items).toEqual([expect.objectContaining({ status: "updated", id: mine.id })]);
    expect((await call("GET", `/catalogues/outlet/products/${theirs.id}`, { token })).json).toMatchObject(TETERA);

    const listed = await call("GET", "/catalogues", { token });
    expect(
      listed.json.catalogues.map(({ name, products }: { name: string; products: number }) => [name, products]),
    ).toEqual([
      ["default", 1],
      ["outlet", 1],
    ]);
    expect((await call("DELETE", "/catalogues/outlet", { token })).status).toBe(204);
    expect((await call("GET", "/catalogues/outlet/products", { token })).status).toBe(404);
    expect((await call("POST", "/catalogues", { token, json: { name: "outlet" } })).status).toBe(201);
    expect((await call("GET", "/catalogues/outlet/products", { token })).json.total).toBe(0);
  });

  test("a key of one catalogue: 404 in the others as if they did not exist, 401 once revoked", async () => {
    const { call, token } = await start(await env());
    await call("POST", "/catalogues", { token, json: { name: "outlet" } });
    await call("POST", "/catalogues/outlet/products/", { token, json: TETERA });
    const made = await call("POST", "/keys", {
      token,
      json: { name: "Outlet", actions: ["search", "products.read"], catalogues: ["outlet"] },
    });
    const { key, id } = made.json;
    const headers = { "x-api-key": key };
    expect((await call("GET", "/catalogues/outlet/products", { headers })).json.total).toBe(1);
    for (const path of ["/products", "/catalogues/default/products", "/catalogues/nunca/products"]) {
      const refused = await call("GET", path, { headers });
      expect(refused.status).toBe(404);
      expect(refused.json.detail).toStartWith("No existe el catálogo");
    }
    expect((await call("POST", "/products/search", { headers, json: { query: "tetera" } })).status).toBe(404);
    expect((await call("DELETE", `/keys/${id}`, { token })).status).toBe(204);
    expect((await call("GET", "/catalogues/outlet/products", { headers })).status).toBe(401);
  });
});

describe.skipIf(!POSTGRES_URL)("two instances on one PostgreSQL", () => {
  test("a catalogue made on one is served by the other at once; removed there, the other answers 404", async () => {
    const url = await freshSchema();
    const a = await start({ DATA_DIR: tempDir(), DATABASE_URL: url });
    const b = await start({ DATA_DIR: tempDir(), DATABASE_URL: url });
    expect((await b.call("GET", "/catalogues/outlet/products", { token: b.token })).status).toBe(404);
    await a.call("POST", "/catalogues", { token: a.token, json: { name: "outlet" } });
    await a.call("POST", "/catalogues/outlet/products/", { token: a.token, json: TETERA });
    expect((await b.call("GET", "/catalogues/outlet/products", { token: b.token })).json.total).toBe(1);
    expect((await a.call("DELETE", "/catalogues/outlet", { token: a.token })).status).toBe(204);
    // B remembered the catalogue a few seconds ago: its products' statements find it gone all the same.
    const gone = await b.call("GET", "/catalogues/outlet/products", { token: b.token });
    expect(gone.status).toBe(404);
    expect(gone.json.detail).toBe("No existe el catálogo 'outlet'");
  });
});
