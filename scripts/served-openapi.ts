/**
 * The OpenAPI document the service serves: it is started as `bun start` does (src/app/main.ts) on a
 * temporary DATA_DIR and a free loopback port, with only the settings given (no DATABASE_URL or
 * provider key from the caller's environment), and GET /openapi/json is fetched. Used by
 * `bun run lint:openapi` (scripts/lint-openapi.ts, scripts/check-openapi-client.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.ts";

const root = join(import.meta.dir, "..");
const STARTUP_TIMEOUT_MS = 120_000;

/** GET /openapi/json of the service started with these settings on an empty temporary database. */
export async function servedDocument(settings: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "sku-search-openapi-"));
  const port = await freePort();
  const child = Bun.spawn([process.execPath, "src/app/main.ts"], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? dataDir,
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dataDir,
      QUERY_TRANSLATION: "off",
      LOG_LEVEL: "error",
      ...settings,
    },
    stdout: "inherit",
    stderr: "inherit",
  });
  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`the service exited with code ${child.exitCode} while starting`);
      const response = await fetch(`http://127.0.0.1:${port}/openapi/json`).catch(() => undefined);
      if (response?.ok) return await response.text();
      await Bun.sleep(200);
    }
    throw new Error(`GET /openapi/json did not answer within ${STARTUP_TIMEOUT_MS / 1000} s`);
  } finally {
    child.kill("SIGTERM");
    await child.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}
