/**
 * Embedded databases for tests without running PGlite's initdb for each (3 to 7 s of CPU on 2 busy
 * cores): a new database made as the build makes the one the executable carries (scripts/build.ts:
 * `PGlite.create()`, then `dumpDataDir`), handed out as copies. A copy is what a first start of the
 * executable unpacks: a database just made by initdb, none of our tables in it, so the service still
 * migrates it and creates its admin. (Tests of initdb itself call openPglite on an empty folder.)
 *
 * That database depends only on PGlite's version, so it is made once per version and kept, for later
 * runs and for the other processes of a run (`--parallel`), in a folder of this user's own under the
 * temp directory, as the executable keeps its files (src/app/runtime-assets.ts). Beside it are kept
 * databases the service has migrated (withMigratedDatabase), for tests of anything but a first start.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { openPglite } from "../../src/adapters/pglite/pglite-client.ts";
import { prepareDatabase } from "../../src/adapters/postgres/schema.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { CompositionRoot } from "../../src/app/composition-root.ts";
import { loadConfig } from "../../src/app/config.ts";
import { createLogger } from "../../src/app/logger.ts";
import type { EmbeddingSpace } from "../../src/ports/embedding-space.ts";

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
  return withCopyOf((await newDatabase()).folder, dataDir);
}

/** `folder` (a database's files) copied to `dataDir`/pgdata; returns `dataDir`. */
async function withCopyOf(folder: string, dataDir: string): Promise<string> {
  const pgdata = join(dataDir, "pgdata");
  if (existsSync(pgdata)) throw new Error(`${dataDir} already holds a database`);
  mkdirSync(dataDir, { recursive: true });
  // cp rather than cpSync: about 3 times faster on its 1,000 files, and tests running beside this one go on meanwhile.
  const cp = Bun.spawn(["cp", "-R", folder, pgdata], { stderr: "pipe" });
  const [code, stderr] = await Promise.all([cp.exited, new Response(cp.stderr).text()]);
  if (code !== 0) throw new Error(`cannot copy ${folder} to ${pgdata}: ${stderr}`);
  return dataDir;
}

/**
 * The embedding space a service started with the settings `env` embeds in: its embedder's model and
 * dimension, as the service itself makes that embedder (nothing is loaded or called).
 */
async function embeddingSpaceOf(env: Record<string, string>): Promise<EmbeddingSpace> {
  const root = new CompositionRoot(loadConfig(env), createLogger("error"));
  try {
    const { model, dimension } = await root.embedder();
    return { model, dimension };
  } finally {
    await root.close();
  }
}

/**
 * What the program's migrations depend on: its source (src/), hashed once per process. A migrated
 * database is kept under it, so a change to the code makes a new one rather than handing out a
 * stale schema.
 */
let sourceDigest: string | undefined;
function digestOfSource(): string {
  if (sourceDigest !== undefined) return sourceDigest;
  const src = join(import.meta.dir, "../../src");
  const hasher = new Bun.CryptoHasher("sha256");
  for (const file of readdirSync(src, { recursive: true, encoding: "utf8" }).sort()) {
    if (!file.endsWith(".ts")) continue;
    hasher.update(file);
    hasher.update(readFileSync(join(src, file)));
  }
  sourceDigest = hasher.digest("hex").slice(0, 16);
  return sourceDigest;
}

/** Migrated databases (`prefix`…) of other versions of the program left more than a day ago (a run of another checkout may be using a recent one). */
function pruneOlderThanADay(prefix: string): void {
  const base = dirname(prefix);
  for (const name of readdirSync(base)) {
    const folder = join(base, name);
    // statSync: another process may have removed it meanwhile.
    const left = folder.startsWith(prefix) ? statSync(folder, { throwIfNoEntry: false }) : undefined;
    if (left && Date.now() - left.mtimeMs > 86_400_000) rmSync(folder, { recursive: true, force: true });
  }
}

/** The folder of a database migrated for `space`, made now (written aside, then renamed) if this version has none. */
async function migratedDatabase(space: EmbeddingSpace): Promise<string> {
  const key = `${space.model}-${space.dimension}`.replace(/[^A-Za-z0-9.-]/g, "_");
  const prefix = `${(await newDatabase()).folder}-migrated-`;
  const folder = `${prefix}${digestOfSource()}-${key}`;
  if (existsSync(join(folder, "PG_VERSION"))) return folder;
  const partial = `${folder}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  const db = await openPglite(await withNewDatabase(partial));
  try {
    await prepareDatabase(db, space);
  } finally {
    await db.close();
  }
  try {
    renameSync(join(partial, "pgdata"), folder);
  } catch (error) {
    // Another process got there first.
    if (!existsSync(join(folder, "PG_VERSION"))) throw error;
  }
  rmSync(partial, { recursive: true, force: true });
  pruneOlderThanADay(prefix);
  return folder;
}

const migratedDatabases = new Map<string, Promise<string>>();

/**
 * Puts into `dataDir` (which has none yet) an embedded database the service has migrated for
 * `space` (an embedder's; withDatabaseMigratedFor takes an instance's settings) and has not used since: every
 * migration applied, no user, no product. For a test of what the service does with a database,
 * not of its first start: a first start's migrations take about 0.4 s of CPU in PGlite, which such a
 * test would spend for nothing. Made once per space and version of the program, and kept beside
 * the new database.
 */
export async function withMigratedDatabase(dataDir: string, space: EmbeddingSpace): Promise<string> {
  const key = JSON.stringify([space.model, space.dimension]);
  let made = migratedDatabases.get(key);
  if (made === undefined) {
    made = migratedDatabase(space);
    migratedDatabases.set(key, made);
  }
  return withCopyOf(await made, dataDir);
}

/**
 * withMigratedDatabase for the embedding space a service started with the settings `env` embeds in
 * (the offline model's for `{}`); returns `dataDir`.
 */
export async function withDatabaseMigratedFor(dataDir: string, env: Record<string, string>): Promise<string> {
  return withMigratedDatabase(dataDir, await embeddingSpaceOf(env));
}
