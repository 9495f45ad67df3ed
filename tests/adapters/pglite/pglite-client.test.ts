import { expect, setDefaultTimeout, test } from "bun:test";
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
