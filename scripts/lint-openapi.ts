/**
 * `bun run lint:openapi`: lints the OpenAPI document the running service serves with Redocly CLI's
 * `recommended` rules (redocly.yaml), and fails on any error or warning.
 *
 * It starts the service as `bun start` does (scripts/served-openapi.ts), fetches GET /openapi/json
 * into dist/openapi.json and lints that file; then again with SEARCH_REQUIRES_AUTH=false and
 * METRICS_TOKEN set, whose document differs (a public search, GET /metrics). The one problem
 * accepted is listed in .redocly.lint-ignore.yaml: `no-path-trailing-slash` on the contract's own
 * `POST /products/`. Redocly runs with its usage reports and update check off.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { servedDocument } from "./served-openapi.ts";

const root = join(import.meta.dir, "..");
const documentPath = join(root, "dist", "openapi.json");
const redocly = join(root, "node_modules", "@redocly", "cli", "bin", "cli.js");

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
