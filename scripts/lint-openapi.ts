/**
 * `bun run lint:openapi`: lints the OpenAPI document the running service serves with Redocly CLI's
 * `recommended` rules (redocly.yaml), and fails on any error or warning.
 *
 * It starts the service as `bun start` does (src/app/main.ts) on a temporary DATA_DIR and a free
 * loopback port, fetches GET /openapi/json into dist/openapi.json and lints that file; then again
 * with SEARCH_REQUIRES_AUTH=false and METRICS_TOKEN set, whose document differs (a public search,
 * GET /metrics). The one problem
 * accepted is listed in .redocly.lint-ignore.yaml: `no-path-trailing-slash` on the contract's own
 * `POST /products/`. Redocly runs with its usage reports and update check off.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.ts";

const root = join(import.meta.dir, "..");
const documentPath = join(root, "dist", "openapi.json");
const redocly = join(root, "node_modules", "@redocly", "cli", "bin", "cli.js");
const STARTUP_TIMEOUT_MS = 120_000;

// The settings that change the document: a public search (no 401), and GET /metrics on the service's port.
const variants: { name: string; env: Record<string, string> }[] = [
  { name: "default settings", env: {} },
  {
    name: "SEARCH_REQUIRES_AUTH=false, METRICS_TOKEN set",
    env: { SEARCH_REQUIRES_AUTH: "false", METRICS_TOKEN: "token-de-metricas-solo-para-el-lint" },
  },
];

let failed = false;
for (const variant of variants) {
  const document = await servedDocument(variant.env);
  mkdirSync(join(root, "dist"), { recursive: true });
  await Bun.write(documentPath, document);
  const { errors, warnings, ignored } = await lint();
  console.log(`openapi (${variant.name}): ${errors} errors, ${warnings} warnings, ${ignored} accepted (ignore file)`);
  if (errors + warnings > 0) {
    failed = true;
    // The problems again, in Redocly's own words and with the document's lines.
    await run([process.execPath, redocly, "lint", "--config", "redocly.yaml", "--format=stylish", documentPath]);
  }
}
process.exit(failed ? 1 : 0);

/** GET /openapi/json of the service started with these settings on an empty temporary database. */
async function servedDocument(settings: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "sku-search-openapi-"));
  const port = await freePort();
  const child = Bun.spawn([process.execPath, "src/app/main.ts"], {
    cwd: root,
    // Only what the service needs: no DATABASE_URL or provider key from the caller's environment.
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

async function lint(): Promise<{ errors: number; warnings: number; ignored: number }> {
  const { stdout, exitCode } = await run(
    [process.execPath, redocly, "lint", "--config", "redocly.yaml", "--format=json", documentPath],
    "pipe",
  );
  let report: { totals?: { errors: number; warnings: number; ignored: number } };
  try {
    report = JSON.parse(stdout);
  } catch {
    throw new Error(`redocly lint exited with ${exitCode} without a JSON report:\n${stdout}`);
  }
  if (!report.totals) throw new Error(`redocly lint gave no totals:\n${stdout}`);
  return report.totals;
}

/** Runs Redocly; "pipe" keeps its output (its progress lines on stderr are shown only if it fails). */
async function run(command: string[], output: "inherit" | "pipe" = "inherit") {
  const child = Bun.spawn(command, {
    cwd: root,
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    stdout: output,
    stderr: output,
  });
  if (output === "inherit") return { stdout: "", exitCode: await child.exited };
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout as ReadableStream).text(),
    new Response(child.stderr as ReadableStream).text(),
  ]);
  const exitCode = await child.exited;
  if (exitCode !== 0 && exitCode !== 1) process.stderr.write(stderr);
  return { stdout, exitCode };
}
