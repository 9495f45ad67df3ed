import { expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DataDirInUse } from "../../../src/adapters/pglite/data-dir-lock.ts";
import { openPglite } from "../../../src/adapters/pglite/pglite-client.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

setDefaultTimeout(60_000);

const dataDir = useTempDirs("lock");

test("a second process cannot open an embedded database that is in use", async () => {
  const dir = dataDir();
  const other = Bun.spawn(["sleep", "30"]);
  try {
    writeFileSync(join(dir, "sku-search.lock"), String(other.pid));
    const opening = openPglite(dir);
    await expect(opening).rejects.toBeInstanceOf(DataDirInUse);
    await expect(opening).rejects.toThrow(`in use by process ${other.pid}`);
  } finally {
    other.kill();
    await other.exited;
  }
});

test("a lock left by a process that has ended is taken over, and closing releases it", async () => {
  const dir = dataDir();
  const ended = Bun.spawn(["true"]);
  await ended.exited;
  writeFileSync(join(dir, "sku-search.lock"), String(ended.pid));

  const db = await openPglite(dir);
  expect(await db.query<{ one: number }>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  expect(existsSync(join(dir, "sku-search.lock"))).toBe(true);
  await db.close();
  expect(existsSync(join(dir, "sku-search.lock"))).toBe(false);
});
