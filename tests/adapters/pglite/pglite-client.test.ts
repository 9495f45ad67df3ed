import { expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { openPglite } from "../../../src/adapters/pglite/pglite-client.ts";
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
