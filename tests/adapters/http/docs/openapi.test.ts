import { describe, expect, test } from "bun:test";
import { createHarness, type Harness, type HarnessOptions, PASSWORD, USERNAME, USERNAME_POLICY } from "../harness.ts";

const MINUTE = 60_000;
const LIMITS = { search: { limit: 1, windowMs: MINUTE }, write: { limit: 3, windowMs: MINUTE } };
const SHOES = {
  name: "Zapatillas de trail Vento",
  description: "Zapatillas ligeras e impermeables",
  category: "calzado deportivo",
  sku: "VEN-TRAIL-42",
};

interface Example {
  summary: string;
  value: { detail: string };
}

interface ResponseDoc {
  description: string;
  headers?: Record<string, { $ref: string }>;
  content?: Record<
    string,
    { schema: { description?: string; $ref?: string }; example?: string; examples?: Record<string, Example> }
  >;
}

interface PropertyDoc {
  default?: unknown;
  description?: string;
}

interface OperationDoc {
  summary: string;
  description?: string;
  security: Record<string, string[]>[];
  requestBody?: { content: Record<string, { schema: { properties: Record<string, PropertyDoc> } }> };
  parameters?: { name: string; in: string; required?: boolean; schema: object }[];
  responses: Record<string, ResponseDoc>;
  /** The permission a key needs among its actions (auth-macro.ts). */
  "x-permission"?: string;
}

interface Document {
  info: { license?: { name: string } };
  servers: { url: string }[];
  paths: Record<string, Record<string, OperationDoc>>;
  components: {
    securitySchemes: Record<string, unknown>;
    headers: Record<string, unknown>;
    schemas: Record<string, { properties: object }>;
  };
}

async function documentOf(options: HarnessOptions = {}) {
  const h = await createHarness(options);
  const response = await h.call("GET", "/openapi/json");
  expect(response.status).toBe(200);
  return { h, document: response.json as Document };
}

function operations(document: Document) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );
}

/**
 * Numbers and quoted names differ with the settings, the moment and the request (limits, seconds
 * left, the field or id concerned): compare the sentences around them.
 */
const shape = (detail: string) => detail.replace(/'[^']*'/g, "'…'").replace(/\d+/g, "#");

// Many requests each, some of them logins (password hashing): generous timeouts for a busy machine.
describe("every answer the service gives is documented for its operation, with a body it really sends", () => {
  /** Each case: the operation (as the document names it) and how to provoke an answer. */
  type Case = [method: string, path: string, send: (h: Harness) => ReturnType<Harness["call"]>];
  const json = { "content-type": "application/json" };
  const events = { accept: "text/event-stream" };
  const cases: Case[] = [
    ["GET", "/", (h) => h.call("GET", "/")],
    ["GET", "/health/live", (h) => h.call("GET", "/health/live")],
    ["GET", "/health/ready", (h) => h.call("GET", "/health/ready")],
    ["POST", "/auth/login", (h) => h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } })],
    ["POST", "/auth/login", (h) => h.call("POST", "/auth/login", { form: { username: USERNAME, password: "mala" } })],
    ["POST", "/auth/login", (h) => h.call("POST", "/auth/login", { form: { username: USERNAME } })],
    ["POST", "/auth/login", (h) => h.call("POST", "/auth/login", { body: "{", headers: json })],
    [
      "POST",
      "/auth/login",
      (h) => h.call("POST", "/auth/login", { body: "a", headers: { "content-type": "text/plain" } }),
    ],
    ["POST", "/auth/login", (h) => h.call("POST", "/auth/login", { body: "x".repeat(70_000), headers: json })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: h.token, json: SHOES })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { json: SHOES })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { json: SHOES, headers: { authorization: "Basic x" } })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: "no-es-un-jwt", json: SHOES })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: h.token, json: { ...SHOES, name: " " } })],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: h.token, json: { ...SHOES, embedding: [1] } })],
    [
      "POST",
      "/products/",
      (h) => h.call("POST", "/products/", { token: h.token, json: { name: "x", description: "" } }),
    ],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: h.token, body: "{", headers: json })],
    [
      "POST",
      "/products/",
      (h) => h.call("POST", "/products/", { token: h.token, json: SHOES, headers: { "idempotency-key": "" } }),
    ],
    ["POST", "/products/", (h) => h.call("POST", "/products/", { token: h.token, form: { name: "x" } })],
    ["GET", "/products/", (h) => h.call("GET", "/products/", { token: h.token })],
    ["GET", "/products/", (h) => h.call("GET", "/products/?limit=abc", { token: h.token })],
    ["GET", "/products/", (h) => h.call("GET", "/products/?cursor=x", { token: h.token })],
    ["GET", "/products/", (h) => h.call("GET", "/products/?category=", { token: h.token })],
    ["GET", "/products/", (h) => h.call("GET", "/products/?page=2", { token: h.token })],
    ["GET", "/products/categories", (h) => h.call("GET", "/products/categories", { token: h.token })],
    ["GET", "/products/categories", (h) => h.call("GET", "/products/categories")],
    ["GET", "/products/{id}", (h) => h.call("GET", "/products/42", { token: h.token })],
    ["GET", "/products/{id}", (h) => h.call("GET", "/products/42")],
    ["PATCH", "/products/{id}", (h) => h.call("PATCH", "/products/42", { token: h.token, json: { name: "x" } })],
    ["PATCH", "/products/{id}", (h) => h.call("PATCH", "/products/42", { token: h.token, json: {} })],
    ["PUT", "/products/{id}", (h) => h.call("PUT", "/products/42", { token: h.token, json: { name: "x" } })],
    ["DELETE", "/products/{id}", (h) => h.call("DELETE", "/products/42", { token: h.token })],
    ["POST", "/products/search", (h) => h.call("POST", "/products/search", { token: h.token, json: { query: "x" } })],
    ["POST", "/products/search", (h) => h.call("POST", "/products/search", { token: h.token, json: {} })],
    [
      "POST",
      "/products/search",
      (h) => h.call("POST", "/products/search", { token: h.token, json: { query: "x", limit: 999 } }),
    ],
    [
      "POST",
      "/products/search",
      (h) => h.call("POST", "/products/search", { token: h.token, json: { query: "x", mode: "hybrid", alpha: 2 } }),
    ],
    ...[
      { query: " " },
      { query: "x", alpha: 0.5 },
      { query: "x", mode: "lexical" },
      { query: "x", category: "" },
      { query: "x", category: Array.from({ length: 21 }, (_, i) => `c${i}`) },
    ].map(
      (json): Case => ["POST", "/products/search", (h) => h.call("POST", "/products/search", { token: h.token, json })],
    ),
    [
      "POST",
      "/products/search",
      (h) => h.call("POST", "/products/search", { token: h.token, json: { query: "x" }, headers: events }),
    ],
    [
      "POST",
      "/products/search",
      (h) =>
        h.call("POST", "/products/search", {
          token: h.token,
          json: { query: "x" },
          headers: { ...events, "last-event-id": "a:end" },
        }),
    ],
    ["GET", "/products/search", (h) => h.call("GET", "/products/search?query=x&limit=2", { token: h.token })],
    ["GET", "/products/search", (h) => h.call("GET", "/products/search?query=x", { token: h.token, headers: events })],
    [
      "GET",
      "/products/search",
      (h) =>
        h.call("GET", "/products/search?query=x", { token: h.token, headers: { ...events, "last-event-id": "a:end" } }),
    ],
    ["GET", "/products/search", (h) => h.call("GET", "/products/search?query=x")],
    ...["limit=3", "query=%20", "query=x&limit=0", "query=x&limit=2.5", "query=x&top_k=1", "query=x&alpha=0.5"].map(
      (query): Case => [
        "GET",
        "/products/search",
        (h) => h.call("GET", `/products/search?${query}`, { token: h.token }),
      ],
    ),
    [
      "GET",
      "/products/search",
      (h) => h.call("GET", `/products/search?query=x&category=${"c".repeat(101)}`, { token: h.token }),
    ],
    ["POST", "/products/bulk", (h) => h.call("POST", "/products/bulk", { token: h.token, json: [SHOES] })],
    ["POST", "/products/bulk", (h) => h.call("POST", "/products/bulk", { token: h.token, json: { a: 1 } })],
    ["POST", "/products/bulk", (h) => h.call("POST", "/products/bulk", { token: h.token, json: [] })],
    ["POST", "/products/bulk", (h) => h.call("POST", "/products/bulk", { token: h.token, form: { a: "b" } })],
    [
      "POST",
      "/products/bulk",
      (h) => h.call("POST", "/products/bulk", { token: h.token, json: [SHOES, SHOES, SHOES, SHOES] }),
    ],
    [
      "POST",
      "/products/bulk",
      (h) => h.call("POST", "/products/bulk", { token: h.token, json: [SHOES], headers: { prefer: "respond-async" } }),
    ],
    // Job 1 is the one asked for with respond-async, above (smaller imports answered at once have none).
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/1", { token: h.token })],
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/1")],
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/999", { token: h.token })],
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/x", { token: h.token })],
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/1?limit=0", { token: h.token })],
    ["GET", "/jobs/{id}", (h) => h.call("GET", "/jobs/1?cursor=abc", { token: h.token })],
    [
      "GET",
      "/products/{id}",
      (h) => h.call("GET", "/products/1", { token: h.token, headers: { "x-read-after": "no es una posición" } }),
    ],
  ];

  test("in normal operation and on bad requests", async () => {
    const { document } = await documentOf();
    const h = await createHarness({ settings: { bulk: { maxBytes: 1024 * 1024, maxItems: 3 } } });
    for (const [method, path, send] of cases) expectDocumented(document, method, path, await send(h));
  }, 30_000);

  test("when a product exists: conflicts, changes, deletion", async () => {
    const { document } = await documentOf();
    const h = await createHarness();
    const created = await h.call("POST", "/products/", { token: h.token, json: SHOES });
    const id = created.json.id as number;
    const other = await h.call("POST", "/products/", { token: h.token, json: { ...SHOES, sku: "OTRO" } });
    const sent: [string, string, Awaited<ReturnType<Harness["call"]>>][] = [
      ["POST", "/products/", await h.call("POST", "/products/", { token: h.token, json: SHOES })],
      ["GET", "/products/{id}", await h.call("GET", `/products/${id}`, { token: h.token })],
      ["PATCH", "/products/{id}", await h.call("PATCH", `/products/${id}`, { token: h.token, json: { name: "y" } })],
      [
        "PATCH",
        "/products/{id}",
        await h.call("PATCH", `/products/${other.json.id}`, { token: h.token, json: { sku: SHOES.sku } }),
      ],
      ["PUT", "/products/{id}", await h.call("PUT", `/products/${id}`, { token: h.token, json: SHOES })],
      ["DELETE", "/products/{id}", await h.call("DELETE", `/products/${id}`, { token: h.token })],
    ];
    for (const [method, path, response] of sent) expectDocumented(document, method, path, response);
  }, 30_000);

  test("when a dependency fails, a client is throttled or spends its budget", async () => {
    const { document } = await documentOf({ rateLimits: LIMITS });
    const h = await createHarness({ rateLimits: LIMITS });
    const sent: [string, string, Awaited<ReturnType<Harness["call"]>>][] = [];
    for (let i = 0; i <= USERNAME_POLICY.maxFailures; i++) {
      const form = { username: USERNAME, password: "mala" };
      sent.push(["POST", "/auth/login", await h.call("POST", "/auth/login", { form })]);
    }
    for (let i = 0; i < 2; i++) {
      const search = { token: h.token, json: { query: "zapatillas" } };
      sent.push(["POST", "/products/search", await h.call("POST", "/products/search", search)]);
    }
    h.embedder.mode = "fail";
    sent.push(["POST", "/products/", await h.call("POST", "/products/", { token: h.token, json: SHOES })]);
    sent.push(["DELETE", "/products/{id}", await h.call("DELETE", "/products/42", { token: h.token })]);
    // 201 products cost 3 units: more than the 2 left, so refused whole.
    const many = Array.from({ length: 201 }, (_, i) => ({ ...SHOES, sku: `S-${i}` }));
    sent.push(["POST", "/products/bulk", await h.call("POST", "/products/bulk", { token: h.token, json: many })]);
    for (let i = 0; i < 2; i++) {
      sent.push(["DELETE", "/products/{id}", await h.call("DELETE", "/products/42", { token: h.token })]);
    }
    sent.push(["POST", "/products/bulk", await h.call("POST", "/products/bulk", { token: h.token, json: [SHOES] })]);
    h.startup.embedderLoaded = false;
    sent.push(["GET", "/health/ready", await h.call("GET", "/health/ready")]);
    h.health.down = true;
    sent.push(["GET", "/", await h.call("GET", "/")]);
    sent.push(["GET", "/health/ready", await h.call("GET", "/health/ready")]);

    const statuses = new Set(sent.map(([, , response]) => response.status));
    for (const status of [401, 429, 503]) expect(statuses).toContain(status);
    for (const [method, path, response] of sent) expectDocumented(document, method, path, response);
  }, 30_000);

  test("GET /metrics on the service's port, with and without its token", async () => {
    const metricsToken = "token-de-metricas-0123456789";
    const { document, h } = await documentOf({ metricsToken });
    const scrape = { headers: { authorization: `Bearer ${metricsToken}` } };
    const sent = [await h.call("GET", "/metrics", scrape), await h.call("GET", "/metrics", { token: h.token })];
    expect(sent.map((response) => response.status)).toEqual([200, 401]);
    for (const response of sent) expectDocumented(document, "GET", "/metrics", response);
  });

  test("a body announced over the limit is 413 on any route, GET / included", async () => {
    const { document, h } = await documentOf();
    const response = await h.call("GET", "/", { headers: { "content-length": String(64 * 1024 + 1) } });
    expect(response.status).toBe(413);
    expectDocumented(document, "GET", "/", response);
  });
});

/** The answer's status is documented for the operation and, for an error, its `detail` is one of the examples. */
function expectDocumented(
  document: Document,
  method: string,
  path: string,
  response: Awaited<ReturnType<Harness["call"]>>,
) {
  const operation = document.paths[path]?.[method.toLowerCase()];
  expect(operation, `${method} ${path} in the document`).toBeDefined();
  const status = String(response.status);
  const documented = operation?.responses[status];
  expect(documented, `${method} ${path} documents ${status}`).toBeDefined();
  if (response.status < 400) return;
  const examples = Object.values(documented?.content?.["application/json"]?.examples ?? {});
  const details = examples.map((example) => shape(example.value.detail));
  expect(details, `${method} ${path} ${status}: "${response.json.detail}"`).toContain(shape(response.json.detail));
}

describe("the document", () => {
  test("a method a path does not take is 405 with Allow, documented on each of the path's operations", async () => {
    const { document, h } = await documentOf();
    for (const [method, path, documentedPath] of [
      ["GET", "/auth/login", "/auth/login"],
      ["POST", "/products/42", "/products/{id}"],
      ["DELETE", "/health/live", "/health/live"],
    ] as const) {
      const response = await h.call(method, path, { token: h.token });
      expect(response.status).toBe(405);
      const operationsOfPath = Object.values(document.paths[documentedPath] ?? {});
      expect(operationsOfPath.length).toBeGreaterThan(0);
      for (const operation of operationsOfPath) {
        const documented = operation.responses["405"];
        expect(documented?.headers?.Allow).toEqual({ $ref: "#/components/headers/Allow" });
        expect(documented?.description).toContain(response.headers.get("allow") as string);
        const examples = Object.values(documented?.content?.["application/json"]?.examples ?? {});
        expect(examples.map((example) => example.value)).toContainEqual(response.json);
      }
    }
  });

  test("every operation documents the 400 of a request URL without a usable Host", async () => {
    const { document } = await documentOf();
    for (const { method, path, operation } of operations(document)) {
      const examples = Object.values(operation.responses["400"]?.content?.["application/json"]?.examples ?? {});
      expect(
        examples.map((example) => example.value.detail),
        `${method} ${path}`,
      ).toContain("La dirección de la petición no es válida: falta la cabecera Host, no es válida, o no es una ruta");
    }
  });

  test("types as generated clients read them: integers are integers, the path id too; Idempotency-Key is a header", async () => {
    const { document } = await documentOf();
    const text = JSON.stringify(document);
    // No number that means a whole one is left as `number` (a generated client would take 2.5).
    expect(text).not.toContain('"multipleOf":1');
    expect(document.components.schemas.Product?.properties).toMatchObject({ id: { type: "integer" } });
    const parameters = (method: string, path: string) => document.paths[path]?.[method]?.parameters;
    for (const method of ["get", "patch", "put", "delete"]) {
      expect(parameters(method, "/products/{id}")?.filter((parameter) => parameter.in === "path")).toEqual([
        expect.objectContaining({ name: "id", in: "path", required: true, schema: { type: "integer", minimum: 1 } }),
      ]);
    }
    expect(parameters("post", "/products/")).toContainEqual(
      expect.objectContaining({ name: "Idempotency-Key", in: "header", required: false }),
    );
    const searchBody = document.paths["/products/search"]?.post?.requestBody?.content["application/json"]?.schema;
    expect(searchBody?.properties.limit).toMatchObject({ type: "integer", minimum: 1, maximum: 50 });
    expect(parameters("get", "/products/search")).toContainEqual(
      expect.objectContaining({ name: "limit", in: "query", schema: expect.objectContaining({ type: "integer" }) }),
    );
    expect(parameters("get", "/products/search")).toContainEqual(
      expect.objectContaining({ name: "Last-Event-ID", in: "header" }),
    );
  });

  test("X-Read-After: every catalogue write's success carries it, every read takes it, a malformed one is a 400", async () => {
    const { document } = await documentOf();
    const writes = operations(document).filter(
      ({ method, path }) => path.startsWith("/products") && method !== "GET" && path !== "/products/search",
    );
    expect(writes.map(({ method, path }) => `${method} ${path}`).sort()).toEqual([
      "DELETE /products/{id}",
      "PATCH /products/{id}",
      "POST /products/",
      "POST /products/bulk",
      "PUT /products/synonyms",
      "PUT /products/{id}",
    ]);
    for (const { method, path, operation } of writes) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status.startsWith("2"))
          expect(response.headers, `${method} ${path} ${status}`).toHaveProperty("X-Read-After");
        else expect(response.headers ?? {}, `${method} ${path} ${status}`).not.toHaveProperty("X-Read-After");
      }
    }
    expect(document.components.headers["X-Read-After"]).toMatchObject({ schema: { type: "string" } });
    const reads = [
      ["get", "/products/"],
      ["get", "/products/categories"],
      ["get", "/products/{id}"],
      ["get", "/products/search"],
      ["post", "/products/search"],
    ] as const;
    for (const [method, path] of reads) {
      expect(document.paths[path]?.[method]?.parameters, `${method} ${path}`).toContainEqual(
        expect.objectContaining({ name: "X-Read-After", in: "header", required: false }),
      );
      const examples = Object.values(
        document.paths[path]?.[method]?.responses["400"]?.content?.["application/json"]?.examples ?? {},
      );
      expect(examples.map((example) => example.value.detail).join(" ")).toContain("X-Read-After no es válida");
    }
  });

  test("says who may call each operation: public ones need nothing, the catalogue and the keys a credential", async () => {
    const { document } = await documentOf();
    const credential: Record<string, string[]>[] = [
      { bearerAuth: [] },
      { oauth2: [] },
      { bearerKey: [] },
      { apiKey: [] },
    ];
    for (const { method, path, operation } of operations(document)) {
      const protectedPath =
        path === "/auth/me" ||
        ["/products", "/jobs", "/keys", "/events", "/analytics", "/catalogues"].some((prefix) =>
          path.startsWith(prefix),
        );
      const expected = !protectedPath
        ? []
        : method === "GET" && path.endsWith("/products/search")
          ? [...credential, { queryKey: [] }]
          : credential;
      expect({ method, path, security: operation.security }).toEqual({ method, path, security: expected });
      // Each names the permission a key needs among its actions.
      if (protectedPath) expect(operation["x-permission"]).toBeString();
      if (protectedPath) expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["401", "403"]));
    }
    expect(document.components.securitySchemes.apiKey).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "X-API-Key",
    });
    expect(document.components.securitySchemes.queryKey).toMatchObject({ type: "apiKey", in: "query", name: "key" });
    expect(document.components.securitySchemes.bearerKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.components.securitySchemes.oauth2).toMatchObject({
      type: "oauth2",
      flows: { password: { tokenUrl: "/auth/login", scopes: {} } },
    });
    expect(document.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(document.info.license?.name).toBe("MIT");
  });

  test("GET /metrics is there only when served on this port, behind the metrics token and not a user's", async () => {
    expect((await documentOf()).document.paths["/metrics"]).toBeUndefined();
    const { document } = await documentOf({ metricsToken: "token-de-metricas-0123456789" });
    expect(document.paths["/metrics"]?.get?.security).toEqual([{ metricsToken: [] }]);
    expect(document.components.securitySchemes.metricsToken).toMatchObject({ type: "http", scheme: "bearer" });
    expect(Object.keys(document.paths["/metrics"]?.get?.responses["200"]?.content ?? {})).toEqual(["text/plain"]);
  });

  test("the search's defaults are this service's: documented, and what a body without mode gets", async () => {
    const searchDefaults = { mode: "hybrid" as const, alpha: 0.6 };
    const { document, h } = await documentOf({ searchDefaults });
    const body = document.paths["/products/search"]?.post?.requestBody?.content["application/json"]?.schema;
    expect(body?.properties.mode?.default).toBe("hybrid");
    expect(body?.properties.alpha?.description).toContain("0.6");
    await h.call("POST", "/products/", { token: h.token, json: SHOES });
    const search = await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "zapatillas", alpha: 0.5 },
    });
    expect(search.status).toBe(200);
    expect(search.json.results[0].fused_score).toBeNumber();
  });

  test("the search's event stream is documented with an example of the events it sends, in their order", async () => {
    const { document, h } = await documentOf();
    await h.call("POST", "/products/", { token: h.token, json: SHOES });
    const headers = { accept: "text/event-stream" };
    const sent = await h.call("POST", "/products/search", { token: h.token, json: { query: "zapatillas" }, headers });
    expect(sent.headers.get("content-type")).toStartWith("text/event-stream");
    const documented = document.paths["/products/search"]?.post?.responses["200"]?.content?.["text/event-stream"];
    for (const event of ["results", "delta", "reset", "done", "failure"]) {
      expect(documented?.schema.description).toContain(`\`${event}\``);
    }
    const names = (text: string) => [...new Set(text.match(/^event: .+$/gm))];
    expect(names(documented?.example ?? "")).toEqual(names(sent.text));
    // The fields of each block (retry:, then id:, event:, data:), as sent.
    const fields = (text: string) => [...new Set(text.split("\n\n").map((block) => block.replace(/: .*$/gm, "")))];
    expect(fields(documented?.example ?? "")).toEqual(fields(sent.text));
    const data = (text: string) =>
      text
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => Object.keys(JSON.parse(line.slice(6))).sort());
    expect(new Set(data(documented?.example ?? "").map(String))).toEqual(new Set(data(sent.text).map(String)));
  });

  test("with SEARCH_REQUIRES_AUTH=false the search needs no credential, and checks one that is sent", async () => {
    const { document } = await documentOf({ settings: { searchRequiresAuth: false } });
    const search = document.paths["/products/search"]?.post;
    expect(search?.security?.[0]).toEqual({});
    expect(Object.keys(search?.responses ?? {})).toContain("401");
  });

  test("every response is described in Spanish, every error answer has example bodies and each header is defined", async () => {
    const { document } = await documentOf({ rateLimits: LIMITS });
    for (const { method, path, operation } of operations(document)) {
      expect(operation.summary).toBeString();
      expect(operation.description, `${method} ${path}`).toBeString();
      expect(Object.keys(operation.responses).some((status) => status.startsWith("4"))).toBe(true);
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${method} ${path} ${status}`;
        expect(response.description, where).not.toMatch(/^Response for status/);
        if (Number(status) >= 400) {
          const media = response.content?.["application/json"];
          expect(media?.schema, where).toEqual({ $ref: "#/components/schemas/Problem" });
          expect(Object.keys(media?.examples ?? {}).length, where).toBeGreaterThan(0);
        }
        expect(response.headers?.["X-Request-Id"]).toBeDefined();
        for (const header of Object.values(response.headers ?? {})) {
          const name = header.$ref.replace("#/components/headers/", "");
          expect(document.components.headers[name], `${where}: ${name}`).toBeDefined();
        }
      }
    }
    const remove = document.paths["/products/{id}"]?.delete?.responses["204"];
    expect(remove?.content).toBeUndefined();
  });
});

describe("string formats", () => {
  test("are checked as Elysia checks them, though the documentation plugin loads checks of its own", async () => {
    // The app's routes are loaded (and with them @elysiajs/openapi, whose Zod bridge registers a
    // check for each format Zod knows that builds a Zod schema per value).
    await createHarness();
    const { FormatRegistry } = await import("@sinclair/typebox");
    const { fullFormats } = await import("elysia/type-system/format");
    // Strings on which Elysia's checks and the bridge's disagree (a URN, version and variant
    // nibbles, an address Zod's pattern refuses), and plain ones both take or refuse.
    const samples = [
      "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e",
      "urn:uuid:019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e",
      "9b2e7c4d-1f3a-0e5b-0c6d-7e8f9a0b1c2d",
      "ana.o'neil@tienda.example",
      "a@b.c",
      "https://tienda.example/zapatillas?talla=42",
      "2026-11-26",
      "12:30:00Z",
      "P1D",
      "10.0.0.1",
      "::1",
      "no es nada",
    ];
    const compared: string[] = [];
    for (const [name, check] of Object.entries(fullFormats)) {
      const elysia = check instanceof RegExp ? (value: string) => check.test(value) : check;
      if (typeof elysia !== "function") continue;
      const registered = FormatRegistry.Get(name);
      for (const sample of samples) {
        expect({ name, sample, valid: registered?.(sample) }).toEqual({ name, sample, valid: elysia(sample) });
      }
      compared.push(name);
    }
    // Among them those the service's schemas use (uuid: a search's id; date-time: keys, jobs, catalogues).
    expect(compared).toEqual(expect.arrayContaining(["uuid", "date-time", "uri-reference", "email", "url"]));
  });
});
