/**
 * The default path's search latency, with nothing configured: the embedded database (PGlite), the
 * offline model and Apertium, on the eval catalogue (12,430 products), every query a cache miss.
 *
 * 1. `bun run cli import` loads ../shared/eval/products-all.jsonl.gz into a temporary DATA_DIR (and
 *    builds the vector index at its end, as it does when due);
 * 2. `bun run cli serve` serves it as users run it (METRICS_TOKEN set, to read its metrics);
 * 3. distinct queries (the 40 dev queries, each alone and with nine additions such as " barato" or
 *    " for a gift": 400, so every one misses the query cache) go one at a time through
 *    POST /products/search, after `--warmup N` others (default 1,000, each a cache miss too, not
 *    measured): the figures of a service that has been serving for a while. Its first few hundred
 *    searches after a start are slower while JavaScriptCore compiles their code on the same two
 *    cores (`--warmup 5` measures those).
 * Prints the latency seen by the client (p50 / p95, English and Spanish), each stage's p50 / p95
 * from the service's own `search` log lines (translation, embedding, retrieval, check, generation),
 * the rest of the request (HTTP, auth, JSON) from its `request` lines, and the stage sums of
 * sku_search_stage_duration_seconds (over every search since the start, warm-up included); the last
 * line is one JSON object.
 *
 * Run by hand: `bun bench/default-path.ts [--data-dir DIR] [--warmup N] [--lines FILE] [--during-import N]` (with
 * --data-dir the import is skipped when that directory already holds the catalogue, and its query
 * cache is emptied; --lines writes each query's client time and the service's `search` log lines to
 * FILE as JSON; --during-import N: the queries run while the service imports N new products into a
 * catalogue of their own, `bench-import`, made for the run and removed after it, as a job
 * (`Prefer: respond-async`); the figures say how many queries ran before the job ended).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../scripts/free-port.ts";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";

const { values: args } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    lines: { type: "string" },
    "during-import": { type: "string" },
    warmup: { type: "string" },
  },
});
/** A whole number of `what` given as --`name`, or `fallback`. */
function countArg(name: "warmup" | "during-import", fallback: number, what: string): number {
  const given = args[name];
  const count = given === undefined ? fallback : Number(given);
  if (!Number.isInteger(count) || count < 0) throw new Error(`--${name} takes a number of ${what}`);
  return count;
}
const warmup = countArg("warmup", 1000, "queries");
const duringImport = countArg("during-import", 0, "products");
const PROJECT = resolve(import.meta.dir, "..");
const EVAL_DIR = resolve(PROJECT, "../shared/eval");
const PASSWORD = "default-path-bench";
const keep = args["data-dir"] !== undefined;
const dataDir = keep ? resolve(args["data-dir"] as string) : mkdtempSync(join(tmpdir(), "sku-default-path-"));
const env = {
  ...process.env,
  DATA_DIR: dataDir,
  ADMIN_PASSWORD: PASSWORD,
  METRICS_TOKEN: "default-path-bench-metrics-token",
  SEARCH_RATE_LIMIT: "0",
  WRITE_RATE_LIMIT: "0",
};
const out = (line: string) => console.log(line);

out(
  `default path: PGlite + offline model + Apertium, eval catalogue, DATA_DIR ${dataDir}; ${warmup} warm-up queries; load ${loadavg()[0]?.toFixed(1)}`,
);
if (!existsSync(join(dataDir, "pgdata"))) {
  const started = performance.now();
  const imported = Bun.spawn(["bun", "run", "cli", "import", join(EVAL_DIR, "products-all.jsonl.gz")], {
    cwd: PROJECT,
    env,
    stdout: "ignore",
    stderr: "inherit",
  });
  if ((await imported.exited) !== 0) throw new Error("import failed");
  out(`imported in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (keep) {
  // A reused catalogue keeps the query embeddings of the last run's queries: empty them, so that
  // every query misses again.
  const db = await openPglite(dataDir);
  const cleared = await db.query(
    "WITH gone AS (DELETE FROM query_embeddings RETURNING 1) SELECT count(*)::int AS n FROM gone",
  );
  await db.close();
  out(`query cache emptied (${(cleared[0] as { n: number }).n} entries)`);
}

const port = await freePort();
const server = Bun.spawn(["bun", "run", "cli", "serve"], {
  cwd: PROJECT,
  env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
  stdout: "pipe",
  stderr: "inherit",
});
const lines: Record<string, unknown>[] = [];
const started = Promise.withResolvers<void>();
void (async () => {
  let pending = "";
  for await (const chunk of server.stdout) {
    pending += new TextDecoder().decode(chunk);
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    for (const part of parts) {
      const line = JSON.parse(part) as Record<string, unknown>;
      lines.push(line);
      if (line.event === "started") started.resolve();
    }
  }
})();
await started.promise;
const base = `http://127.0.0.1:${port}`;

try {
  const login = await fetch(`${base}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: PASSWORD }),
  });
  if (!login.ok) throw new Error(`login as admin with the bench's password: ${login.status} ${await login.text()}`);
  const token = ((await login.json()) as { access_token: string }).access_token;
  const search = async (query: string) => {
    const begun = performance.now();
    const response = await fetch(`${base}/products/search`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, limit: 10 }),
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`search: ${response.status}`);
    return performance.now() - begun;
  };

  const dev = JSON.parse(readFileSync(join(EVAL_DIR, "queries-dev.json"), "utf8")) as { lang: string; query: string }[];
  const additions = {
    es: [
      "",
      " barato",
      " para regalo",
      " de buena calidad",
      " en oferta",
      " económico",
      " para casa",
      " resistente",
      " pequeño",
      " de marca",
    ],
    en: [
      "",
      " cheap",
      " for a gift",
      " good quality",
      " on sale",
      " affordable",
      " for home",
      " durable",
      " small",
      " branded",
    ],
  };
  const queries = additions.es.flatMap((_, i) =>
    dev.map(({ lang, query }) => ({ lang, query: `${query}${(lang === "es" ? additions.es : additions.en)[i]}` })),
  );
  // Warm-up queries, not measured: other texts than the measured ones (each a cache miss too).
  for (let i = 0; i < warmup; i++) {
    const { lang, query } = dev[i % dev.length] as { lang: string; query: string };
    await search(`${query} ${lang === "es" ? "calentamiento" : "warm-up"} ${i}`);
  }
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });
  let jobOver: Promise<number> | undefined;
  if (duringImport > 0) {
    await api("/catalogues/bench-import", { method: "DELETE" }); // a run stopped midway left it
    const made = await api("/catalogues", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "bench-import" }),
    });
    if (made.status !== 201) throw new Error(`catalogue bench-import: ${made.status} ${await made.text()}`);
    const products = Array.from({ length: duringImport }, (_, i) =>
      JSON.stringify({
        sku: `bench-${i}`,
        name: `Imported product ${i}: cotton shirt, steel kettle or garden chair number ${i}`,
        description: `Made for the default-path bench: a description of product ${i} with the words a shop writes about fabric, size, colour and care.`,
        category: `Bench ${i % 7}`,
      }),
    ).join("\n");
    const job = await api("/catalogues/bench-import/products/bulk", {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", prefer: "respond-async" },
      body: products,
    });
    if (job.status !== 202) throw new Error(`import during the queries: ${job.status} ${await job.text()}`);
    const { id } = (await job.json()) as { id: number };
    const begun = performance.now();
    jobOver = (async () => {
      for (;;) {
        const { status } = (await (await api(`/jobs/${id}`)).json()) as { status: string };
        if (status !== "enqueued" && status !== "processing") return performance.now() - begun;
        await Bun.sleep(100);
      }
    })();
    out(`importing ${duringImport} products (job ${id}) while the queries run`);
  }
  lines.length = 0;
  const timed: { lang: string; ms: number; importing: boolean }[] = [];
  let importing = jobOver !== undefined;
  void jobOver?.then(() => {
    importing = false;
  });
  for (const { lang, query } of queries) timed.push({ lang, ms: await search(query), importing });
  await Bun.sleep(200);

  const percentile = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  };
  const round = (n: number) => Math.round(n * 10) / 10;
  const figures: Record<string, number> = { queries: timed.length, warmup_queries: warmup };
  if (jobOver) {
    figures.import_products = duringImport;
    figures.queries_during_import = timed.filter((t) => t.importing).length;
    figures.import_s = round((await jobOver) / 1000);
    const during = timed.filter((t) => t.importing).map((t) => t.ms);
    figures.p95_ms_during_import = round(percentile(during, 95));
    figures.max_ms_during_import = round(Math.max(...during));
    out(
      `the import of ${duringImport} took ${figures.import_s} s; ${during.length} queries ran during it: ` +
        `p50 ${percentile(during, 50).toFixed(1)} ms, p95 ${figures.p95_ms_during_import} ms, max ${figures.max_ms_during_import} ms`,
    );
    await api("/catalogues/bench-import", { method: "DELETE" });
  }
  for (const [name, subset] of [
    ["all", timed],
    ["en", timed.filter((t) => t.lang === "en")],
    ["es", timed.filter((t) => t.lang === "es")],
  ] as const) {
    const ms = subset.map((t) => t.ms);
    figures[`p50_ms_${name}`] = round(percentile(ms, 50));
    figures[`p95_ms_${name}`] = round(percentile(ms, 95));
    out(
      `client latency, ${name} (${ms.length}): p50 ${percentile(ms, 50).toFixed(1)} ms, p95 ${percentile(ms, 95).toFixed(1)} ms`,
    );
  }
  const searches = lines.filter((line) => line.event === "search");
  if (args.lines) writeFileSync(args.lines, JSON.stringify({ timed, searches }));
  const requests = lines.filter((line) => line.event === "request" && line.route === "/products/search");
  const stageOf = (field: string) => searches.map((line) => Number(line[field] ?? 0));
  for (const [stage, field] of [
    ["translation", "translateMs"],
    ["embedding", "embedMs"],
    ["retrieval", "searchMs"],
    ["check", "checkMs"],
    ["generation", "generateMs"],
  ] as const) {
    const ms = stageOf(field);
    figures[`${stage}_p50_ms`] = round(percentile(ms, 50));
    figures[`${stage}_p95_ms`] = round(percentile(ms, 95));
    out(`stage ${stage.padEnd(11)} p50 ${percentile(ms, 50).toFixed(1)} ms, p95 ${percentile(ms, 95).toFixed(1)} ms`);
  }
  // What the request took beyond the search's stages: HTTP, auth, validation, JSON.
  const rest = requests.map((request, i) => {
    const s = searches[i];
    const stages = s
      ? ["translateMs", "embedMs", "searchMs", "checkMs", "generateMs"].reduce((sum, f) => sum + Number(s[f] ?? 0), 0)
      : 0;
    return Number(request.ms) - stages;
  });
  figures.service_p50_ms = round(
    percentile(
      requests.map((r) => Number(r.ms)),
      50,
    ),
  );
  figures.service_p95_ms = round(
    percentile(
      requests.map((r) => Number(r.ms)),
      95,
    ),
  );
  figures.rest_p50_ms = round(percentile(rest, 50));
  out(
    `service's own request time p50 ${figures.service_p50_ms} ms, p95 ${figures.service_p95_ms} ms; beyond the stages p50 ${figures.rest_p50_ms} ms`,
  );
  const metrics = await (
    await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${env.METRICS_TOKEN}` } })
  ).text();
  out(
    metrics
      .split("\n")
      .filter((line) => line.startsWith("sku_search_stage_duration_seconds_sum"))
      .join("\n"),
  );
  figures.load_average = round(loadavg()[0] as number);
  out(JSON.stringify(figures));
} finally {
  server.kill("SIGTERM");
  await server.exited;
  if (!keep) rmSync(dataDir, { recursive: true, force: true });
}
