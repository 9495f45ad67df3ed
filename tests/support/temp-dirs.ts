import { afterAll, afterEach } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
    const dir = mkdtempSync(join(tmpdir(), `sku-search-${prefix}-`));
    dirs.push(dir);
    return dir;
  };
}
