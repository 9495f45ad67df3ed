/**
 * The whole service as `bun start` builds it (config → container → HTTP app) on the embedded
 * PGlite database, driven in process. The fake embedder keeps these fast; the semantic test at
 * the end uses the real offline model. Tests of anything but a first start begin from a database the
 * service has migrated already (withMigratedDatabase).
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { SignJWT } from "jose";
import { LocalEmbedder } from "../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../src/adapters/providers/local-model-files.ts";
import type { Overrides } from "../../src/app/composition-root.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import { createLogger } from "../../src/app/logger.ts";
import type { EmbeddingSpace } from "../../src/ports/embedding-space.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { type CallOptions, callApp } from "../support/app-client.ts";
import { withMigratedDatabase, withNewDatabase } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { makeTempDir } from "../support/temp-dirs.ts";

// Each test opens PGlite (a new database takes seconds on 2 cores) and some restart it.
setDefaultTimeout(60_000);

const ADMIN = { username: "admin", password: "una-contraseña-larga" };
const quiet = createLogger("error");
const open: HttpService[] = [];
const dirs: string[] = [];

function tempDir(): string {
  const dir = makeTempDir("service");
  dirs.push(dir);
  return dir;
}

/** A DATA_DIR holding a new embedded database, as the first start of the executable makes it (no initdb here). */
const dataDirWithDatabase = () => withNewDatabase(tempDir());
/**
 * A DATA_DIR whose database the service has migrated for `space` already (`new FakeEmbedder(64)`'s,
 * the embedder of `start` unless a test gives another): for a test of anything but a first start.
 */
const migratedDataDir = (space: EmbeddingSpace = new FakeEmbedder(64)) => withMigratedDatabase(tempDir(), space);

async function start(env: Record<string, string>, overrides: Overrides = {}) {
  const config = loadConfig({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ...env });
  const container = await createHttpService(config, quiet, {
    embedder: new FakeEmbedder(64),
    passwordHasher: lowCostHasher(),
    ...overrides,
  });
  open.push(container);
  const call = (method: string, path: string, init: CallOptions = {}) => callApp(container.app, method, path, init);
  const login = async (username = ADMIN.username, password = ADMIN.password) =>
    (await call("POST", "/auth/login", { form: { username, password } })).json.access_token as string;
  return { container, call, login };
}

async function stop(container: HttpService) {
  open.splice(open.indexOf(container), 1);
  await container.close();
}

afterEach(async () => {
  for (const container of open.splice(0)) await container.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const COFFEE = { name: "Espresso machine", description: "15-bar pump and milk frother", category: "Kitchen" };
const WALLET = { name: "Leather wallet", description: "Slim bifold with card slots", category: "Accessories" };

describe("the service on the embedded database", () => {
  test("INDEXED_NUMBER_ATTRIBUTES: each number gets its index at start, once; a range on it finds the products", async () => {
    const dataDir = await migratedDataDir();
    const env = { DATA_DIR: dataDir, JWT_SECRET: "s".repeat(40), INDEXED_NUMBER_ATTRIBUTES: "weight,rating" };
    const indexes = async (container: HttpService) =>
      (
        await (
          await container.root.readDatabase()
        ).query<{ name: string }>(
          "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'products' AND indexname LIKE 'products\\_attribute\\_%' ORDER BY 1",
        )
      ).map((row) => row.name);
    const first = await start(env);
    expect(await indexes(first.container)).toEqual([
      "products_attribute_price",
      "products_attribute_rating",
      "products_attribute_weight",
    ]);
    const token = await first.login();
    for (const [name, weight] of [
      ["Mancuerna ligera", 2],
      ["Mancuerna pesada", 20],
    ] as const) {
      const created = await first.call("POST", "/products/", {
        token,
        json: { name, description: "de hierro", category: "Deporte", attributes: { weight } },
      });
      expect(created.status).toBe(201);
    }
    const light = await first.call("POST", "/products/search", {
      token,
      json: { query: "mancuerna", filter: { weight: { lt: 10 } } },
    });
    expect(light.json.results.map((result: { name: string }) => result.name)).toEqual(["Mancuerna ligera"]);
    await stop(first.container);
    // The next start, with one left out: nothing is made or dropped.
    const second = await start({ ...env, INDEXED_NUMBER_ATTRIBUTES: "weight" });
    expect(await indexes(second.container)).toEqual([
      "products_attribute_price",
      "products_attribute_rating",
      "products_attribute_weight",
    ]);
  });

  test("answers every endpoint of the contract", async () => {
    const { call } = await start({ DATA_DIR: await migratedDataDir(), JWT_SECRET: "s".repeat(40) });

    const health = await call("GET", "/");
    expect(health.status).toBe(200);
    expect(health.json.message).toBe(
      "La API de búsqueda semántica de SKU está lista y la base de datos está conectada",
    );

    const loginResponse = await call("POST", "/auth/login", { form: ADMIN });
    expect(loginResponse.status).toBe(200);
    expect(loginResponse.json.token_type).toBe("bearer");
    const token = loginResponse.json.access_token as string;

    const created = await call("POST", "/products/", { json: COFFEE, token });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: expect.any(Number), ...COFFEE });
    expect((await call("POST", "/products", { json: WALLET, token })).status).toBe(201);

    const search = await call("POST", "/products/search", { json: { query: "espresso with milk" }, token });
    expect(search.status).toBe(200);
    expect(search.json.query).toBe("espresso with milk");
    expect(search.json.recommendation).toStartWith("[LOCAL - ");
    expect(search.json.results[0]).toEqual({ id: created.json.id, ...COFFEE, score: expect.any(Number) });
    expect(search.json.results[0].score).toBeGreaterThan(search.json.results[1].score);
    expect(search.text).not.toContain("embedding");
  });

  test("an empty catalogue answers no results and says nothing matched; ready, and limited by SEARCH_RATE_LIMIT", async () => {
    const { call, login } = await start({ DATA_DIR: await migratedDataDir(), SEARCH_RATE_LIMIT: "1" });
    expect((await call("GET", "/health/ready")).status).toBe(200);
    const token = await login();
    const search = await call("POST", "/products/search", { json: { query: "anything" }, token });
    expect(search.status).toBe(200);
    expect(search.json.results).toEqual([]);
    expect(search.json.recommendation).toContain("No hemos encontrado");
    expect(search.headers.get("ratelimit-remaining")).toBe("0");
    const again = await call("POST", "/products/search", { json: { query: "anything" }, token });
    expect(again.status).toBe(429);
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  test("search ids are UUIDs in time order (version 7): each search's sorts after the one before", async () => {
    const { call, login } = await start({ DATA_DIR: await migratedDataDir() });
    const token = await login();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const search = await call("POST", "/products/search", { json: { query: `query ${i}` }, token });
      expect(search.status).toBe(200);
      ids.push(search.json.search_id as string);
    }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  test("refuses wrong credentials and every kind of bad token with 401 and WWW-Authenticate", async () => {
    const secret = "k".repeat(48);
    const { call } = await start({ DATA_DIR: await migratedDataDir(), JWT_SECRET: secret });
    const wrong = await call("POST", "/auth/login", { form: { username: ADMIN.username, password: "no-es-esta" } });
    const unknown = await call("POST", "/auth/login", { form: { username: "nadie", password: "no-es-esta" } });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ detail: "Usuario o contraseña incorrectos" });
    expect(unknown.json).toEqual(wrong.json);
    const nul = await call("POST", "/auth/login", { form: { username: "ad\u0000min", password: ADMIN.password } });
    expect(nul.status).toBe(401);
    expect(nul.json).toEqual(wrong.json);

    const key = new TextEncoder().encode(secret);
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "1", username: ADMIN.username };
    const expired = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(key);
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode("x".repeat(48)));
    const otherAlgorithm = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS512" })
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key);
    const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${base64url({ alg: "none", typ: "JWT" })}.${base64url({ ...claims, iat: now, exp: now + 3600 })}.`;
    const ghost = await new SignJWT({ sub: "999", username: "ghost" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key);

    for (const token of [undefined, "not-a-jwt", expired, forged, otherAlgorithm, unsigned, ghost]) {
      const response = await call("POST", "/products/", { json: COFFEE, ...(token === undefined ? {} : { token }) });
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      expect(typeof response.json.detail).toBe("string");
      expect(response.text).not.toContain(secret);
    }
  });

  test("throttles repeated failed logins with 429 and Retry-After", async () => {
    const { call } = await start({ DATA_DIR: await migratedDataDir() });
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      statuses.push(
        (await call("POST", "/auth/login", { form: { username: ADMIN.username, password: "mala-clave" } })).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const blocked = await call("POST", "/auth/login", { form: ADMIN });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  test("bad input gets a 4xx with a detail and stores nothing", async () => {
    const { call, login } = await start({ DATA_DIR: await migratedDataDir() });
    const token = await login();
    const cases: { json: unknown; status: number }[] = [
      { json: { ...COFFEE, id: 7 }, status: 422 },
      { json: { ...COFFEE, embedding: [1, 2, 3] }, status: 422 },
      { json: { ...COFFEE, name: "   " }, status: 422 },
      { json: { ...COFFEE, name: "Espresso\u0000machine" }, status: 422 },
      { json: { name: COFFEE.name, category: COFFEE.category }, status: 422 },
      { json: { ...COFFEE, description: "x".repeat(6000) }, status: 422 },
      { json: { ...COFFEE, description: "x".repeat(70_000) }, status: 413 },
      { json: [COFFEE], status: 422 },
    ];
    for (const { json, status } of cases) {
      const response = await call("POST", "/products/", { json, token });
      expect({ status: response.status, detail: typeof response.json.detail }).toEqual({ status, detail: "string" });
    }
    expect((await call("POST", "/products/search", { json: { query: "café\u0000" }, token })).status).toBe(422);
    for (const limit of [0, 51, 2.5, "5", null]) {
      expect((await call("POST", "/products/search", { json: { query: "x", limit }, token })).status).toBe(422);
    }
    const raw: { path: string; method?: string; body?: string; headers?: Record<string, string>; status: number }[] = [
      { path: "/products/", body: '{"name": "Espresso"', headers: { "content-type": "application/json" }, status: 400 },
      { path: "/products/", body: "name=Espresso", headers: { "content-type": "text/plain" }, status: 415 },
      { path: "/products/", body: "", headers: { "content-type": "application/json" }, status: 422 },
      { path: "/products/42", method: "GET", status: 404 },
      // The search as a GET: its query is missing.
      { path: "/products/search", method: "GET", status: 422 },
      { path: "/products/search", method: "DELETE", status: 404 },
      { path: "/products", method: "DELETE", status: 405 },
    ];
    for (const { path, method = "POST", status, ...body } of raw) {
      const response = await call(method, path, { ...body, token });
      expect({ path, status: response.status, detail: typeof response.json?.detail }).toEqual({
        path,
        status,
        detail: "string",
      });
    }
    const search = await call("POST", "/products/search", { json: { query: "espresso", limit: 50 }, token });
    expect(search.json.results).toEqual([]);
  });

  test("when the embedder fails, creating answers 503 and stores nothing", async () => {
    const embedder = new FakeEmbedder(64);
    const { call, login } = await start({ DATA_DIR: await migratedDataDir() }, { embedder });
    const token = await login();
    embedder.mode = "fail";
    expect((await call("POST", "/products/", { json: COFFEE, token })).status).toBe(503);
    embedder.mode = "zero";
    expect((await call("POST", "/products/", { json: COFFEE, token })).status).toBe(503);
    expect((await call("POST", "/products/search", { json: { query: "espresso" }, token })).status).toBe(503);
    embedder.mode = "ok";
    const search = await call("POST", "/products/search", { json: { query: "espresso" }, token });
    expect(search.json.results).toEqual([]);
  });

  test("answers 503 when the database is gone", async () => {
    const { container, call } = await start({ DATA_DIR: await migratedDataDir() });
    await container.close();
    const health = await call("GET", "/");
    expect(health.status).toBe(503);
    expect(health.json).toEqual({ detail: "La base de datos no está disponible" });
    const ready = await call("GET", "/health/ready");
    expect(ready.status).toBe(503);
    expect(ready.json).toEqual({ detail: "El servicio no está listo: la base de datos no responde" });
    expect((await call("GET", "/health/live")).status).toBe(200);
  });

  test("a restart keeps products, users, the generated secret and so the tokens", async () => {
    const dataDir = await migratedDataDir();
    const first = await start({ DATA_DIR: dataDir });
    const token = await first.login();
    expect((await first.call("POST", "/products/", { json: COFFEE, token })).status).toBe(201);
    await stop(first.container);

    const secretFile = join(dataDir, "jwt-secret");
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(secretFile, "utf8").trim().length).toBeGreaterThanOrEqual(32);

    const second = await start({ DATA_DIR: dataDir });
    const search = await second.call("POST", "/products/search", { json: { query: "espresso" }, token });
    expect(search.status).toBe(200);
    expect(search.json.results.map((product: { name: string }) => product.name)).toEqual([COFFEE.name]);
  });

  test("the first start without ADMIN_PASSWORD writes a generated password to a 0600 file the log names, never to the log", async () => {
    const dataDir = await dataDirWithDatabase();
    const lines: Record<string, unknown>[] = [];
    const capture = {
      debug: () => {},
      info: (e: Record<string, unknown>) => lines.push(e),
      warn: (e: Record<string, unknown>) => lines.push(e),
      error: () => {},
    };
    const config = loadConfig({ DATA_DIR: dataDir });
    const overrides = { embedder: new FakeEmbedder(64), passwordHasher: lowCostHasher() };
    const container = await createHttpService(config, capture, overrides);
    open.push(container);
    const created = lines.find((line) => line.event === "admin_created");
    expect(created).toMatchObject({ username: "admin", passwordFile: join(dataDir, "initial-admin-password") });
    const passwordFile = created?.passwordFile as string;
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    const password = readFileSync(passwordFile, "utf8").trim();
    expect(password.length).toBeGreaterThanOrEqual(24);
    expect(JSON.stringify(lines)).not.toContain(password);
    const response = await container.app.handle(
      new Request("http://localhost/auth/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ username: "admin", password }).toString(),
      }),
    );
    expect(response.status).toBe(200);
    await stop(container);

    lines.length = 0;
    open.push(await createHttpService(config, capture, overrides));
    expect(lines.some((line) => line.event === "admin_created")).toBe(false);
  });

  test("refuses to start on vectors of another model and says how to rebuild", async () => {
    const dataDir = await dataDirWithDatabase();
    const first = await start({ DATA_DIR: dataDir });
    await stop(first.container);
    const config = loadConfig({ DATA_DIR: dataDir });
    await expect(
      createHttpService(config, quiet, { embedder: new FakeEmbedder(32), passwordHasher: lowCostHasher() }),
    ).rejects.toThrow(/reembed/);
  });
});

describe("semantic search with the offline model", () => {
  test("a query sharing no word with the right product ranks it first", async () => {
    const embedder = new LocalEmbedder(INSTALLED_MODEL_DIR);
    const { call, login } = await start({ DATA_DIR: await migratedDataDir(embedder) }, { embedder });
    const token = await login();
    const catalogue = [
      {
        name: "Espresso machine",
        description: "15-bar pump, milk frother, 1.2 L water tank",
        category: "Kitchen",
      },
      { name: "Leather wallet", description: "Slim bifold with six card slots", category: "Accessories" },
      { name: "Trail running shoes", description: "Grippy outsole and breathable mesh upper", category: "Footwear" },
      { name: "Cotton bed sheets", description: "Queen size, 400 thread count, soft sateen weave", category: "Home" },
      { name: "Wireless mouse", description: "Ergonomic, silent clicks, USB receiver", category: "Computers" },
    ];
    for (const product of catalogue)
      expect((await call("POST", "/products/", { json: product, token })).status).toBe(201);

    const search = await call("POST", "/products/search", {
      json: { query: "brew hot drinks after waking", limit: 3 },
      token,
    });
    expect(search.status).toBe(200);
    expect(search.json.results).toHaveLength(3);
    expect(search.json.results[0].name).toBe("Espresso machine");
  });
});
