/**
 * Embedded databases for tests without running PGlite's initdb for each (3 to 7 s of CPU on 2 busy
 * cores): a new database made as the build makes the one the executable carries (scripts/build.ts:
 * `PGlite.create()`, then `dumpDataDir`), handed out as copies. A copy is what a first start of the
 * executable unpacks: a database just made by initdb, none of our tables in it, so the service still
 * migrates it and creates its admin. (Tests of initdb itself call openPglite on an empty folder.)
 *
 * That database depends only on PGlite's version, so it is made once per version and kept, for later
 * runs and for the other processes of a run (`--parallel`), in a folder of this user's own under the
 * temp directory, as the executable keeps its files (src/app/runtime-assets.ts).
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { openPglite } from "../../src/adapters/pglite/pglite-client.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";

/**
 * The tests' databases' `shared_buffers` (postgresql.auto.conf in the new database's files), where the
 * service's keep PostgreSQL's 128 MB: PGlite allocates and clears them in WebAssembly memory at each
 * start, about 0.13 s of CPU of an open's 0.35 to 0.5 (measured side by side), and a test's data
 * fits in 16 MB. Nothing a test checks depends on it (the planner's costs take no account of it).
 */
const TEST_SHARED_BUFFERS = "16MB";

let made: Promise<{ tarball: string; folder: string }> | undefined;

/** The installed PGlite's version (its package.json, next to dist/). */
function pgliteVersion(): string {
  const packageJson = join(dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite"))), "..", "package.json");
  return (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
}

/** A folder only this user can write (what is unpacked from it is opened as a database). */
function cacheDir(): string {
  const uid = process.getuid?.() ?? 0;
  const dir = join(tmpdir(), `sku-search-tests-${uid}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${dir} must be a folder owned by user ${uid} that no one else can write (mode 700)`);
  }
  return dir;
}

/** The new database's tarball and the folder it unpacks to, made now if this PGlite has none yet. */
function newDatabase(): Promise<{ tarball: string; folder: string }> {
  made ??= (async () => {
    const base = join(cacheDir(), `pglite-${pgliteVersion()}-new-database-${TEST_SHARED_BUFFERS}`);
    const tarball = `${base}.tar`;
    const folder = base;
    // Each written aside, then renamed: another process never sees half of either.
    if (!existsSync(tarball)) {
      const partial = `${tarball}.${process.pid}.partial`;
      const db = await PGlite.create();
      await db.exec(`ALTER SYSTEM SET shared_buffers = '${TEST_SHARED_BUFFERS}'`);
      await Bun.write(partial, await db.dumpDataDir("none")); // uncompressed: faster to unpack than gzip
      await db.close();
      renameSync(partial, tarball);
    }
    if (!existsSync(join(folder, "PG_VERSION"))) {
      const partial = `${folder}.${process.pid}.partial`;
      rmSync(partial, { recursive: true, force: true });
      mkdirSync(partial);
      // Unpacked as PGlite's loadDataDir does; members are named from the data folder's root ("/PG_VERSION").
      const tar = Bun.spawn(["tar", "-x", "-f", tarball, "-C", partial], { stderr: "pipe" });
      const [code, stderr] = await Promise.all([tar.exited, new Response(tar.stderr).text()]);
      if (code !== 0) throw new Error(`cannot unpack ${tarball}: ${stderr}`);
      try {
        renameSync(partial, folder);
      } catch (error) {
        // Another process got there first (or a broken folder is in the way: remove it by hand).
        rmSync(partial, { recursive: true, force: true });
        if (!existsSync(join(folder, "PG_VERSION"))) throw error;
      }
    }
    return { tarball, folder };
  })();
  return made;
}

/** A new database's files as a `dumpDataDir` tarball (uncompressed). */
export async function newDatabaseTarball(): Promise<Blob> {
  return Bun.file((await newDatabase()).tarball);
}

/** PGlite in memory on a new database: what `openPglite(undefined)` opens, without running initdb. */
export async function openNewPglite(): Promise<SqlClient> {
  return openPglite(undefined, { initialDataDir: await newDatabaseTarball() });
}

/**
 * Puts a new embedded database into `dataDir` (which has none yet), as if the service had made it
 * there and stopped before using it; returns `dataDir`.
 */
export async function withNewDatabase(dataDir: string): Promise<string> {
  const pgdata = join(dataDir, "pgdata");
  if (existsSync(pgdata)) throw new Error(`${dataDir} already holds a database`);
  const { folder } = await newDatabase();
  mkdirSync(dataDir, { recursive: true });
  // cp rather than cpSync: about 3 times faster on its 1,000 files, and tests running beside this one go on meanwhile.
  const cp = Bun.spawn(["cp", "-R", folder, pgdata], { stderr: "pipe" });
  const [code, stderr] = await Promise.all([cp.exited, new Response(cp.stderr).text()]);
  if (code !== 0) throw new Error(`cannot copy ${folder} to ${pgdata}: ${stderr}`);
  return dataDir;
}
