import { expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { openPglite, vacuumWhereChanged } from "../../../src/adapters/pglite/pglite-client.ts";
import type { SqlClient } from "../../../src/adapters/postgres/sql-client.ts";
import { newDatabaseTarball, withNewDatabase } from "../../support/new-database.ts";
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

/** What PostgreSQL knows of `table`: its rows as the last VACUUM or ANALYZE counted them (-1: never), its dead rows. */
async function tableStatistics(db: SqlClient, table: string): Promise<{ rows: number; dead: number }> {
  await db.query("SELECT pg_stat_force_next_flush()");
  const [row] = await db.query<{ rows: number; dead: number | string }>(
    `SELECT c.reltuples::float8 AS rows, coalesce(s.n_dead_tup, 0) AS dead
     FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = $1::regclass`,
    [table],
  );
  return { rows: Number(row?.rows), dead: Number(row?.dead) };
}

test("vacuumWhereChanged vacuums and analyzes the tables that changed enough (autovacuum's thresholds), and those never analyzed; not the others", async () => {
  const db = await openPglite(undefined, { initialDataDir: await newDatabaseTarball() });
  await db.query("CREATE TABLE kept (n integer)");
  await db.query("CREATE TABLE busy (n integer)");
  // Never analyzed, both.
  expect(await vacuumWhereChanged(db)).toEqual(["public.busy", "public.kept"]);
  expect(await vacuumWhereChanged(db)).toEqual([]);
  await db.query("INSERT INTO busy SELECT generate_series(1, 3000)");
  await db.query("INSERT INTO kept SELECT generate_series(1, 20)");
  expect(await vacuumWhereChanged(db)).toEqual(["public.busy"]);
  expect(await tableStatistics(db, "busy")).toEqual({ rows: 3000, dead: 0 });
  // 1,000 deleted of 3,000: past 50 + 20 %.
  await db.query("DELETE FROM busy WHERE n <= 1000");
  expect((await tableStatistics(db, "busy")).dead).toBe(1000);
  expect(await vacuumWhereChanged(db)).toEqual(["public.busy"]);
  expect(await tableStatistics(db, "busy")).toEqual({ rows: 2000, dead: 0 });
  // 20 rows written, then 20 changed: 40 changes, 20 dead, under 50 + 10 % (and 20 %) of none.
  await db.query("UPDATE kept SET n = n + 1");
  expect(await vacuumWhereChanged(db)).toEqual([]);
  await db.close();
});

test("a data directory an earlier process left unvacuumed (it stopped without closing, or predates the upkeep) has its grown tables vacuumed and analyzed when opened", async () => {
  const dir = await withNewDatabase(dataDir());
  // Written as a version without the upkeep did: its statistics from when the table was empty.
  const earlier = await PGlite.create({ dataDir: join(dir, "pgdata") });
  await earlier.exec("CREATE TABLE grown (n integer, word text); ANALYZE grown");
  await earlier.exec("CREATE TABLE small (n integer); ANALYZE small; INSERT INTO small SELECT generate_series(1, 20)");
  await earlier.exec("INSERT INTO grown SELECT i, md5(i::text) FROM generate_series(1, 20000) AS i");
  await earlier.close();

  const db = await openPglite(dir, { initialDataDir: await newDatabaseTarball() });
  expect(await tableStatistics(db, "grown")).toEqual({ rows: 20000, dead: 0 });
  // A table a page long: left to the counts, as autovacuum would.
  expect((await tableStatistics(db, "small")).rows).toBe(0);
  await db.close();
});

test("the service's embedded database vacuums by itself every vacuumEveryMs, and what a process wrote is vacuumed when it closes the database", async () => {
  const dir = dataDir();
  const initialDataDir = await newDatabaseTarball();
  const serving = await openPglite(dir, { initialDataDir }, {}, { vacuumEveryMs: 20 });
  await serving.query("CREATE TABLE written (n integer)");
  await serving.query("INSERT INTO written SELECT generate_series(1, 5000)");
  let statistics = { rows: -1, dead: 0 };
  while (statistics.rows !== 5000) {
    await Bun.sleep(20);
    statistics = await tableStatistics(serving, "written");
  }
  await serving.close();

  // A command's process (no timer): what it wrote, vacuumed as it closes.
  const command = await openPglite(dir, { initialDataDir });
  await command.query("INSERT INTO written SELECT generate_series(1, 5000)");
  expect((await tableStatistics(command, "written")).rows).toBe(5000);
  await command.close();
  const next = await openPglite(dir, { initialDataDir });
  expect((await tableStatistics(next, "written")).rows).toBe(10_000);
  await next.close();
});
