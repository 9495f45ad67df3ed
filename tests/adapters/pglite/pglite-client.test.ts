import { expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { openPglite } from "../../../src/adapters/pglite/pglite-client.ts";
import type { SqlClient } from "../../../src/adapters/postgres/sql-client.ts";
import { newDatabaseTarball } from "../../support/new-database.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

setDefaultTimeout(60_000);

const dataDir = useTempDirs("pglite-client");

/** A database tarball as the build makes one (gzip), with a table that shows where a database came from. */
async function template(): Promise<Blob> {
  const db = await PGlite.create({ loadDataDir: await newDatabaseTarball() });
  await db.exec("CREATE TABLE origin (name text); INSERT INTO origin VALUES ('template')");
  const tarball = await db.dumpDataDir("gzip");
  await db.close();
  return tarball;
}

test("a new database starts from the initial data folder, and a later open keeps the existing one", async () => {
  const dir = dataDir();
  const initialDataDir = await template();

  const first = await openPglite(dir, { initialDataDir });
  expect(await first.query("SELECT name FROM origin")).toEqual([{ name: "template" }]);
  await first.query("INSERT INTO origin VALUES ('first run')");
  await first.close();

  const second = await openPglite(dir, { initialDataDir });
  expect(await second.query("SELECT name FROM origin ORDER BY name")).toEqual([
    { name: "first run" },
    { name: "template" },
  ]);
  await second.close();
});

test("a new database is unpacked where only this user can read it; a start interrupted while unpacking leaves nothing that stops the next", async () => {
  const dir = dataDir();
  // What a start killed half-way through unpacking leaves: a partial folder beside pgdata, no pgdata.
  mkdirSync(join(dir, "pgdata.partial", "base"), { recursive: true });
  writeFileSync(join(dir, "pgdata.partial", "base", "half-written"), "x");

  const db = await openPglite(dir, { initialDataDir: await template() });
  expect(await db.query("SELECT name FROM origin")).toEqual([{ name: "template" }]);
  await db.close();
  expect(statSync(join(dir, "pgdata")).mode & 0o777).toBe(0o700);
  expect(existsSync(join(dir, "pgdata.partial"))).toBe(false);
});

test("a pgdata folder holding files but no database is not unpacked over: the start fails, naming it", async () => {
  const dir = dataDir();
  mkdirSync(join(dir, "pgdata"), { recursive: true });
  writeFileSync(join(dir, "pgdata", "notes.txt"), "mine");

  await expect(openPglite(dir, { initialDataDir: await template() })).rejects.toThrow(
    `${join(dir, "pgdata")} holds files but no database`,
  );
  expect(readFileSync(join(dir, "pgdata", "notes.txt"), "utf8")).toBe("mine");
  // The folder's lock was let go: a later open, once the folder is moved away, succeeds.
  rmSync(join(dir, "pgdata"), { recursive: true });
  const db = await openPglite(dir, { initialDataDir: await template() });
  await db.close();
});

test("a database whose folder others could read (as PGlite made it before) is made private when opened", async () => {
  const dir = dataDir();
  const first = await openPglite(dir, { initialDataDir: await template() });
  await first.close();
  chmodSync(join(dir, "pgdata"), 0o755);

  const again = await openPglite(dir);
  expect(await again.query("SELECT name FROM origin")).toEqual([{ name: "template" }]);
  await again.close();
  expect(statSync(join(dir, "pgdata")).mode & 0o777).toBe(0o700);
});

/** Pages of the pending list of the GIN index `index`, merging them into it (0: nothing was pending). */
async function mergedPendingPages(db: SqlClient, index: string): Promise<number> {
  const [row] = await db.query<{ pages: number | string }>("SELECT gin_clean_pending_list($1::regclass) AS pages", [
    index,
  ]);
  return Number(row?.pages);
}

test("a GIN index's pending list stays a few pages however much is written (PGlite has no autovacuum to merge it), and one left long by an older version is merged at open", async () => {
  const dir = dataDir();
  const initialDataDir = await newDatabaseTarball();
  const fill = (db: SqlClient) =>
    db.query(
      `INSERT INTO words (word) SELECT md5(i::text) || ' ' || md5((i * 7)::text) FROM generate_series(1, 6000) AS i`,
    );

  const db = await openPglite(dir, { initialDataDir });
  await db.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
  await db.query("CREATE TABLE words (word text NOT NULL)");
  await db.query("CREATE INDEX words_trigrams ON words USING gin (word gin_trgm_ops)");
  await fill(db);
  // At most 64 kB: 8 pages.
  expect(await mergedPendingPages(db, "words_trigrams")).toBeLessThanOrEqual(8);
  // Written as before: a list up to PostgreSQL's default 4 MB, still there when the database is opened again.
  await db.query("SELECT set_config('gin_pending_list_limit', '4MB', false)");
  await fill(db);
  expect(await mergedPendingPages(db, "words_trigrams")).toBeGreaterThan(100);
  await fill(db);
  await db.close();
  const reopened = await openPglite(dir, { initialDataDir });
  expect(await mergedPendingPages(reopened, "words_trigrams")).toBe(0);
  const [found] = await reopened.query<{ words: number | string }>(
    `SELECT count(*) AS words FROM words WHERE word % (SELECT word FROM words LIMIT 1)`,
  );
  expect(Number(found?.words)).toBeGreaterThanOrEqual(2);
  await reopened.close();
});
