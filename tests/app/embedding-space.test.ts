/**
 * Two service instances on one PostgreSQL database, and a `reembed` run beside them (as from the
 * CLI) that moves the catalogue to another model: both instances notice (the one that writes at
 * once, the other at its next look), refuse every search and product write with 503 and are not
 * ready, naming the cause, and store nothing of the old model; restarted with the new model, an
 * instance serves again.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rmSync } from "node:fs";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { CompositionRoot } from "../../src/app/composition-root.ts";
import type { Logger } from "../../src/app/logger.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { product, type ReplicaService, serviceConfig, startService } from "../support/replica-service.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

setDefaultTimeout(60_000);

const skipped = !POSTGRES_URL;
const database = `space_${process.pid}`;
let admin: SqlClient;
let url: string;
const services: ReplicaService[] = [];

beforeAll(async () => {
  if (skipped) return;
  admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${database}`);
  const target = new URL(POSTGRES_URL);
  target.pathname = `/${database}`;
  url = target.toString();
});

afterAll(async () => {
  if (skipped) return;
  for (const service of services) await service.close().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.close();
});

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** `reembed` as the CLI runs it, with the embedder `model` of 32 dimensions. */
async function reembed(model: string): Promise<void> {
  const config = serviceConfig({ DATABASE_URL: url });
  const root = new CompositionRoot(config, quiet, { overrides: { embedder: new FakeEmbedder(32, model) } });
  try {
    await (await root.reembedCatalogue()).execute();
  } finally {
    await root.close();
    rmSync(config.dataDir, { recursive: true, force: true });
  }
}

/** Waits (bounded) until `service` answers /health/ready with `status`: an event, however slow the machine. */
async function readyBecomes(service: ReplicaService, status: number) {
  for (let i = 0; i < 600; i++) {
    const ready = await service.call("GET", "/health/ready");
    if (ready.status === status) return ready;
    await Bun.sleep(50);
  }
  throw new Error(`/health/ready never answered ${status}`);
}

describe.skipIf(skipped)("a reembed to another model while two instances run", () => {
  test("both instances refuse searches and product writes with 503 until restarted with the new model; nothing of the old model is stored", async () => {
    const [a, b] = [await startService({ DATABASE_URL: url }), await startService({ DATABASE_URL: url })];
    services.push(a, b);
    const token = await a.login();
    const created = await a.call("POST", "/products/", { token, json: product("Lámpara de escritorio") });
    expect(created.status).toBe(201);
    const id = created.json.id as number;
    expect((await b.call("POST", "/products/search", { token, json: { query: "lámpara" } })).status).toBe(200);

    await reembed("fake-other-model");

    // A writes at once: the database refuses its vector (same dimension, another model).
    const refused = await a.call("POST", "/products/", { token, json: product("Taza térmica") });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.json.detail).toContain("«fake-other-model»");
    expect(refused.json.detail).toContain("hasta que se reinicie con el modelo nuevo");
    const notReady = await a.call("GET", "/health/ready");
    expect(notReady.status).toBe(503);
    expect(notReady.json.detail).toContain("reinícielo con el modelo nuevo");
    expect((await a.call("POST", "/products/search", { token, json: { query: "lámpara" } })).status).toBe(503);

    // B did nothing: its look finds the new space.
    const bNotReady = await readyBecomes(b, 503);
    expect(bNotReady.json.detail).toContain("«fake-other-model»");
    const answers = [
      await b.call("POST", "/products/search", { token, json: { query: "lámpara" } }),
      await b.call("GET", "/products/search?query=l%C3%A1mpara", { token }),
      await b.call("POST", "/products/", { token, json: product("Silla de oficina") }),
      await b.call("PATCH", `/products/${id}`, { token, json: { description: "Con brazo articulado" } }),
      await b.call("PATCH", `/products/${id}`, { token, json: { category: "otra" } }),
      await b.call("DELETE", `/products/${id}`, { token }),
      await b.call("POST", "/products/bulk", { token, json: [product("Estante")] }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([503, 503, 503, 503, 503, 503, 503]);
    for (const answer of answers) expect(answer.json.detail).toContain("otro modelo de embeddings");
    // Reads of what is stored go on; the catalogue holds nothing of theirs since the switch.
    expect((await b.call("GET", `/products/${id}`, { token })).status).toBe(200);

    const catalogue = connectPostgres(url, { maxConnections: 1 });
    try {
      const rows = await catalogue.query<{ name: string; category: string }>("SELECT name, category FROM products");
      expect(rows).toEqual([{ name: "Lámpara de escritorio", category: "pruebas" }]);
    } finally {
      await catalogue.close();
    }

    // Restarted with the new model: ready, and it searches and writes.
    await a.close();
    const restarted = await startService({ DATABASE_URL: url }, { embedder: new FakeEmbedder(32, "fake-other-model") });
    services.push(restarted);
    expect((await restarted.call("GET", "/health/ready")).status).toBe(200);
    const again = await restarted.login();
    expect((await restarted.call("POST", "/products/", { token: again, json: product("Taza térmica") })).status).toBe(
      201,
    );
    const search = await restarted.call("POST", "/products/search", {
      token: again,
      json: { query: "lámpara de escritorio" },
    });
    expect(search.status).toBe(200);
    expect(search.json.results.map((hit: { id: number }) => hit.id)).toContain(id);
  });
});
