/**
 * `bun run cli import FILE` on the embedded database (a copy of a new one, as a first start unpacks
 * it): each file format, gzip, a second run that changes nothing, an interrupted run resumed, the
 * vector index. The README's commands run once each as it writes them, as real processes (Ctrl-C
 * needs one; `index status|drop|build`); the other runs are in process (tests/support/cli.ts). The
 * tests run concurrently, each on its own DATA_DIR.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { openAIHandler } from "../fakes/fake-openai-server.ts";
import { FakeProviderServer } from "../fakes/fake-provider-server.ts";
import { cliInProcess, cliProcess, finished, startCliProcess } from "../support/cli.ts";
import { withDatabaseMigratedFor, withNewDatabase } from "../support/new-database.ts";
import { useTempDirs } from "../support/temp-dirs.ts";
import { POSTGRES_URL, schemaOfItsOwn } from "../support/test-databases.ts";
import { waitUntil } from "../support/wait-until.ts";

// Generous: at load 24 on 2 cores two of these tests took over 120 s.
setDefaultTimeout(300_000);

const tempDir = useTempDirs("import-cli", { concurrent: true });

const ADMIN_PASSWORD = "admin-password";
/** A DATA_DIR at `path` whose database an instance of the default settings has migrated already: these tests are of imports, not of a first start. */
const migratedDataDir = (path: string) => withDatabaseMigratedFor(path, {});
/** `bun run cli <args>` as a process, as the README writes it. */
const cli = (args: string[], env: Record<string, string>) => startCliProcess(args, { ADMIN_PASSWORD, ...env });
/** The same command in this process. */
const inProcess = (args: string[], env: Record<string, string>) => cliInProcess(args, { ADMIN_PASSWORD, ...env });

/** The last JSON line the command printed (its summary, when stdout is not a terminal). */
function summary(stdout: string): Record<string, unknown> {
  const last = stdout.trim().split("\n").at(-1) ?? "{}";
  return JSON.parse(last);
}

const product = (i: number) => ({
  sku: `SKU-${i}`,
  name: `Producto ${i}, "especial"`,
  description: i % 3 === 0 ? "" : `Descripción del producto ${i}`,
  category: i % 2 === 0 ? "par" : "impar",
});

function csvLine(values: string[]): string {
  return values.map((value) => (/[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value)).join(",");
}

describe.concurrent("import FILE", () => {
  test("CSV attribute columns arrive typed (price a number, in_stock a boolean, a :list column a list); a cell not of its type is a failed item, the rest imported", async () => {
    const dir = tempDir();
    const env = { DATA_DIR: await migratedDataDir(join(dir, "data")) };
    writeFileSync(
      join(dir, "tienda.csv"),
      [
        "sku,name,description,category,price,in_stock,tallas:list,brand",
        'Z-1,Zapatilla,Ligera,calzado,"59,90",sí,41|42,Acme',
        "Z-2,Bota,Pesada,calzado,120,no,,",
        "Z-3,Sandalia,Fresca,calzado,barata,sí,40,",
      ].join("\n"),
    );
    const imported = await inProcess(["import", join(dir, "tienda.csv")], env);
    expect(imported).toMatchObject({ code: 1 });
    expect(summary(imported.stdout)).toMatchObject({ created: 2, failed: 1 });
    expect(imported.stderr).toContain("item 2: La columna 'price' es de números y «barata» no lo es");
    const file = join(dir, "export.jsonl.gz");
    expect(await inProcess(["export", file], env)).toMatchObject({ code: 0 });
    const exported = new TextDecoder()
      .decode(Bun.gunzipSync(readFileSync(file)))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { sku?: string; attributes?: unknown })
      .filter((line) => line.sku !== undefined);
    expect(exported.map(({ sku, attributes }) => ({ sku, attributes }))).toEqual([
      { sku: "Z-1", attributes: { brand: "Acme", in_stock: true, price: 59.9, tallas: ["41", "42"] } },
      { sku: "Z-2", attributes: { in_stock: false, price: 120 } },
    ]);
  });

  test("JSON Lines, a JSON array, CSV and gzip all import; a second run changes nothing", async () => {
    const dir = tempDir();
    const env = { DATA_DIR: await migratedDataDir(join(dir, "data")) };
    const items = Array.from({ length: 12 }, (_, i) => product(i));
    const files = {
      "a.jsonl": items
        .slice(0, 3)
        .map((item) => JSON.stringify({ ...item, id: 99, brand: "ignored" }))
        .join("\n"),
      "b.json": JSON.stringify(items.slice(3, 6), null, 2),
      "c.csv": [
        csvLine(["sku", "name", "description", "category"]),
        ...items.slice(6, 9).map((item) => csvLine([item.sku, item.name, item.description, item.category])),
      ].join("\r\n"),
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    writeFileSync(
      join(dir, "d.jsonl.gz"),
      gzipSync(
        items
          .slice(9)
          .map((item) => JSON.stringify(item))
          .join("\n"),
      ),
    );

    for (const name of ["a.jsonl", "b.json", "c.csv", "d.jsonl.gz"]) {
      const run = await inProcess(["import", join(dir, name)], env);
      expect({ name, code: run.code }).toEqual({ name, code: 0 });
      expect(summary(run.stdout)).toMatchObject({ event: "import_done", items: 3, created: 3, failed: 0 });
    }
    const again = await inProcess(["import", join(dir, "c.csv"), "--report", join(dir, "report.jsonl")], env);
    expect(summary(again.stdout)).toMatchObject({ items: 3, created: 0, updated: 0, unchanged: 3 });
    const report = readFileSync(join(dir, "report.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(report.map((item) => [item.index, item.status, item.sku])).toEqual([
      [0, "unchanged", "SKU-6"],
      [1, "unchanged", "SKU-7"],
      [2, "unchanged", "SKU-8"],
    ]);

    // A sku repeated in one file is an update: the later line wins, and the command succeeds.
    const repeated = [product(12), { ...product(12), name: "Repetido" }, { ...product(0), name: "Otro" }];
    writeFileSync(join(dir, "e.jsonl"), repeated.map((item) => JSON.stringify(item)).join("\n"));
    const withRepeats = await inProcess(["import", join(dir, "e.jsonl")], env);
    expect(withRepeats).toMatchObject({ code: 0 });
    expect(summary(withRepeats.stdout)).toMatchObject({ items: 3, created: 1, updated: 2, failed: 0 });
  });

  test("invalid items are reported by position and the command exits 1; an unreadable file says why", async () => {
    const dir = tempDir();
    const env = { DATA_DIR: await migratedDataDir(join(dir, "data")) };
    writeFileSync(
      join(dir, "mixed.jsonl"),
      [JSON.stringify(product(1)), "{roto", JSON.stringify({ name: "x" })].join("\n"),
    );
    const mixed = await inProcess(["import", join(dir, "mixed.jsonl")], env);
    expect(mixed).toMatchObject({ code: 1 });
    expect(summary(mixed.stdout)).toMatchObject({ created: 1, failed: 2 });
    expect(mixed.stderr).toContain("item 1: El elemento no es un JSON válido");
    expect(mixed.stderr).toContain("item 2: Campo 'description': es obligatorio");

    // A file unreadable from its start is refused before the database is opened (none is made here).
    const noDatabase = { DATA_DIR: join(dir, "empty") };
    writeFileSync(join(dir, "bad.csv"), "nombre,precio final\nx,1\n");
    writeFileSync(join(dir, "broken.json"), `[${JSON.stringify(product(1))}`);
    const [badCsv, brokenArray, missing, badFormat] = await Promise.all([
      inProcess(["import", join(dir, "bad.csv")], noDatabase),
      inProcess(["import", join(dir, "broken.json")], noDatabase),
      inProcess(["import", join(dir, "nope.jsonl")], noDatabase),
      inProcess(["import", join(dir, "mixed.jsonl"), "--format", "xml"], noDatabase),
    ]);
    expect(badCsv).toMatchObject({ code: 1 });
    expect(badCsv.stderr).toContain("import: CSV header: column 'precio final' is neither one of");
    expect(brokenArray).toMatchObject({ code: 1 });
    expect(brokenArray.stderr).toContain("import: JSON: El array JSON no está completo");
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toContain("import: no such file");
    expect(badFormat).toMatchObject({ code: 2 });
    expect(existsSync(noDatabase.DATA_DIR)).toBe(false);
  });

  test("Ctrl-C stops after the batch being written, keeps it, and running again resumes", async () => {
    // Embedded by a fake provider that holds its 4th call until the command is interrupted: three
    // batches stored, the fourth in flight, whatever the machine's speed.
    const held = Promise.withResolvers<void>();
    let calls = 0;
    const provider = FakeProviderServer.start((request) => {
      if (request.path === "/v1/embeddings" && ++calls === 4) {
        held.resolve();
        return { hang: true };
      }
      return openAIHandler(request);
    });
    // The import waits on the held call for ever: a failed assertion must not leave it running.
    let child: ReturnType<typeof cli> | undefined;
    try {
      const dir = tempDir();
      const env = {
        DATA_DIR: await withNewDatabase(join(dir, "data")),
        EMBEDDING_PROVIDER: "openai",
        OPENAI_BASE_URL: `${provider.url}/v1`,
        EMBEDDING_DIMENSIONS: "64",
      };
      const total = 100;
      const file = join(dir, "catalogue.jsonl");
      writeFileSync(file, Array.from({ length: total }, (_, i) => JSON.stringify(product(i))).join("\n"));
      const report = join(dir, "report.jsonl");
      child = cli(["import", file, "--batch-size", "20", "--report", report], env);
      await Promise.race([held.promise, child.exited]);
      // The third batch, embedded before the fourth call, is written when its turn comes: on a
      // loaded machine that came after the fourth call (an interrupt then kept 40).
      const reported = () => (existsSync(report) ? readFileSync(report, "utf8").split("\n").length - 1 : 0);
      await Promise.race([waitUntil(() => reported() >= 60), child.exited]);
      child.kill("SIGINT");
      const interrupted = await finished(child);
      expect(interrupted).toMatchObject({ code: 130 });
      expect(summary(interrupted.stdout)).toMatchObject({ event: "import_interrupted", created: 60, failed: 0 });
      expect(readFileSync(report, "utf8").trim().split("\n")).toHaveLength(60);

      const resumed = await inProcess(["import", file], env);
      expect(resumed).toMatchObject({ code: 0 });
      expect(summary(resumed.stdout)).toMatchObject({ items: total, created: 40, unchanged: 60, failed: 0 });
    } finally {
      // `bun run` passes SIGTERM on to the command (SIGKILL would leave the command itself running).
      if (child?.exitCode === null) child.kill("SIGTERM");
      await child?.exited;
      await provider.stop();
    }
  });
});

describe.concurrent("the vector index after an import", () => {
  test("import builds it once the catalogue reaches VECTOR_INDEX_MIN_ROWS; index status, drop and build", async () => {
    const dir = tempDir();
    const env = { DATA_DIR: await migratedDataDir(join(dir, "data")), VECTOR_INDEX_MIN_ROWS: "5" };
    const file = join(dir, "few.jsonl");
    writeFileSync(file, `${[0, 1, 2].map((i) => JSON.stringify(product(i))).join("\n")}\n`);
    const few = await inProcess(["import", file], env);
    expect(few).toMatchObject({ code: 0 });
    expect(few.stderr).not.toContain("vector index built");

    writeFileSync(file, `${Array.from({ length: 6 }, (_, i) => JSON.stringify(product(i))).join("\n")}\n`);
    const enough = await inProcess(["import", file], env);
    expect(enough).toMatchObject({ code: 0 });
    expect(enough.stderr).toContain("vector index built");

    const status = await cliProcess(["index", "status"], {
      ADMIN_PASSWORD,
      ...env,
      VECTOR_FILTER_FAR_EXACT_MAX_ROWS: "12345",
    });
    expect(status).toMatchObject({ code: 0 });
    // With the settings searches take their plans by.
    expect(JSON.parse(status.stdout)).toMatchObject({
      column: "embedding",
      present: true,
      valid: true,
      minRows: 5,
      filterExactMaxRows: 30_000,
      filterFarExactMaxRows: 12_345,
    });

    const dropped = await finished(cli(["index", "drop"], env));
    expect(dropped).toMatchObject({ code: 0 });
    expect(dropped.stderr).toContain("vector index dropped");
    expect(JSON.parse(dropped.stdout)).toMatchObject({ column: "embedding", present: false, minRows: 5 });

    const built = await finished(cli(["index", "build"], env));
    expect(built).toMatchObject({ code: 0 });
    expect(JSON.parse(built.stdout)).toMatchObject({ column: "embedding", present: true, valid: true });
    expect(JSON.parse(built.stdout).bytes).toBeGreaterThan(0);
  });

  test.skipIf(!POSTGRES_URL)(
    "on a PostgreSQL server, index build (which reports a long build's progress) builds the index, answers and ends (TEST_DATABASE_URL)",
    async () => {
      const dir = tempDir();
      const schema = await schemaOfItsOwn("index_build");
      try {
        const env = { DATABASE_URL: schema.url, VECTOR_INDEX_MIN_ROWS: "1000" };
        const file = join(dir, "few.jsonl");
        writeFileSync(file, `${Array.from({ length: 6 }, (_, i) => JSON.stringify(product(i))).join("\n")}\n`);
        expect(await inProcess(["import", file], env)).toMatchObject({ code: 0 });

        // The README's command as a process: it answers and ends. That it leaves no wait behind to keep
        // the process up past its answer is index-build-progress.test.ts's, on fake timers.
        const built = await finished(cli(["index", "build"], env));
        expect(built).toMatchObject({ code: 0 });
        expect(JSON.parse(built.stdout)).toMatchObject({ present: true, valid: true });
      } finally {
        await schema.drop();
      }
    },
  );
});
