import { dlopen, FFIType, read } from "bun:ffi";
import { closeSync, constants, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

/** Who holds the lock, as it wrote itself into the lock file (for the message only). */
export interface LockHolder {
  pid: number;
  host: string;
}

/** The embedded database is already open in another live process (or earlier in this one). */
export class DataDirInUse extends Error {
  readonly pid: number | undefined;
  readonly host: string | undefined;

  constructor(
    readonly dataDir: string,
    holder?: LockHolder,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by ${describe(holder)}: stop that process first (or share one PostgreSQL server between processes with DATABASE_URL)`,
    );
    this.pid = holder?.pid;
    this.host = holder?.host;
  }
}

function describe(holder: LockHolder | undefined): string {
  if (holder === undefined) return "another process";
  const who = `process ${holder.pid}`;
  if (holder.host !== hostname())
    return `${who} on host ${holder.host} (another container or machine sharing this folder)`;
  if (holder.pid === process.pid)
    return `${who} (this process, or one in another container with the same pid and host name)`;
  return who;
}

const LOCK_FILE = "sku-search.lock";
// <sys/file.h>, the same on every Linux architecture.
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
// EWOULDBLOCK (= EAGAIN) on Linux: the lock is held through another open file.
const EWOULDBLOCK = 11;

type Libc = ReturnType<typeof openLibc>;
let libc: Libc | undefined;

function openLibc() {
  return dlopen("libc.so.6", {
    flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

/** glibc's flock(2) and errno, loaded on first use (an in-memory database never needs them). */
function loadLibc(): Libc {
  if (libc !== undefined) return libc;
  try {
    libc = openLibc();
  } catch (error) {
    throw new Error(
      `cannot lock the embedded database: flock() from glibc's libc.so.6 is not available (${(error as Error).message})`,
    );
  }
  return libc;
}

/**
 * PGlite is one Postgres backend inside one process and does not guard its files: a second process
 * opening the same folder would corrupt it. So the opener takes an exclusive flock(2) on
 * `dataDir`/sku-search.lock and keeps that file open as long as the database is: the kernel refuses
 * the lock to any other open of the file (another process, another container on the same local
 * volume, or a second open in this process) and drops it when the holder ends, even by SIGKILL, so
 * no lock is ever left stale. pids are not compared (in containers every entrypoint is pid 1): the
 * `pid@host` written into the file only names the holder in the next opener's DataDirInUse.
 * The file itself is never removed (a removed and recreated file would be a second, free lock).
 * Returns the function that releases the lock.
 */
export function lockDataDir(dataDir: string): () => void {
  const { flock, __errno_location } = loadLibc();
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  // Not truncated on open: until this process holds the lock, the content is the holder's.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    const errnoAt = __errno_location();
    const errno = errnoAt === null ? -1 : read.i32(errnoAt, 0);
    closeSync(fd);
    if (errno === EWOULDBLOCK) throw new DataDirInUse(dataDir, readHolder(path));
    throw new Error(`cannot lock ${path}: flock() failed with errno ${errno} (does this file system support locks?)`);
  }
  try {
    ftruncateSync(fd, 0);
    writeSync(fd, `${process.pid}@${hostname()}\n`, 0);
  } catch {
    // Only the message of a later opener would lack the holder: the lock itself is held.
  }
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    try {
      ftruncateSync(fd, 0);
    } catch {
      // The holder's name stays behind: harmless, the next opener overwrites it.
    }
    flock(fd, LOCK_UN);
    closeSync(fd);
  };
}

/** The holder as written in the lock file, or undefined while it is empty (just taken) or unreadable. */
function readHolder(path: string): LockHolder | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  const match = /^(\d{1,10})@([^\s@]{1,255})\s*$/.exec(text);
  if (match === null) return undefined;
  return { pid: Number(match[1]), host: match[2] as string };
}
