/**
 * Makes the new embedded database a first `bun start` unpacks instead of running initdb (about
 * 2.4 s less on the first start): models/pglite-<version>-new-database.tar.gz. Runs as part of the
 * package's postinstall; does nothing when this PGlite's one is already there.
 */
import { existsSync, mkdirSync, renameSync } from "node:fs";
import { dirname } from "node:path";
import { installedNewDatabasePath, makeNewDatabase } from "../src/adapters/pglite/new-database.ts";

const path = installedNewDatabasePath();
if (!existsSync(path)) {
  mkdirSync(dirname(path), { recursive: true });
  // Written aside, then renamed: a start never sees half a file.
  const partial = `${path}.${process.pid}.partial`;
  await Bun.write(partial, await makeNewDatabase("gzip"));
  renameSync(partial, path);
  console.log(`new embedded database template made: ${path}`);
}
