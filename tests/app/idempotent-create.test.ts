/**
 * The same create sent several times at once with one Idempotency-Key, through the whole service on
 * PostgreSQL (TEST_DATABASE_URL; skipped without one): one product is created, every other request
 * gets that answer again. Concurrent creates only race for real on a server: PGlite runs one
 * transaction at a time (the repository contract covers both databases).
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { EmbeddingPurpose } from "../../src/ports/embedder.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { callApp } from "../support/app-client.ts";
import { lowCostHasher } from "../support/password-hasher.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { useTempDirs } from "../support/temp-dirs.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

setDefaultTimeout(60_000);

const PASSWORD = "una-contraseña-larga";
const schema = `idempotent_create_${process.pid}`;
const tempDir = useTempDirs("idempotent-create");
const skipped = !POSTGRES_URL;
let admin: SqlClient;
let container: HttpService;

/**
 * Holds each product's embedding until `gathered` creates wait for one, then lets them all go: each
 * has looked its key up before any of them stored anything, so all of them race in the database.
 */
class GatheringEmbedder extends FakeEmbedder {
  gathered = 0;
  private waiting: (() => void)[] = [];

  override async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (purpose === "document" && this.gathered > 0) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        if (this.waiting.length < this.gathered) return;
        for (const release of this.waiting) release();
        this.waiting = [];
        this.gathered = 0;
      });
    }
    return super.embed(texts, purpose, signal);
  }
}
const embedder = new GatheringEmbedder(32);

blockHooks(skipped, {
  async beforeAll() {
    admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
    await admin.query("CREATE EXTENSION IF NOT EXISTS vector");
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(POSTGRES_URL);
    url.searchParams.set("search_path", `${schema},public`);
    const config = loadConfig({
      DATABASE_URL: url.toString(),
      DATA_DIR: tempDir(),
      JWT_SECRET: "s".repeat(40),
      ADMIN_PASSWORD: PASSWORD,
      WRITE_RATE_LIMIT: "1000",
    });
    const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    container = await createHttpService(config, silent, {
      embedder,
      database: connectPostgres(url.toString(), { maxConnections: 10 }),
      passwordHasher: lowCostHasher(),
    });
  },
  async afterAll() {
    await container?.close();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.close();
  },
});

test.skipIf(skipped)(
  "nine concurrent creates with one Idempotency-Key and one body: one 201, eight replays of it, one product stored",
  async () => {
    const login = await callApp(container.app, "POST", "/auth/login", {
      form: { username: "admin", password: PASSWORD },
    });
    const token = login.json.access_token as string;
    const body = { name: "Zapatilla de trail", description: "Suela de tacos", category: "calzado", sku: "TRAIL-9" };
    const create = (json: object) =>
      callApp(container.app, "POST", "/products/", { token, json, headers: { "idempotency-key": "pedido-9" } });

    embedder.gathered = 9;
    const answers = await Promise.all(Array.from({ length: 9 }, () => create(body)));

    // Before the key was claimed first: one 201 and eight 409 (the sku "already taken" by the first).
    expect(answers.map((answer) => answer.status)).toEqual(Array(9).fill(201));
    const replayed = answers.filter((answer) => answer.headers.get("idempotent-replayed") === "true");
    expect(replayed).toHaveLength(8);
    const product = { id: expect.any(Number), ...body };
    expect(answers.map((answer) => answer.json)).toEqual(Array(9).fill(product));
    expect(new Set(answers.map((answer) => answer.json.id)).size).toBe(1);
    const listed = await callApp(container.app, "GET", "/products/", { token });
    expect(listed.json.total).toBe(1);

    const otherBody = await create({ ...body, description: "Otra suela" });
    expect(otherBody.status).toBe(422);
    expect(otherBody.json).toEqual({ detail: "La clave de idempotencia ya se usó con otro cuerpo de petición" });
  },
);
