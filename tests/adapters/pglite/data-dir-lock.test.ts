import { expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { DataDirInUse, lockDataDir } from "../../../src/adapters/pglite/data-dir-lock.ts";
import { openPglite } from "../../../src/adapters/pglite/pglite-client.ts";
import { withNewDatabase } from "../../support/new-database.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

setDefaultTimeout(60_000);

const dataDir = useTempDirs("lock");
const LOCK_MODULE = join(import.meta.dir, "../../../src/adapters/pglite/data-dir-lock.ts");
const lockFile = (dir: string) => join(dir, "sku-search.lock");

/** Starts `cmd`, which prints "locked" once it holds the lock, and waits for that line. */
async function holder(cmd: string[]): Promise<Bun.Subprocess<"ignore", "pipe", "inherit">> {
  const child = Bun.spawn(cmd, { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("locked")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${cmd.join(" ")} ended before taking the lock: ${out}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return child;
}

/** Another bun process holding the lock through this module, until killed. */
const bunHolder = (dir: string) =>
  holder([
    process.execPath,
    "-e",
    `import { lockDataDir } from ${JSON.stringify(LOCK_MODULE)};
     lockDataDir(${JSON.stringify(dir)}); console.log("locked"); setInterval(() => {}, 1000);`,
  ]);

test("a second process cannot open an embedded database that is in use, and a SIGKILLed holder frees it at once", async () => {
  const dir = await withNewDatabase(dataDir());
  const other = await bunHolder(dir);
  try {
    expect(readFileSync(lockFile(dir), "utf8")).toBe(`${other.pid}@${hostname()}\n`);
    const opening = openPglite(dir);
    await expect(opening).rejects.toBeInstanceOf(DataDirInUse);
    await expect(opening).rejects.toThrow(`in use by process ${other.pid}:`);
  } finally {
    other.kill("SIGKILL");
    await other.exited;
  }
  // No cleanup ran in the killed process; the kernel dropped its lock.
  const db = await openPglite(dir);
  expect(await db.query<{ one: number }>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  await db.close();
});

test.skipIf(Bun.which("flock") === null).each([
  // A pid 1 like ours would be in another container: pids are never compared, only the lock counts.
  ["1@container-b\n", "in use by process 1 on host container-b (another container"],
  // Just taken (not written yet), or written by something else.
  ["", "in use by another process:"],
  ["not a holder", "in use by another process:"],
])("a lock held by another process refuses the database, whatever its file says (%j)", async (content, message) => {
  const dir = dataDir();
  writeFileSync(lockFile(dir), content);
  const other = await holder(["flock", "-n", lockFile(dir), "-c", "echo locked; exec sleep 30"]);
  try {
    expect(() => lockDataDir(dir)).toThrow(message);
    expect(readFileSync(lockFile(dir), "utf8")).toBe(content);
  } finally {
    other.kill();
    await other.exited;
  }
});

test.each(["", "garbage\0\n", `${process.pid}@${hostname()}\n`, "1@container-b\n"])(
  "a lock file left on disk without a holder does not block (%j)",
  (content) => {
    const dir = dataDir();
    writeFileSync(lockFile(dir), content);
    const release = lockDataDir(dir);
    expect(readFileSync(lockFile(dir), "utf8")).toBe(`${process.pid}@${hostname()}\n`);
    release();
  },
);

test("closing the database releases the lock, and a second open in the same process without closing is refused", async () => {
  const dir = await withNewDatabase(dataDir());
  const db = await openPglite(dir);
  const opening = openPglite(dir);
  await expect(opening).rejects.toBeInstanceOf(DataDirInUse);
  await expect(opening).rejects.toThrow(`in use by process ${process.pid} (this process`);
  expect(await db.query<{ one: number }>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  await db.close();
  expect(readFileSync(lockFile(dir), "utf8")).toBe("");

  const again = await openPglite(dir);
  expect(await again.query<{ one: number }>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
  await again.close();
});

test("releasing twice is harmless", () => {
  const dir = dataDir();
  const release = lockDataDir(dir);
  release();
  release();
  lockDataDir(dir)();
});
