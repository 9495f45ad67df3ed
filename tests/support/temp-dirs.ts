import { afterAll, afterEach } from "bun:test";
import { accessSync, constants, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Where tests make their folders: tmpfs (/dev/shm) where there is one, else the temp directory.
 * An embedded database is about 1,000 files: creating them on ext4, among the inodes of folders
 * just removed by earlier tests, cost 1.1 to 1.5 s of kernel time per database here; on tmpfs 0.1 s.
 */
export const TEST_TEMP_ROOT = ((): string => {
  try {
    if (statSync("/dev/shm").isDirectory()) {
      accessSync("/dev/shm", constants.W_OK);
      return "/dev/shm";
    }
  } catch {
    // no tmpfs there
  }
  return tmpdir();
})();

/** A new empty folder under TEST_TEMP_ROOT; the caller removes it. */
export function makeTempDir(prefix: string): string {
  return mkdtempSync(join(TEST_TEMP_ROOT, `sku-search-${prefix}-`));
}

/**
 * A maker of fresh temporary folders, each removed after the test that made it; with
 * `concurrent: true`, after the file's last test instead (an afterEach would remove the folders of
 * tests still running beside the one that ended).
 */
export function useTempDirs(prefix: string, options: { concurrent?: boolean } = {}): () => string {
  const dirs: string[] = [];
  (options.concurrent ? afterAll : afterEach)(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = makeTempDir(prefix);
    dirs.push(dir);
    return dir;
  };
}
