import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

/** The embedded database is already open in another live process. */
export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by process ${pid}: stop that process first ` +
        "(or share one PostgreSQL server between processes with DATABASE_URL)",
    );
  }
}

const LOCK_FILE = "sku-search.lock";

/**
 * PGlite is one Postgres backend inside one process and does not guard its files: a second process
 * opening the same folder would corrupt it. This lock file (holding the owner's pid) makes the
 * second opener fail instead; a lock left by a process that no longer runs is taken over.
 * Returns the function that releases the lock.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (owner !== process.pid && isRunning(owner)) throw new DataDirInUse(dataDir, owner);
      rmSync(path, { force: true });
    }
  }
  throw new Error(`could not take the lock ${path}`);
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
