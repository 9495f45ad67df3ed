/**
 * Backup and restore as the README's "Backup and restore" says: `export` → a fresh instance →
 * `import` restores a catalogue that searches the same without one embedding call (as real `bun
 * run cli` processes, the way an operator runs them); the same into PostgreSQL and into an
 * instance of another model (in process, through runCli); a stopped PGlite data directory copied;
 * pg_dump and pg_restore of a PostgreSQL database. The embedder is a fake OpenAI server that
 * records every call.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { openPglite } from "../../src/adapters/pglite/pglite-client.ts";
import { PostgresProducts } from "../../src/adapters/postgres/product-repository.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { bagOfWords } from "../fakes/fake-embedder.ts";
import { openAIHandler } from "../fakes/fake-openai-server.ts";
import { FakeProviderServer } from "../fakes/fake-provider-server.ts";
// `cliProcess`: `bun run cli <args>` as a real process, as the README writes it; `cli`: the same
// command in this process, what a process test costs without the process.
import { cliInProcess as cli, cliProcess } from "../support/cli.ts";
import { withDatabaseMigratedFor } from "../support/new-database.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { useTempDirs } from "../support/temp-dirs.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

setDefaultTimeout(120_000);

const DIMENSION = 64;
const tempDir = useTempDirs("backup-restore", { concurrent: true });

/** Fake OpenAI servers, one per test (the tests run concurrently: each counts its own calls). */
const providers: FakeProviderServer[] = [];
afterAll(() => Promise.all(providers.map((provider) => provider.stop())));

/** An embedder of its own for a test: `settings(...)` are an instance's settings using it (`migrated(...)` with a data directory), `calls()` its calls so far. */
function fakeEmbedder() {
  const provider = FakeProviderServer.start(openAIHandler);
  providers.push(provider);
  /** The settings of an instance embedding with this fake provider, `dimension` dimensions. */
  const settings = <S extends Record<string, string>>(given: S, dimension = DIMENSION): Record<string, string> & S => ({
    EMBEDDING_PROVIDER: "openai",
    OPENAI_BASE_URL: `${provider.url}/v1`,
    EMBEDDING_DIMENSIONS: String(dimension),
    LOG_LEVEL: "warn",
    ...given,
  });
  return {
    settings,
    /**
     * The settings of such an instance whose DATA_DIR, `path`, holds a database it has migrated
     * already: these tests are of exports and imports, not of a first start.
     */
    async migrated(path: string, dimension = DIMENSION) {
      return settings({ DATA_DIR: await withDatabaseMigratedFor(path, settings({}, dimension)) }, dimension);
    },
    calls: () => provider.requests.filter((request) => request.path === "/v1/embeddings").length,
  };
}

/** The last JSON line a command printed: its summary. */
const summary = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");

const product = (i: number) => ({
  sku: i % 4 === 3 ? undefined : `SKU-${i}`,
  name: `${["Cafetera", "Taza", "Molinillo", "Tetera"][i % 4]} ${["roja", "azul", "verde"][i % 3]} modelo ${i}`,
  description: i % 5 === 0 ? "" : `Para el café de la mañana, número ${i}`,
  category: ["cocina", "desayuno", "regalos"][i % 3] as string,
});

/** A catalogue file of `count` products (some without a sku, some without a description). */
function catalogueFile(dir: string, count = 40): string {
  const path = join(dir, "catalogue.jsonl");
  writeFileSync(path, Array.from({ length: count }, (_, i) => JSON.stringify(product(i))).join("\n"));
  return path;
}

const QUERIES = ["cafetera roja", "taza azul para el desayuno", "molinillo", "tetera verde modelo 7"];

/** What each query finds in the catalogue on `client`: names, skus and scores (ids are each database's own). */
async function searches(client: SqlClient): Promise<unknown[]> {
  const products = new PostgresProducts(client, DIMENSION).in("default");
  const found: unknown[] = [];
  for (const query of QUERIES) {
    const hits = await products.searchByVector(bagOfWords(query, DIMENSION), { limit: 5 });
    found.push(hits.map(({ name, sku, category, score }) => ({ name, sku, category, score })));
  }
  found.push((await products.productsAfter(0, 1000, { withEmbeddings: true })).map(({ id: _, ...rest }) => rest));
  return found;
}

/** searches() on the stopped embedded database in `dataDir`. */
async function searchesIn(dataDir: string): Promise<unknown[]> {
  const client = await openPglite(dataDir);
  try {
    return await searches(client);
  } finally {
    await client.close();
  }
}

/** The product lines of an export file (its header aside). */
const productLines = (path: string) => gunzipSync(readFileSync(path)).toString("utf8").trimEnd().split("\n").slice(1);

describe.concurrent("export and import", () => {
  test("export --with-embeddings → a fresh instance → import: the same catalogue, the same searches, no embedding call", async () => {
    const dir = tempDir();
    const embedder = fakeEmbedder();
    const source = await embedder.migrated(join(dir, "source"));
    const loaded = await cli(["import", catalogueFile(dir)], source);
    expect(summary(loaded.stdout)).toMatchObject({ created: 40, failed: 0 });

    const file = join(dir, "backup.jsonl.gz");
    const exported = await cliProcess(["export", file, "--with-embeddings"], source);
    expect(exported).toMatchObject({ code: 0 });
    expect(summary(exported.stdout)).toMatchObject({
      event: "export_done",
      products: 40,
      gzip: true,
      embeddings: true,
      model: "openai/text-embedding-3-large",
      dimension: DIMENSION,
    });

    const callsBefore = embedder.calls();
    const target = await embedder.migrated(join(dir, "target"));
    const restored = await cliProcess(["import", file], target);
    expect(restored).toMatchObject({ code: 0 });
    expect(restored.stderr).toContain("no text is embedded");
    expect(summary(restored.stdout)).toMatchObject({ embeddings: "restored", created: 40, failed: 0 });
    expect(embedder.calls()).toBe(callsBefore);

    expect(await searchesIn(target.DATA_DIR)).toEqual(await searchesIn(source.DATA_DIR));
  });

  test("an instance of another model or dimension embeds the texts again, and says so", async () => {
    const dir = tempDir();
    const embedder = fakeEmbedder();
    const source = await embedder.migrated(join(dir, "source"));
    await cli(["import", catalogueFile(dir, 6)], source);
    const file = join(dir, "backup.jsonl.gz");
    expect(await cli(["export", file, "--with-embeddings"], source)).toMatchObject({ code: 0 });

    const callsBefore = embedder.calls();
    const other = await embedder.migrated(join(dir, "other"), 32);
    const imported = await cli(["import", file], other);
    expect(imported).toMatchObject({ code: 0 });
    expect(imported.stderr).toContain(
      `its embeddings are of openai/text-embedding-3-large (${DIMENSION} dimensions), not of the configured model openai/text-embedding-3-large (32 dimensions): they are ignored and the texts embedded again`,
    );
    expect(summary(imported.stdout)).toMatchObject({ embeddings: "computed", created: 6, failed: 0 });
    expect(embedder.calls()).toBeGreaterThan(callsBefore);
  });

  test("a stopped embedded database's data directory, copied, is the same catalogue", async () => {
    const dir = tempDir();
    const embedder = fakeEmbedder();
    const source = await embedder.migrated(join(dir, "source"));
    await cli(["import", catalogueFile(dir, 8)], source);
    // As the README says: with the service stopped, copy the whole folder.
    const copy = join(dir, "copy");
    cpSync(source.DATA_DIR, copy, { recursive: true });
    const fromSource = join(dir, "source.jsonl.gz");
    const fromCopy = join(dir, "copy.jsonl.gz");
    expect(await cli(["export", fromSource, "--with-embeddings"], source)).toMatchObject({ code: 0 });
    expect(await cli(["export", fromCopy, "--with-embeddings"], { ...source, DATA_DIR: copy })).toMatchObject({
      code: 0,
    });
    expect(productLines(fromCopy)).toEqual(productLines(fromSource));
    expect(productLines(fromCopy)).toHaveLength(8);
  });
});

describe.skipIf(!POSTGRES_URL)("PostgreSQL (TEST_DATABASE_URL)", () => {
  let admin: SqlClient;
  const databases: string[] = [];
  /** A new database on the test server, dropped after the tests; its URL. */
  const newDatabase = async (name: string) => {
    const database = `sku_backup_${process.pid}_${name}`;
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
    databases.push(database);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${database}`;
    return url.toString();
  };
  blockHooks(!POSTGRES_URL, {
    beforeAll() {
      admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
    },
    async afterAll() {
      for (const database of databases) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.close();
    },
  });

  test("an export of the embedded database imported into PostgreSQL: the same searches, no embedding call", async () => {
    const dir = tempDir();
    const embedder = fakeEmbedder();
    const source = await embedder.migrated(join(dir, "source"));
    await cli(["import", catalogueFile(dir)], source);
    const file = join(dir, "backup.jsonl.gz");
    expect(await cli(["export", file, "--with-embeddings"], source)).toMatchObject({ code: 0 });

    const callsBefore = embedder.calls();
    const target = embedder.settings({ DATABASE_URL: await newDatabase("import") });
    const restored = await cli(["import", file], target);
    expect(summary(restored.stdout)).toMatchObject({ embeddings: "restored", created: 40, failed: 0 });
    expect(embedder.calls()).toBe(callsBefore);

    const client = connectPostgres(target.DATABASE_URL, { maxConnections: 1 });
    try {
      expect(await searches(client)).toEqual(await searchesIn(source.DATA_DIR));
    } finally {
      await client.close();
    }
  });

  test("pg_dump and pg_restore, as the README writes them, restore the catalogue exactly", async () => {
    const dir = tempDir();
    const embedder = fakeEmbedder();
    const source = embedder.settings({ DATABASE_URL: await newDatabase("dumped") });
    await cli(["import", catalogueFile(dir, 12)], source);
    const dump = join(dir, "sku.dump");
    const run = async (command: string[]) => {
      const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
      const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      expect({ command: command[0], code, stderr }).toEqual({ command: command[0], code: 0, stderr: "" });
    };
    await run(["pg_dump", "--format=custom", `--file=${dump}`, `--dbname=${source.DATABASE_URL}`]);
    const target = embedder.settings({ DATABASE_URL: await newDatabase("restored") });
    await run(["pg_restore", "--no-owner", `--dbname=${target.DATABASE_URL}`, dump]);

    const fromSource = join(dir, "source.jsonl.gz");
    const fromRestored = join(dir, "restored.jsonl.gz");
    expect(await cli(["export", fromSource, "--with-embeddings"], source)).toMatchObject({ code: 0 });
    expect(await cli(["export", fromRestored, "--with-embeddings"], target)).toMatchObject({ code: 0 });
    expect(productLines(fromRestored)).toEqual(productLines(fromSource));
    expect(productLines(fromRestored)).toHaveLength(12);
    // The restored database is a working one: a new product takes the next id after the restored ones.
    const more = join(dir, "more.jsonl");
    writeFileSync(more, JSON.stringify({ ...product(99), sku: "SKU-99" }));
    const added = await cli(["import", more, "--report", join(dir, "report.jsonl")], target);
    expect(summary(added.stdout)).toMatchObject({ created: 1, failed: 0 });
    expect(JSON.parse(readFileSync(join(dir, "report.jsonl"), "utf8"))).toMatchObject({ status: "created", id: 13 });
  });
});
