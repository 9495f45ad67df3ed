import { describe, expect, test } from "bun:test";
import { createHarness, PASSWORD, SECRET, USERNAME } from "./harness.ts";

const PRODUCT = { name: "Portátil", description: "Ordenador portátil ligero", category: "informática" };
const READY = "La API de búsqueda semántica de SKU está lista y la base de datos está conectada";

/** Signs of a leaked stack trace or internals. */
function expectNothingInternal(text: string) {
  expect(text).not.toContain(SECRET);
  expect(text).not.toMatch(/\bat .*\(.*:\d+:\d+\)|\.ts:\d+|node_modules|Error:/);
}

describe("GET /", () => {
  test("200 with the Spanish ready message after the database answers", async () => {
    const h = await createHarness();
    const response = await h.call("GET", "/");
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ message: READY });
  });

  test("503 when the database does not answer", async () => {
    const h = await createHarness();
    h.health.down = true;
    const response = await h.call("GET", "/");
    expect(response.status).toBe(503);
    expect(response.json).toEqual({ detail: "La base de datos no está disponible" });
  });

  test("503 even when the health check fails with an untyped error, whose cause goes to the log", async () => {
    const h = await createHarness();
    h.health.ping = async () => {
      throw new Error("connection refused");
    };
    const response = await h.call("GET", "/");
    expect(response.status).toBe(503);
    expect(response.json).toEqual({ detail: "La base de datos no está disponible" });
    const failure = h.logs.find((event) => event.event === "request_failed");
    expect(failure?.error).toBeInstanceOf(Error);
    expect((failure?.error as Error | undefined)?.cause).toEqual(new Error("connection refused"));
  });
});

describe("routing and body errors", () => {
  test("an unknown route is 404 {detail}", async () => {
    const h = await createHarness();
    for (const [method, path] of [
      ["GET", "/nada"],
      ["POST", "/products/123/extra"],
      ["GET", "/auth"],
    ] as const) {
      const response = await h.call(method, path);
      expect(response.status).toBe(404);
      expect(response.json).toEqual({ detail: "No encontrado" });
    }
  });

  test("a known path with the wrong method is 405 with Allow", async () => {
    const h = await createHarness();
    const cases = [
      ["DELETE", "/", "GET, HEAD"],
      ["POST", "/", "GET, HEAD"],
      ["GET", "/auth/login", "POST"],
      ["DELETE", "/products/", "POST, GET, HEAD"],
      ["POST", "/products/7", "GET, HEAD, PATCH, PUT, DELETE"],
      ["PUT", "/products", "POST, GET, HEAD"],
    ] as const;
    for (const [method, path, allow] of cases) {
      const response = await h.call(method, path, { token: h.token });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe(allow);
      expect(response.json).toEqual({ detail: "Método no permitido" });
    }
  });

  test("unparseable JSON is 400", async () => {
    const h = await createHarness();
    for (const [path, body] of [
      ["/products/", '{"name": "x",'],
      ["/products/search", "{query: 'x'}"],
      ["/auth/login", "{"],
    ] as const) {
      const response = await h.call("POST", path, {
        token: h.token,
        body,
        headers: { "content-type": "application/json" },
      });
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ detail: "El cuerpo de la petición no es un JSON válido" });
    }
  });

  test("a JSON route given another content type is 415", async () => {
    const h = await createHarness();
    const text = await h.call("POST", "/products/", {
      token: h.token,
      body: JSON.stringify(PRODUCT),
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(415);
    expect(text.json.detail).toContain("application/json");
    const form = await h.call("POST", "/products/search", { token: h.token, form: { query: "x" } });
    expect(form.status).toBe(415);
    const login = await h.call("POST", "/auth/login", {
      body: "username=ana",
      headers: { "content-type": "text/plain" },
    });
    expect(login.status).toBe(415);
  });

  test("a body over maxBodyBytes is 413, by Content-Length and by the bytes actually sent", async () => {
    const h = await createHarness({ settings: { maxBodyBytes: 1024 } });
    const declared = await h.call("POST", "/products/", {
      token: h.token,
      body: JSON.stringify({ ...PRODUCT, description: "x".repeat(2000) }),
      headers: { "content-type": "application/json", "content-length": "2100" },
    });
    expect(declared.status).toBe(413);
    expect(declared.json).toEqual({ detail: "El cuerpo de la petición supera el máximo de 1024 bytes" });
    // A declared length within the limit is not believed: the body read whole is counted too.
    const understated = await h.call("POST", "/products/search", {
      token: h.token,
      body: JSON.stringify({ query: "x".repeat(3000) }),
      headers: { "content-type": "application/json", "content-length": "100" },
    });
    expect(understated.status).toBe(413);

    const chunk = new TextEncoder().encode(`{"query": "${"x".repeat(300)}`);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(chunk);
        controller.close();
      },
    });
    const streamed = await h.call("POST", "/products/search", {
      token: h.token,
      body: chunked,
      headers: { "content-type": "application/json" },
    });
    expect(streamed.status).toBe(413);

    const login = await h.call("POST", "/auth/login", { form: { username: USERNAME, password: "x".repeat(2000) } });
    expect(login.status).toBe(413);

    const small = await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    expect(small.status).toBe(201);
  });

  test("a database down during the token check is 503, not 401 or 500", async () => {
    const h = await createHarness();
    h.users.down = true;
    const create = await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    expect(create.status).toBe(503);
    const login = await h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } });
    expect(login.status).toBe(503);
  });

  test("an unexpected failure during the token check is a logged 500, not a 400 blamed on the client", async () => {
    const h = await createHarness();
    h.users.findById = async () => {
      throw new Error("canceling statement due to statement timeout");
    };
    const create = await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    expect(create.status).toBe(500);
    expect(create.json).toEqual({ detail: "Error interno del servidor" });
    expect(
      JSON.stringify(
        h.logs.filter((event) => event.event === "request_failed"),
        (_key, value: unknown) =>
          value instanceof Error ? `${value.message} ${String((value.cause as Error | undefined)?.message)}` : value,
      ),
    ).toContain("statement timeout");
  });

  test("an unexpected error is 500 with a generic detail; the real error goes to the log", async () => {
    const h = await createHarness();
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    h.generator.generate = async () => {
      throw new TypeError(`fallo inesperado con ${SECRET}`);
    };
    const response = await h.call("POST", "/products/search", { token: h.token, json: { query: "portátil" } });
    expect(response.status).toBe(500);
    expect(response.json).toEqual({ detail: "Error interno del servidor" });
    expectNothingInternal(response.text);
    const failure = h.logs.find((event) => event.event === "request_failed");
    expect(failure).toMatchObject({ level: "error", method: "POST", path: "/products/search", status: 500 });
    expect(failure?.error).toBeInstanceOf(TypeError);
  });
});

describe("headers, logs and leaks", () => {
  test("every answer is JSON with nosniff and no-store, errors included", async () => {
    const h = await createHarness();
    const responses = [
      await h.call("GET", "/"),
      await h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } }),
      await h.call("POST", "/auth/login", { form: { username: USERNAME, password: "mala" } }),
      await h.call("POST", "/products/", { json: PRODUCT }),
      await h.call("GET", "/nada"),
      await h.call("DELETE", "/"),
    ];
    for (const response of responses) {
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("content-type")).toStartWith("application/json");
    }
  });

  test("one log line per request with method, path, status and ms, and never a password or token", async () => {
    const h = await createHarness();
    const login = await h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } });
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    await h.call("POST", "/products/search?token=abc", { token: h.token, json: { query: "portátil" } });
    await h.call("GET", "/nada");

    const requests = h.logs.filter((event) => event.event === "request");
    expect(requests.map(({ method, path, status }) => [method, path, status])).toEqual([
      ["POST", "/auth/login", 200],
      ["POST", "/products/", 201],
      ["POST", "/products/search", 200],
      ["GET", "/nada", 404],
    ]);
    for (const event of requests) expect(event.ms).toBeNumber();
    const everything = JSON.stringify(h.logs);
    for (const secret of [PASSWORD, h.token, login.json.access_token as string, SECRET, "Bearer"]) {
      expect(everything).not.toContain(secret);
    }
  });

  test("no response ever carries a stack trace or the JWT secret", async () => {
    const h = await createHarness({ settings: { maxBodyBytes: 4096 } });
    const json = { "content-type": "application/json" };
    const responses = [
      await h.call("GET", "/"),
      await h.call("GET", "/nada"),
      await h.call("PATCH", "/products/"),
      await h.call("POST", "/auth/login", { form: { username: USERNAME, password: "mala" } }),
      await h.call("POST", "/auth/login", { json: { username: 1 } }),
      await h.call("POST", "/auth/login", { body: "{", headers: json }),
      await h.call("POST", "/products/", { json: PRODUCT, headers: { authorization: "Bearer x.y.z" } }),
      await h.call("POST", "/products/", { token: h.token, json: { ...PRODUCT, embedding: [1] } }),
      await h.call("POST", "/products/", { token: h.token, body: "{", headers: json }),
      await h.call("POST", "/products/", { token: h.token, body: "x".repeat(5000), headers: json }),
      await h.call("POST", "/products/search", { token: h.token, json: { query: "x", limit: "5" } }),
      await h.call("POST", "/products/search", { token: h.token, body: "null", headers: json }),
    ];
    h.embedder.mode = "fail";
    responses.push(await h.call("POST", "/products/", { token: h.token, json: PRODUCT }));
    h.health.down = true;
    responses.push(await h.call("GET", "/"));

    for (const response of responses) {
      expect(response.status).not.toBe(500);
      if (response.status >= 400) expect(Object.keys(response.json)).toEqual(["detail"]);
      expectNothingInternal(response.text);
    }
  });
});

describe("OpenAPI", () => {
  test("documents the routes at /openapi with the project name, version and the bearer scheme", async () => {
    const h = await createHarness({ settings: { projectName: "Catálogo SKU", version: "2.3.4" } });
    const page = await h.call("GET", "/openapi");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");

    const spec = (await h.call("GET", "/openapi/json")).json as {
      info: { title: string; version: string };
      components: { securitySchemes: Record<string, unknown> };
      paths: Record<string, Record<string, { security?: unknown; requestBody?: { content: Record<string, unknown> } }>>;
    };
    expect(spec.info).toMatchObject({ title: "Catálogo SKU", version: "2.3.4" });
    expect(spec.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(["/", "/auth/login", "/products/", "/products/search"]),
    );
    expect(spec.paths["/products/"]?.post?.security).toEqual([
      { bearerAuth: [] },
      { oauth2: [] },
      { bearerKey: [] },
      { apiKey: [] },
    ]);
    expect(Object.keys(spec.paths["/auth/login"]?.post?.requestBody?.content ?? {})).toContain(
      "application/x-www-form-urlencoded",
    );
    expect(Object.keys(spec.paths["/products/search"]?.post?.requestBody?.content ?? {})).toEqual(["application/json"]);
  });
});
