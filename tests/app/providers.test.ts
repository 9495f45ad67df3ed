/**
 * The whole service (config → container → HTTP app, on PGlite) with its real provider adapters and
 * SDKs pointed at fake OpenAI, Anthropic and Gemini servers on 127.0.0.1: what a shop sees when the
 * providers answer, fail over, or are all down.
 */
import { afterAll, afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import type { Logger } from "../../src/app/logger.ts";
import { anthropicError, anthropicHandler } from "../fakes/fake-anthropic-server.ts";
import { googleError, googleHandler } from "../fakes/fake-google-server.ts";
import { malformedJson, openAIHandler, serverError } from "../fakes/fake-openai-server.ts";
import {
  FakeProviderServer,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
} from "../fakes/fake-provider-server.ts";
import { FakeTimers } from "../fakes/fake-timers.ts";
import { type CallOptions, callApp } from "../support/app-client.ts";
import { openNewPglite, withDatabaseMigratedFor } from "../support/new-database.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { makeTempDir } from "../support/temp-dirs.ts";

// Each container opens PGlite (on a copy of a new database: no initdb here).
setDefaultTimeout(60_000);

const KEYS = {
  OPENAI_API_KEY: "sk-test-openai-0123456789abcdef",
  ANTHROPIC_API_KEY: "sk-ant-test-0123456789abcdef",
  GOOGLE_API_KEY: "AIzaTest0123456789abcdefghijkl",
};
const ADMIN = { username: "admin", password: "una-contraseña-larga" };
const COFFEE = { name: "Espresso machine", description: "15-bar pump and milk frother", category: "Kitchen" };
const WALLET = { name: "Leather wallet", description: "Slim bifold with card slots", category: "Accessories" };

/** A fake provider whose answers can be switched per route while the service runs. */
function provider(handler: ReplyHandler) {
  const overrides = new Map<string, (request: RecordedRequest) => Reply>();
  const server = FakeProviderServer.start((request) => {
    for (const [fragment, reply] of overrides) if (request.path.includes(fragment)) return reply(request);
    return handler(request);
  });
  return {
    server,
    /** Requests whose path contains `fragment` get `reply` until reset. */
    answer: (fragment: string, reply: (request: RecordedRequest) => Reply) => overrides.set(fragment, reply),
    reset: () => {
      overrides.clear();
      server.reset();
    },
  };
}

const openai = provider(openAIHandler);
const anthropic = provider(anthropicHandler({ text: () => "Le recomiendo la cafetera Espresso machine." }));
const google = provider(googleHandler({ text: "Le recomiendo la Espresso machine." }));
const hang: Reply = { hang: true };

afterAll(() => Promise.all([openai.server.stop(), anthropic.server.stop(), google.server.stop()]));

/**
 * The services run on fake timers (see start): these limits run out only when a test lets them,
 * and the retries' backoffs pass at once. The budget is long so that the SDKs' own time limit
 * (real time: the budget + 1 s) cannot cut in on a loaded machine either.
 */
const providerEnv = () => ({
  ...KEYS,
  OPENAI_BASE_URL: `${openai.server.url}/v1`,
  ANTHROPIC_BASE_URL: anthropic.server.url,
  GOOGLE_BASE_URL: google.server.url,
  PROVIDER_TIMEOUT_MS: "2000",
  PROVIDER_RETRY_BUDGET_MS: "60000",
  PROVIDER_MAX_RETRIES: "1",
  GENERATION_TIMEOUT_MS: "1500",
});

/** Every log event, whatever its level; `whenLogged` resolves once the events satisfy a condition. */
function capturingLogger() {
  const events: Record<string, unknown>[] = [];
  const watchers = new Set<() => void>();
  const push = (level: string) => (event: Record<string, unknown>) => {
    events.push({ level, ...event });
    for (const watcher of [...watchers]) watcher();
  };
  const logger: Logger = { debug: push("debug"), info: push("info"), warn: push("warn"), error: push("error") };
  const whenLogged = (condition: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!condition()) return;
        watchers.delete(check);
        resolve();
      };
      watchers.add(check);
      check();
    });
  return { logger, events, whenLogged };
}

const open: HttpService[] = [];
const dirs: string[] = [];
beforeEach(() => {
  for (const fake of [openai, anthropic, google]) fake.reset();
});
afterEach(async () => {
  for (const container of open.splice(0)) await container.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A DATA_DIR, removed after the test. */
function tempDataDir(): string {
  const dir = makeTempDir("providers");
  dirs.push(dir);
  return dir;
}

/**
 * A DATA_DIR holding an embedded database migrated for providerEnv's embedder: these tests are of
 * the providers, not of a first start.
 */
const dataDirWithDatabase = () => withDatabaseMigratedFor(tempDataDir(), providerEnv());

async function start(env: Record<string, string>, database?: SqlClient) {
  const config = loadConfig({
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    ...providerEnv(),
    ...env,
  });
  const { logger, events, whenLogged } = capturingLogger();
  const timers = new FakeTimers({ sleepsEndAtOnce: true });
  const container = await createHttpService(
    // Given a database, the instance keeps only its files (the generated secret) in DATA_DIR.
    { ...config, dataDir: env.DATA_DIR ?? (database ? tempDataDir() : await dataDirWithDatabase()) },
    logger,
    { passwordHasher: lowCostHasher(), timers, ...(database ? { database } : {}) },
  );
  open.push(container);
  const call = (method: string, path: string, init: CallOptions = {}) => callApp(container.app, method, path, init);
  const token = (await call("POST", "/auth/login", { form: ADMIN })).json.access_token as string;
  const create = (product: unknown) => call("POST", "/products/", { json: product, token });
  const search = (query: string) => call("POST", "/products/search", { json: { query }, token });
  return { container, events, whenLogged, timers, call, create, search };
}

const chatRequests = () => openai.server.requestsTo("/chat/completions");
const embeddingRequests = () => openai.server.requestsTo("/embeddings");

describe("with provider keys, the service uses the real providers", () => {
  test("products get 3072-dimension OpenAI embeddings and the recommendation is labelled by OpenAI", async () => {
    const database = await openNewPglite();
    const { create, search, events } = await start({}, database);
    expect((await create(COFFEE)).status).toBe(201);
    expect((await create(WALLET)).status).toBe(201);

    const [dims] = await database.query<{ dims: number }>(
      "SELECT DISTINCT vector_dims(embedding) AS dims FROM products",
    );
    expect(dims?.dims).toBe(3072);
    const sent = embeddingRequests().map(
      (request) => request.body as { model: string; dimensions: number; input: string[] },
    );
    expect(sent[0]).toMatchObject({ model: "text-embedding-3-large", dimensions: 3072 });
    expect(sent[0]?.input).toEqual([`${COFFEE.name}. ${COFFEE.category}. ${COFFEE.description}`]);
    expect(embeddingRequests()[0]?.headers.get("authorization")).toBe(`Bearer ${KEYS.OPENAI_API_KEY}`);

    const found = await search("espresso machine with milk frother");
    expect(found.status).toBe(200);
    expect(found.json.results[0]).toMatchObject(COFFEE);
    expect(found.json.recommendation).toStartWith("[OPENAI - gpt-4.1-mini] ");
    expect(chatRequests()).toHaveLength(1);
    expect(anthropic.server.requests).toHaveLength(0);

    const searchEvent = events.find((event) => event.event === "search");
    expect(searchEvent).toMatchObject({ results: 2, recommendedBy: "OPENAI - gpt-4.1-mini" });
    expect(events.find((event) => event.event === "generation_answered")).toMatchObject({
      provider: "OPENAI",
      position: 0,
      latencyMs: expect.any(Number),
    });
  });

  test("when OpenAI fails at generation, Anthropic answers; then Google; then the local generator", async () => {
    const metricsToken = "token-de-metricas-0123456789";
    const { create, search, events, whenLogged, timers, call } = await start({ METRICS_TOKEN: metricsToken });
    await create(COFFEE);

    openai.answer("/chat/completions", serverError);
    const second = await search("espresso");
    expect(second.json.recommendation).toStartWith("[ANTHROPIC - claude-haiku-4-5] ");
    // One retry of the 500 within the budget, then the chain moved on.
    expect(chatRequests()).toHaveLength(2);

    anthropic.answer("/v1/messages", () => anthropicError(401, "authentication_error", "invalid x-api-key"));
    const third = await search("espresso");
    expect(third.json.recommendation).toStartWith("[GOOGLE - gemini-2.5-flash-lite] ");
    expect(anthropic.server.requests).toHaveLength(2); // one per search: a 401 is not retried

    google.answer(":generateContent", () => hang);
    const googleCalls = google.server.requests.length;
    const searching = search("espresso");
    await google.server.received(googleCalls + 1);
    // Google's link runs out of its GENERATION_TIMEOUT_MS; the local generator answers.
    await timers.elapse(1500);
    const fourth = await searching;
    expect(fourth.status).toBe(200);
    expect(fourth.json.recommendation).toStartWith("[LOCAL - recomendador-local-v1] ");
    expect(fourth.json.results[0]).toMatchObject(COFFEE);

    const failures = events.filter((event) => event.event === "generation_failed");
    expect(failures.map((event) => [event.generator, event.reason])).toEqual([
      ["openai/gpt-4.1-mini", "error"],
      ["openai/gpt-4.1-mini", "error"],
      ["anthropic/claude-haiku-4-5", "error"],
      ["openai/gpt-4.1-mini", "error"],
      ["anthropic/claude-haiku-4-5", "error"],
      ["google/gemini-2.5-flash-lite", "timeout"],
    ]);
    expect(failures.every((event) => typeof event.latencyMs === "number" && typeof event.error === "string")).toBe(
      true,
    );
    expect(events.filter((event) => event.event === "provider_retry").map((event) => event.provider)).toContain(
      "openai",
    );
    const logged = JSON.stringify(events);
    for (const key of Object.values(KEYS)) expect(logged).not.toContain(key);

    // Every line written while serving a search carries that request's id, the provider's too.
    const id = fourth.headers.get("x-request-id");
    const linesOfSearch = () => events.filter((event) => event.requestId === id).map((event) => event.event);
    // The request line is written just after the answer, and Google's cancelled call ends (and is
    // logged) whenever its request is torn down, on a busy machine a while after.
    await whenLogged(() => linesOfSearch().length >= 12);
    // Sorted: Google's cancelled call may end after the search has answered.
    expect(linesOfSearch().sort()).toEqual([
      "generation_answered",
      "generation_failed",
      "generation_failed",
      "generation_failed",
      "provider_call",
      "provider_call",
      "provider_call",
      "provider_gave_up",
      "provider_retry",
      "query_cache",
      "request",
      "search",
    ]);
    const anthropicCalls = events.filter((event) => event.event === "provider_call" && event.provider === "anthropic");
    expect(anthropicCalls.map(({ level, kind, outcome }) => [level, kind, outcome])).toEqual([
      ["debug", "generation", "ok"],
      ["debug", "generation", "failed"],
      ["debug", "generation", "failed"],
    ]);

    const { text } = await call("GET", "/metrics", { headers: { authorization: `Bearer ${metricsToken}` } });
    const calls = (labels: string) =>
      Number(new RegExp(`^sku_provider_calls_total\\{${labels}\\} (\\d+)$`, "m").exec(text)?.[1]);
    expect(calls('provider="openai",kind="generation",outcome="failed"')).toBe(3);
    expect(calls('provider="openai",kind="generation",outcome="fallback"')).toBe(3);
    expect(calls('provider="anthropic",kind="generation",outcome="ok"')).toBe(1);
    expect(calls('provider="anthropic",kind="generation",outcome="fallback"')).toBe(2);
    expect(calls('provider="google",kind="generation",outcome="cancelled"')).toBe(1);
    expect(calls('provider="openai",kind="embedding",outcome="ok"')).toBeGreaterThanOrEqual(2);
    expect(text).toContain('sku_search_recommendations_total{provider="local"} 1');
    expect(text).toContain('sku_products{catalogue="default"} 1');
  });

  test("with GENERATION_REQUIRED=true, a search fails with 503 when every provider fails", async () => {
    const { create, search } = await start({ GENERATION_REQUIRED: "true" });
    await create(COFFEE);
    openai.answer("/chat/completions", malformedJson);
    anthropic.answer("/v1/messages", () => anthropicError(529, "overloaded_error", "Overloaded"));
    google.answer(":generateContent", () => googleError(500, "INTERNAL", "internal error"));
    const failed = await search("espresso");
    expect(failed.status).toBe(503);
    expect(failed.json).toEqual({ detail: "Ningún proveedor pudo generar la recomendación" });
    for (const key of Object.values(KEYS)) expect(failed.text).not.toContain(key);
  });

  test("an import embeds its chunks through OpenAI several at once (the service's embedder says so through its wrappers), and writes them in order", async () => {
    const database = await openNewPglite();
    const { container } = await start({}, database);
    const importer = await container.root.importProducts();
    const release = openai.server.holdAnswers();
    const items = Array.from({ length: 30 }, (_, i) => ({
      value: { ...COFFEE, name: `Cafetera ${i}`, sku: `CAF-${i}` },
    }));
    const imported = importer.execute(items, { catalogue: "default", chunkSize: 10 });
    // Three calls while none is answered (an import that waited for each answer would send one, and
    // the test would end at its time limit).
    await openai.server.received(3);
    const sizes = embeddingRequests().map((request) => (request.body as { input: string[] }).input.length);
    release();
    // Every chunk's embedding was asked for before the first answer came back.
    expect(sizes).toEqual([10, 10, 10]);
    expect((await imported).counts).toMatchObject({ created: 30, failed: 0 });
    const stored = await database.query<{ sku: string }>("SELECT sku FROM products ORDER BY id");
    expect(stored.map((row) => row.sku)).toEqual(items.map((item) => item.value.sku));
  });

  test("a repeated query costs no embedding call, also after a restart on the same database", async () => {
    const dataDir = await dataDirWithDatabase();
    const first = await start({ DATA_DIR: dataDir });
    await first.create(COFFEE);
    const before = embeddingRequests().length;
    const one = await first.search("Espresso   machine");
    const two = await first.search("espresso machine");
    expect(two.json.results).toEqual(one.json.results);
    expect(embeddingRequests()).toHaveLength(before + 1);
    await first.container.close();
    open.splice(open.indexOf(first.container), 1);

    const second = await start({ DATA_DIR: dataDir });
    const three = await second.search("ESPRESSO MACHINE");
    expect(three.json.results).toEqual(one.json.results);
    expect(embeddingRequests()).toHaveLength(before + 1);
  });

  test("when the embedder is down, creating answers 503 and stores nothing; searching answers 503", async () => {
    const database = await openNewPglite();
    const { create, search } = await start({}, database);
    openai.answer("/embeddings", serverError);
    const created = await create(COFFEE);
    expect(created.status).toBe(503);
    expect(created.json).toEqual({
      detail: "El servicio de embeddings no está disponible. Inténtelo de nuevo más tarde",
    });
    const searched = await search("espresso");
    expect(searched.status).toBe(503);
    expect(searched.json.detail).toBeString();
    const [count] = await database.query<{ n: number | string }>("SELECT count(*) AS n FROM products");
    expect(Number(count?.n)).toBe(0);
    expect(chatRequests()).toHaveLength(0);
  });

  test("EMBEDDING_PROVIDER=google embeds documents and queries with their Gemini task types", async () => {
    const database = await openNewPglite();
    const { create, search } = await start({ EMBEDDING_PROVIDER: "google" }, database);
    expect((await create(COFFEE)).status).toBe(201);
    expect((await search("espresso")).json.results[0]).toMatchObject(COFFEE);
    const sent = google.server
      .requestsTo(":batchEmbedContents")
      .map(
        (request) => (request.body as { requests: { taskType: string; outputDimensionality: number }[] }).requests[0],
      );
    expect(sent).toEqual([
      expect.objectContaining({ taskType: "RETRIEVAL_DOCUMENT", outputDimensionality: 3072 }),
      expect.objectContaining({ taskType: "RETRIEVAL_QUERY", outputDimensionality: 3072 }),
    ]);
    expect(embeddingRequests()).toHaveLength(0);
    const [space] = await database.query<{ model: string; dimension: number }>(
      "SELECT model, dimension FROM embedding_space",
    );
    expect(space).toEqual({ model: "google/gemini-embedding-001", dimension: 3072 });
  });
});
