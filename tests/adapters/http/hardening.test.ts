/**
 * What keeps one client from hurting the service or itself: bounded parsing, deadlines, Retry-After,
 * idempotent creates, and tokens that die with a password change.
 */
import { describe, expect, test } from "bun:test";
import { ManageUsers } from "../../../src/domain/manage-users.ts";
import { MAX_JSON_DEPTH } from "../../../src/lib/json/json-depth.ts";
import { sendRaw } from "../../support/raw-http.ts";
import { createHarness, PASSWORD, USERNAME } from "./harness.ts";

const LAPTOP = { name: "Portátil", description: "Ordenador portátil ligero", category: "informática" };
const json = { "content-type": "application/json" };

describe("bodies are checked for nesting before they are parsed or validated", () => {
  test("60 KB of nested brackets to the login is 400 {detail}", async () => {
    const h = await createHarness();
    const nested = `${"[".repeat(30_000)}${"]".repeat(30_000)}`;
    const response = await h.call("POST", "/auth/login", { body: nested, headers: json });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      detail: `El cuerpo JSON tiene demasiados niveles de anidamiento (como máximo ${MAX_JSON_DEPTH})`,
    });
  });

  test("a query nested 4,265 levels deep is 400, not a stack overflow", async () => {
    const h = await createHarness();
    const body = `{"query": ${"[".repeat(4265)}${"]".repeat(4265)}}`;
    const response = await h.call("POST", "/products/search", { token: h.token, body, headers: json });
    expect(response.status).toBe(400);
    expect(response.json.detail).toContain("anidamiento");
  });

  test("brackets inside strings do not count; nesting up to the limit is validated as usual", async () => {
    const h = await createHarness();
    const inString = await h.call("POST", "/products/", {
      token: h.token,
      json: { ...LAPTOP, description: "[[[[{{{{".repeat(500) },
    });
    expect(inString.status).toBe(201);
    const deep = `{"query": "x", "limit": ${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}`;
    const validated = await h.call("POST", "/products/search", { token: h.token, body: deep, headers: json });
    expect(validated.status).toBe(422);
    expect(validated.json.detail).toContain("'limit'");
  });

  test("an own __proto__ key is an unknown field (422) and changes nothing", async () => {
    const h = await createHarness();
    for (const [path, body] of [
      ["/products/search", '{"__proto__": {"x": 1}, "query": "a"}'],
      ["/products/", `{"__proto__": {"polluted": true}, ${JSON.stringify(LAPTOP).slice(1)}`],
    ] as const) {
      const response = await h.call("POST", path, { token: h.token, body, headers: json });
      expect(response.status).toBe(422);
      expect(response.json).toEqual({ detail: "Campo '__proto__': no está permitido" });
    }
    expect(h.products.products).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("query strings and request targets that no route can take are 4xx {detail}", () => {
  test("a category in the query over 100 characters is 422 naming it, alone or repeated", async () => {
    const h = await createHarness();
    const long = "x".repeat(101);
    for (const path of [`/products?category=${long}`, `/products?category=a&category=${long}`]) {
      const response = await h.call("GET", path, { token: h.token });
      expect({ path, status: response.status }).toEqual({ path, status: 422 });
      expect(response.json.detail).toContain("'category'");
    }
  });

  test("a limit in the query that is not a whole number in range is 422 naming it", async () => {
    const h = await createHarness();
    for (const limit of ["1.5", "0", "abc", "1e3"]) {
      const response = await h.call("GET", `/products?limit=${limit}`, { token: h.token });
      expect({ limit, status: response.status }).toEqual({ limit, status: 422 });
      expect(response.json).toEqual({ detail: "Campo 'limit': debe ser un entero entre 1 y 100" });
    }
  });

  test("without a usable Host (HTTP/1.0 may omit it), or CONNECT's host:port: 400 {detail}", async () => {
    const h = await createHarness();
    const server = h.app.listen({ hostname: "127.0.0.1", port: 0, reusePort: false });
    try {
      const port = server.server?.port ?? 0;
      for (const request of [
        "GET /health/live HTTP/1.0\r\n\r\n",
        "GET /health/live HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n",
        "GET /health/live HTTP/1.1\r\nHost: x:99999\r\nConnection: close\r\n\r\n",
        "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nConnection: close\r\n\r\n",
      ]) {
        const answer = await sendRaw(port, request);
        expect({ request, status: answer.status }).toEqual({ request, status: 400 });
        expect(JSON.parse(answer.body)).toEqual({
          detail: "La dirección de la petición no es válida: falta la cabecera Host, no es válida, o no es una ruta",
        });
      }
      // An absolute-form target names the host itself.
      const absolute = await sendRaw(
        port,
        "GET http://localhost/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      );
      expect(absolute.status).toBe(200);
    } finally {
      await h.app.stop();
    }
  });
});

describe("503 answers say when to retry", () => {
  test("database down: Retry-After 5; embedder or every generator down: Retry-After 10", async () => {
    const h = await createHarness();
    expect((await h.call("POST", "/products/", { token: h.token, json: LAPTOP })).status).toBe(201);
    const search = () => h.call("POST", "/products/search", { token: h.token, json: { query: "portátil" } });

    h.health.down = true;
    const health = await h.call("GET", "/");
    expect([health.status, health.headers.get("retry-after")]).toEqual([503, "5"]);
    h.health.down = false;

    h.products.down = true;
    const database = await search();
    expect([database.status, database.headers.get("retry-after")]).toEqual([503, "5"]);
    h.products.down = false;

    h.embedder.mode = "fail";
    const embedder = await search();
    expect([embedder.status, embedder.headers.get("retry-after")]).toEqual([503, "10"]);
    h.embedder.mode = "ok";

    h.generator.fail = true;
    const generator = await search();
    expect([generator.status, generator.headers.get("retry-after")]).toEqual([503, "10"]);
  });
});

describe("every request has a time budget", () => {
  test("a create whose embedding outlasts the budget is 503 with Retry-After, stores nothing, and cancels the call", async () => {
    const h = await createHarness({ settings: { requestTimeoutMs: 100 } });
    h.embedder.delayMs = 60_000;
    const response = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(response.json).toEqual({
      detail: "La petición ha superado el tiempo máximo de respuesta. Inténtelo de nuevo más tarde",
    });
    expect(h.embedder.signals[0]?.aborted).toBe(true);
    expect(h.products.products).toEqual([]);
  });

  test("a search whose recommendation outlasts the budget is 503, and the model's request is cancelled", async () => {
    const h = await createHarness({ settings: { requestTimeoutMs: 100 } });
    // Stored directly: a create through the app would have the same 100 ms, which a loaded machine can pass.
    const [vector] = await h.embedder.embed([`${LAPTOP.name}\n${LAPTOP.description}`], "document");
    await h.products.in("default").add({ product: LAPTOP, embedding: vector as number[], contentDigest: "laptop" });
    h.generator.delayMs = 60_000;
    let generatorSignal: AbortSignal | undefined;
    const generate = h.generator.generate.bind(h.generator);
    h.generator.generate = (request, signal) => {
      generatorSignal = signal;
      return generate(request, signal);
    };
    const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "portátil" } });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(generatorSignal?.aborted).toBe(true);
  });
});

describe("Idempotency-Key on POST /products/", () => {
  test("the same key and body answer the first product again, with Idempotent-Replayed, storing one", async () => {
    const h = await createHarness();
    const send = (body: object) =>
      h.call("POST", "/products/", { token: h.token, json: body, headers: { "idempotency-key": "pedido-7" } });
    const first = await send(LAPTOP);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await send(LAPTOP);
    expect(retry.status).toBe(201);
    expect(retry.json).toEqual(first.json);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(h.products.products).toHaveLength(1);

    const reused = await send({ ...LAPTOP, category: "otra" });
    expect(reused.status).toBe(422);
    expect(reused.json).toEqual({ detail: "La clave de idempotencia ya se usó con otro cuerpo de petición" });
    expect(h.products.products).toHaveLength(1);
  });

  test("an API key's creates are idempotent too, and its keys are its own, not its user's", async () => {
    const h = await createHarness();
    const { key: apiKey } = await h.keyOf({ actions: ["products.write"] });
    const send = (authorization: string, body: object) =>
      h.call("POST", "/products/", { json: body, headers: { authorization, "idempotency-key": "pedido-8" } });
    const first = await send(`Bearer ${apiKey}`, LAPTOP);
    const retry = await send(`Bearer ${apiKey}`, LAPTOP);
    expect([first.status, retry.status]).toEqual([201, 201]);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.json).toEqual(first.json);
    // The user's own "pedido-8" is another key: a new product, not the key's replay.
    const mine = await send(`Bearer ${h.token}`, LAPTOP);
    expect(mine.headers.get("idempotent-replayed")).toBeNull();
    expect(h.products.products).toHaveLength(2);
  });

  test("a malformed key is 400 and stores nothing", async () => {
    const h = await createHarness();
    for (const key of ["", "x".repeat(256), "clave\u00f1"]) {
      const response = await h.call("POST", "/products/", {
        token: h.token,
        json: LAPTOP,
        headers: { "idempotency-key": key },
      });
      expect(response.status).toBe(400);
      expect(response.json.detail).toContain("Idempotency-Key");
    }
    expect(h.products.products).toEqual([]);
  });
});

describe("tokens die with the password they were issued under", () => {
  test("after a password change the old token is 401, a new login works", async () => {
    const h = await createHarness();
    const manage = new ManageUsers({ users: h.users, hasher: { hash: async (p) => p, verify: async () => true } });
    expect((await h.call("POST", "/products/", { token: h.token, json: LAPTOP })).status).toBe(201);

    await manage.resetPassword(USERNAME, "una-clave-nueva");
    const old = await h.call("POST", "/products/", { token: h.token, json: LAPTOP });
    expect(old.status).toBe(401);
    expect(old.headers.get("www-authenticate")).toBe("Bearer");
    expect(old.json.detail).toContain("contraseña ha cambiado");
    expect(h.products.products).toHaveLength(1);
  });

  test("after the user is removed the token is 401", async () => {
    const h = await createHarness();
    await h.users.remove(USERNAME);
    const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "x" } });
    expect(response.status).toBe(401);
  });

  test("a fresh login after the change gives a working token", async () => {
    const h = await createHarness();
    await h.users.updatePassword(USERNAME, (await h.users.findByUsername(USERNAME))?.passwordHash ?? "");
    const login = await h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } });
    expect(login.status).toBe(200);
    const token = login.json.access_token as string;
    expect((await h.call("POST", "/products/", { token, json: LAPTOP })).status).toBe(201);
    expect((await h.call("POST", "/products/", { token: h.token, json: LAPTOP })).status).toBe(401);
  });
});
