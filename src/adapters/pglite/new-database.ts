/**
 * A new, empty embedded database as PGlite's `dumpDataDir` tarball: what a first start unpacks
 * instead of running PostgreSQL's initdb (measured here: initdb 2.8 s, unpacking this 0.45 s). The
 * build embeds one in the executable (scripts/build.ts); `bun install` leaves one in models/ for
 * runs from source (scripts/install-database-template.ts). It depends only on PGlite's version,
 * which its file name carries, so an upgraded PGlite never unpacks another version's files.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";

/** The installed PGlite's version (its package.json, next to dist/). */
export function pgliteVersion(): string {
  const packageJson = join(dirname(fileURLToPath(import.meta.resolve("@electric-sql/pglite"))), "..", "package.json");
  return (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
}

/** Where `bun install` puts the new database for runs from source (gzip: 4.6 MB rather than 40). */
export function installedNewDatabasePath(): string {
  return resolve(import.meta.dir, "../../../models", `pglite-${pgliteVersion()}-new-database.tar.gz`);
}

/** The installed new database, when `bun install` made one for this PGlite. */
export function installedNewDatabase(): Blob | undefined {
  const path = installedNewDatabasePath();
  return existsSync(path) ? Bun.file(path) : undefined;
}

/** Runs PGlite's initdb now, in memory, and packs the result. */
export async function makeNewDatabase(compression: "gzip" | "none"): Promise<Blob> {
  const db = await PGlite.create();
  try {
    return await db.dumpDataDir(compression);
  } finally {
    await db.close();
  }
}
