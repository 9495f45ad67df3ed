/**
 * Search quality on the labelled dev set (../shared/eval, its README), measured through the service
 * itself: the HTTP app of the composition root on an in-memory embedded database, configured from
 * the environment as `serve` is (so `QUERY_TRANSLATION=off`, `HYBRID_ALPHA=0.7`, ... measure those
 * settings). It imports the products (POST /products/bulk), then sends every query in every search
 * mode (POST /products/search, limit 10) and prints, per mode and per language:
 * - nDCG@10, recall@10 and MRR@10 on the dev queries, exactly as the eval README defines them;
 * - typo robustness: each query with one letter changed in one of its words of 4+ letters
 *   (seeded), scored the same way, and the ratio typo'd / clean of the mean nDCG@10;
 * - the share of empty answers on the real queries and on generated gibberish ("xqzv", "asdf
 *   qwerty"; seeded);
 * - the best hit's cosine on each kind of query (where the relevance threshold, SEARCH_MIN_SCORE,
 *   falls: run with SEARCH_MIN_SCORE=0 to see every query's);
 * - what translating a query costs (Apertium, warm);
 * - a browsing search's relevant results (RELEVANT_RESULTS_MIN_SHARE): their size, and their
 *   precision and recall against the labels.
 * The last line is one JSON object of the figures.
 *
 * Run by hand: `bun run eval [--eval-dir DIR] [--products all] [--seed N] [--gibberish N] [--queries]`
 * (`--products all`: products-all.jsonl.gz, 12,430 products whose extra 10,774 are unlabelled;
 * `--gibberish N`: how many gibberish queries, 40 by default;
 * `--queries`: one line per query with its translation). No network: the offline model and
 * Apertium. Product and query vectors are kept between runs in a cache file keyed by the exact text
 * embedded (`--no-cache` to skip it): the model is deterministic, and embedding the catalogue is
 * most of a run's time. Reads the eval files where they are; never copy them here.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { ApertiumTranslator, findApertium } from "../src/adapters/translation/apertium.ts";
import { loadConfig } from "../src/app/config.ts";
import { createHttpService, relevanceThreshold as thresholdFor } from "../src/app/http-service.ts";
import { createLogger } from "../src/app/logger.ts";
import { SEARCH_MODES, type SearchMode } from "../src/domain/hybrid-ranking.ts";
import type { Vector } from "../src/domain/vector.ts";
import type { EmbeddingPurpose } from "../src/ports/embedder.ts";
import type { Translation } from "../src/ports/translator.ts";
import { seededRandom } from "../tests/support/seeded-random.ts";

interface EvalProduct {
  id: number;
  name: string;
  description: string;
  category: string;
}

interface EvalQuery {
  id: string;
  lang: string;
  query: string;
  relevant: Record<string, number>;
}

interface Scores {
  ndcg: number;
  recall: number;
  mrr: number;
}

/** One answer to one query: the eval ids in the order returned, and the best hit's cosine. */
interface Answer {
  ids: number[];
  topCosine: number | null;
}

const K = 10;
const REPO = resolve(import.meta.dir, "..");
const GIBBERISH_QUERIES = Number(option("gibberish") ?? 40);

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}
const perQueryLines = process.argv.includes("--queries");
const useCache = !process.argv.includes("--no-cache");
const seed = Number(option("seed") ?? 21);
const productsFile = option("products") === "all" ? "products-all.jsonl.gz" : "products.jsonl";
// The eval folder sits beside the repository: ../shared in a clone, ../../shared in a worktree under wt/.
const evalDir =
  option("eval-dir") ??
  [resolve(REPO, "../shared/eval"), resolve(REPO, "../../shared/eval")].find((dir) =>
    existsSync(join(dir, "queries-dev.json")),
  );
if (evalDir === undefined) throw new Error("no shared/eval beside the repository: pass --eval-dir DIR");

const productsBytes = readFileSync(join(evalDir, productsFile));
const products = (productsFile.endsWith(".gz") ? gunzipSync(productsBytes) : productsBytes)
  .toString("utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line) as EvalProduct);
const queries = JSON.parse(readFileSync(join(evalDir, "queries-dev.json"), "utf8")) as EvalQuery[];

/** The metrics exactly as the eval README defines them, for one query's ranked ids (best first). */
export function score(ranked: readonly number[], relevant: Record<string, number>): Scores {
  const top = [...new Set(ranked)].slice(0, K);
  const grade = (id: number) => relevant[String(id)] ?? 0;
  const dcg = (grades: readonly number[]) => grades.slice(0, K).reduce((sum, g, i) => sum + g / Math.log2(i + 2), 0);
  const ideal = dcg(Object.values(relevant).sort((a, b) => b - a));
  const gradeTwo = Object.values(relevant).filter((g) => g === 2).length;
  const firstHit = top.findIndex((id) => grade(id) === 2);
  return {
    ndcg: ideal > 0 ? dcg(top.map(grade)) / ideal : 0,
    recall: gradeTwo > 0 ? top.filter((id) => grade(id) === 2).length / Math.min(K, gradeTwo) : 0,
    mrr: firstHit >= 0 ? 1 / (firstHit + 1) : 0,
  };
}

function mean(rows: readonly Scores[]): Scores {
  const avg = (pick: (s: Scores) => number) => rows.reduce((sum, s) => sum + pick(s), 0) / (rows.length || 1);
  return { ndcg: avg((s) => s.ndcg), recall: avg((s) => s.recall), mrr: avg((s) => s.mrr) };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";

/** The query with one letter of one of its words of 4+ letters replaced by another letter (case kept). */
export function withTypo(query: string, random: () => number): string {
  const words = [...query.matchAll(/\p{L}{4,}/gu)];
  if (words.length === 0) return query;
  const word = words[Math.floor(random() * words.length)] as RegExpExecArray;
  const letters = [...word[0]];
  const at = Math.floor(random() * letters.length);
  const old = letters[at] as string;
  const choices = [...LETTERS].filter((letter) => letter !== old.toLowerCase());
  const letter = choices[Math.floor(random() * choices.length)] as string;
  letters[at] = old === old.toUpperCase() ? letter.toUpperCase() : letter;
  const start = word.index as number;
  // Code units before the word, then the word's new letters (an accented letter is one code unit here).
  return `${query.slice(0, start)}${letters.join("")}${query.slice(start + word[0].length)}`;
}

const KEYBOARD_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];

/** Queries of one to three made-up words: keyboard runs ("asdf", "qwerty") and random letters ("xqzv"). */
export function gibberish(count: number, random: () => number): string[] {
  const pick = (n: number) => Math.floor(random() * n);
  const word = () => {
    const length = 3 + pick(5);
    if (random() < 0.4) {
      const row = KEYBOARD_ROWS[pick(KEYBOARD_ROWS.length)] as string;
      const start = pick(Math.max(1, row.length - length));
      return row.slice(start, start + length);
    }
    return Array.from({ length }, () => LETTERS[pick(LETTERS.length)]).join("");
  };
  return Array.from({ length: count }, () => Array.from({ length: 1 + pick(3) }, word).join(" "));
}

/**
 * The offline embedder, remembering every vector it made in a file between runs (keyed by purpose
 * and the exact text embedded, so a change of translation or of the embedded text is a new key).
 * A LocalEmbedder still, so the service treats it as the offline model (translation `auto` on).
 */
class RememberingLocalEmbedder extends LocalEmbedder {
  private readonly vectors = new Map<string, Vector>();
  private added = 0;

  constructor(
    modelDir: string,
    private readonly file: string | undefined,
  ) {
    super(modelDir);
    if (file !== undefined && existsSync(file)) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        const [key, base64] = line.split("\t");
        if (key && base64) this.vectors.set(key, Array.from(new Float32Array(Buffer.from(base64, "base64").buffer)));
      }
    }
  }

  override async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    const keys = texts.map((text) => createHash("sha256").update(`${purpose}\u0000${text}`).digest("hex"));
    const missing = keys.flatMap((key, i) => (this.vectors.has(key) ? [] : [i]));
    if (missing.length > 0) {
      const fresh = await super.embed(
        missing.map((i) => texts[i] as string),
        purpose,
        signal,
      );
      missing.forEach((i, n) => {
        // Stored as float32, as the model computes them, so a vector read back is the same vector.
        this.vectors.set(keys[i] as string, Array.from(new Float32Array(fresh[n] as Vector)));
        this.added++;
      });
    }
    return keys.map((key) => this.vectors.get(key) as Vector);
  }

  save(): void {
    if (this.file === undefined || this.added === 0) return;
    const lines = [...this.vectors].map(
      ([key, vector]) => `${key}\t${Buffer.from(new Float32Array(vector).buffer).toString("base64")}`,
    );
    writeFileSync(this.file, `${lines.join("\n")}\n`);
  }
}

const ADMIN = { username: "eval", password: "eval-password-not-secret" };
const config = loadConfig({
  ...process.env,
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
  EMBEDDING_PROVIDER: "local",
  GENERATION_PROVIDERS: "local",
  DATABASE_URL: "",
  SEARCH_RATE_LIMIT: "0",
  WRITE_RATE_LIMIT: "0",
  QUERY_CACHE_DAYS: "0",
  // Embedding 1,000 products afresh (a change of the embedded text) can take longer than a request's
  // usual budget on a busy machine, and the bulk import would then answer 202 with a job.
  REQUEST_TIMEOUT_MS: "600000",
  LOG_LEVEL: "warn",
});
const modelDir = config.localModelDir ?? join(REPO, "models/all-MiniLM-L6-v2");
const cacheDir = join(tmpdir(), "sku-search-eval");
if (useCache) mkdirSync(cacheDir, { recursive: true });
const embedder = new RememberingLocalEmbedder(modelDir, useCache ? join(cacheDir, "all-MiniLM-L6-v2.tsv") : undefined);
const relevanceThreshold = thresholdFor(config.searchMinScore, embedder);
const container = await createHttpService(
  { ...config, databaseUrl: undefined, dataDir: join(tmpdir(), "sku-search-eval-data") },
  createLogger("warn"),
  { database: await openPglite(undefined), embedder },
);
const call = async (path: string, body: string, contentType: string, token?: string) => {
  const headers = new Headers({ "content-type": contentType });
  if (token) headers.set("authorization", `Bearer ${token}`);
  const response = await container.app.handle(
    new Request(`http://localhost${path}`, { method: "POST", headers, body }),
  );
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
};
const token = (await call("/auth/login", new URLSearchParams(ADMIN).toString(), "application/x-www-form-urlencoded"))
  .access_token as string;

let started = performance.now();
const evalIdOf = new Map<number, number>();
for (let from = 0; from < products.length; from += 1000) {
  const batch = products.slice(from, from + 1000);
  const body = batch.map((p) => JSON.stringify({ name: p.name, description: p.description, category: p.category }));
  const answer = (await call("/products/bulk", body.join("\n"), "application/x-ndjson", token)) as {
    items: { index: number; status: string; id?: number; detail?: string }[];
  };
  for (const item of answer.items) {
    if (item.id === undefined) throw new Error(`product ${from + item.index} not stored: ${item.detail}`);
    evalIdOf.set(item.id, (batch[item.index] as EvalProduct).id);
  }
}
embedder.save();
console.log(
  `imported ${products.length} products (${productsFile}) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);

async function search(query: string, mode: SearchMode): Promise<Answer> {
  const answer = (await call(
    "/products/search",
    JSON.stringify({ query, limit: K, mode }),
    "application/json",
    token,
  )) as {
    results: { id: number; score: number }[];
  };
  return {
    ids: answer.results.map((hit) => evalIdOf.get(hit.id) ?? -1),
    // The best cosine among the answered products (in hybrid and lexical mode not always the first).
    topCosine: answer.results.length === 0 ? null : Math.max(...answer.results.map((hit) => hit.score)),
  };
}

const typoRandom = seededRandom(seed);
const typoQueries = queries.map((query) => withTypo(query.query, typoRandom));
const gibberishQueries = gibberish(GIBBERISH_QUERIES, seededRandom(seed + 1));

started = performance.now();
const answers = new Map<SearchMode, { clean: Answer[]; typo: Answer[]; gibberish: Answer[] }>();
for (const mode of SEARCH_MODES) {
  const run = async (texts: readonly string[]) => {
    const out: Answer[] = [];
    for (const text of texts) out.push(await search(text, mode));
    return out;
  };
  answers.set(mode, {
    clean: await run(queries.map((query) => query.query)),
    typo: await run(typoQueries),
    gibberish: await run(gibberishQueries),
  });
}
const searchSeconds = (performance.now() - started) / 1000;

/**
 * A browsing search's relevant results (what `total`, facets, pages and sorts cover): every page of
 * each dev query's, read with `offset`, and how many of them the labels call relevant (grade 1 or
 * 2: the precision a page sorted by price or brand has on average) and how many of the query's
 * relevant products they hold (recall, of grade 2 and of grade 1 or 2).
 */
interface RelevantSet {
  size: number;
  precision: number;
  recallTwo: number;
  recallAny: number;
}
const PAGE = 50;
async function relevantSet(query: EvalQuery, mode: SearchMode): Promise<RelevantSet> {
  const ids: number[] = [];
  for (let offset = 0; offset < 1000; offset += PAGE) {
    const page = (await call(
      "/products/search",
      JSON.stringify({ query: query.query, limit: PAGE, offset, mode }),
      "application/json",
      token,
    )) as { results: { id: number }[]; total: number };
    ids.push(...page.results.map((hit) => evalIdOf.get(hit.id) ?? -1));
    if (offset + PAGE >= page.total) break;
  }
  const grade = (id: number) => query.relevant[String(id)] ?? 0;
  const graded = Object.values(query.relevant);
  const count = (rows: readonly number[], keep: (g: number) => boolean) => rows.filter(keep).length;
  return {
    size: ids.length,
    precision: ids.length > 0 ? count(ids.map(grade), (g) => g >= 1) / ids.length : 0,
    recallTwo:
      count(ids.map(grade), (g) => g === 2) /
      Math.max(
        1,
        count(graded, (g) => g === 2),
      ),
    recallAny:
      count(ids.map(grade), (g) => g >= 1) /
      Math.max(
        1,
        count(graded, (g) => g >= 1),
      ),
  };
}
const relevantSets = new Map<SearchMode, RelevantSet[]>();
for (const mode of SEARCH_MODES) {
  const sets: RelevantSet[] = [];
  for (const query of queries) sets.push(await relevantSet(query, mode));
  relevantSets.set(mode, sets);
}
embedder.save();
await container.close();

// What translation makes of each query and costs, on a translator of its own (the service's is inside it).
const apertium = config.translation.mode === "off" ? null : findApertium(config.translation.apertiumDir);
const translator = apertium?.found
  ? new ApertiumTranslator(apertium.pipelines, { timeoutMs: config.translation.timeoutMs })
  : null;
const translations: (Translation | null)[] = [];
const translateMs: { lang: string; ms: number }[] = [];
if (translator) {
  await translator.start();
  for (const query of queries) translations.push((await translator.toEnglish([query.query]))[0] ?? null);
  for (let round = 0; round < 5; round++) {
    for (const query of queries) {
      const t = performance.now();
      await translator.toEnglish([query.query]);
      translateMs.push({ lang: query.lang, ms: performance.now() - t });
    }
  }
  await translator.close();
}

const languages = [...new Set(queries.map((q) => q.lang))].sort();
const groups = ["all", ...languages];
const inGroup = (group: string) => (_: unknown, i: number) => group === "all" || queries[i]?.lang === group;
const byGroup = <T>(values: readonly T[], pick: (rows: T[]) => number) =>
  Object.fromEntries(groups.map((group) => [group, round(pick(values.filter(inGroup(group))))]));
const round = (value: number) => Math.round(value * 1000) / 1000;
const share = (rows: readonly Answer[]) => rows.filter((answer) => answer.ids.length === 0).length / (rows.length || 1);

const settings = {
  model: `${embedder.model} (${embedder.dimension} d)`,
  translation:
    config.translation.mode === "off"
      ? "off (QUERY_TRANSLATION=off)"
      : apertium?.found
        ? `Apertium spa-eng (${apertium.prefix})`
        : `off: ${apertium?.reason}`,
  hybrid_alpha: config.hybridAlpha,
  relevant_share: config.relevantShare,
  category_boost: config.categoryBoost,
  min_score: relevanceThreshold,
  default_mode: config.searchMode,
  products: `${productsFile} (${products.length})`,
  queries: `queries-dev.json (${queries.length}: ${groups
    .slice(1)
    .map((lang) => `${queries.filter((q) => q.lang === lang).length} ${lang}`)
    .join(", ")})`,
  gibberish: GIBBERISH_QUERIES,
  seed,
  eval_dir: evalDir,
};
console.log("\nsettings:");
for (const [name, value] of Object.entries(settings)) console.log(`  ${name.padEnd(15)} ${value}`);
const searches = answers.size * (2 * queries.length + GIBBERISH_QUERIES);
console.log(
  `  ${"search".padEnd(15)} ${searches} searches through the API, ${((searchSeconds * 1000) / searches).toFixed(1)} ms each (mean)`,
);
console.log(
  `\nexample typo'd queries: ${typoQueries
    .slice(0, 3)
    .map((q) => JSON.stringify(q))
    .join(", ")}`,
);
console.log(
  `example gibberish: ${gibberishQueries
    .slice(0, 5)
    .map((q) => JSON.stringify(q))
    .join(", ")}`,
);

const figures: Record<string, unknown> = {};
const fixed = (value: number) => value.toFixed(3);
console.log(
  "\nmode      queries   nDCG@10 recall@10 MRR@10 | typo'd nDCG@10 (× clean) | empty share: real typo'd gibberish",
);
for (const [mode, { clean, typo, gibberish: nonsense }] of answers) {
  const cleanScores = clean.map((answer, i) => score(answer.ids, (queries[i] as EvalQuery).relevant));
  const typoScores = typo.map((answer, i) => score(answer.ids, (queries[i] as EvalQuery).relevant));
  for (const group of groups) {
    const c = mean(cleanScores.filter(inGroup(group)));
    const t = mean(typoScores.filter(inGroup(group)));
    const count = cleanScores.filter(inGroup(group)).length;
    const empties =
      group === "all"
        ? `${fixed(share(clean))} ${fixed(share(typo))} ${fixed(share(nonsense))}`
        : `${fixed(share(clean.filter(inGroup(group))))} ${fixed(share(typo.filter(inGroup(group))))}`;
    console.log(
      `${mode.padEnd(10)}${`${group} (${count})`.padEnd(10)}${fixed(c.ndcg).padStart(7)} ${fixed(c.recall).padStart(9)} ${fixed(c.mrr).padStart(6)} |` +
        ` ${fixed(t.ndcg).padStart(14)} (${(c.ndcg > 0 ? t.ndcg / c.ndcg : 0).toFixed(2)})${"".padStart(4)}| ${empties}`,
    );
  }
  const ndcgOf = (rows: Scores[]) => mean(rows).ndcg;
  figures[mode] = {
    ndcg: byGroup(cleanScores, ndcgOf),
    recall: byGroup(cleanScores, (rows) => mean(rows).recall),
    mrr: byGroup(cleanScores, (rows) => mean(rows).mrr),
    typo_ndcg: byGroup(typoScores, ndcgOf),
    typo_ratio: Object.fromEntries(
      groups.map((group) => {
        const c = ndcgOf(cleanScores.filter(inGroup(group)));
        return [group, round(c > 0 ? ndcgOf(typoScores.filter(inGroup(group))) / c : 0)];
      }),
    ),
    empty_real: round(share(clean)),
    empty_typo: round(share(typo)),
    empty_gibberish: round(share(nonsense)),
  };
}

console.log(
  `\nrelevant results of a browsing search (RELEVANT_RESULTS_MIN_SHARE=${config.relevantShare}): size mean / median, ` +
    "precision (grade 1 or 2), recall of grade 2, recall of grade 1 or 2",
);
for (const [mode, sets] of relevantSets) {
  const avg = (pick: (set: RelevantSet) => number) => sets.reduce((sum, set) => sum + pick(set), 0) / sets.length;
  const sizes = sets.map((set) => set.size);
  console.log(
    `  ${mode.padEnd(9)} ${avg((set) => set.size).toFixed(0)} / ${percentile(sizes, 50)}, precision ${fixed(avg((set) => set.precision))}, ` +
      `recall ${fixed(avg((set) => set.recallTwo))} / ${fixed(avg((set) => set.recallAny))}`,
  );
  (figures[mode] as Record<string, unknown>).relevant_results = {
    size: round(avg((set) => set.size)),
    precision: round(avg((set) => set.precision)),
    recall_grade_2: round(avg((set) => set.recallTwo)),
    recall_grade_1_2: round(avg((set) => set.recallAny)),
  };
}

console.log("\nbest hit's cosine (min / median / max) by kind of query and the best hit's grade:");
for (const [mode, { clean, typo, gibberish: nonsense }] of answers) {
  const describe = (values: number[]) => {
    const sorted = values.sort((a, b) => a - b);
    if (sorted.length === 0) return "none";
    return `${String(sorted.length).padStart(2)}: ${fixed(sorted[0] as number)} / ${fixed(percentile(sorted, 50))} / ${fixed(sorted.at(-1) as number)}`;
  };
  const cosines = (rows: readonly Answer[], grade?: number) =>
    rows.flatMap((answer, i) => {
      if (answer.topCosine === null) return [];
      if (grade === undefined) return [answer.topCosine];
      return ((queries[i] as EvalQuery).relevant[String(answer.ids[0])] ?? 0) === grade ? [answer.topCosine] : [];
    });
  console.log(
    `  ${mode.padEnd(9)} real, top grade 2 ${describe(cosines(clean, 2))}; 1 ${describe(cosines(clean, 1))}; 0 ${describe(cosines(clean, 0))}`,
  );
  console.log(`  ${"".padEnd(9)} typo'd ${describe(cosines(typo))}; gibberish ${describe(cosines(nonsense))}`);
}
// Calibrating SEARCH_MIN_SCORE: with SEARCH_MIN_SCORE=0 every search answers, and these are the
// cosines a threshold would cut (the semantic answers' best: the query's nearest product).
const semantic = answers.get("semantic");
if (semantic) {
  const best = (rows: readonly Answer[]) =>
    rows.flatMap((answer) => (answer.topCosine === null ? [] : [answer.topCosine]));
  const realMin = Math.min(...best(semantic.clean), ...best(semantic.typo));
  const gibberishAnswered = best(semantic.gibberish);
  console.log(
    `relevance threshold ${relevanceThreshold} (SEARCH_MIN_SCORE): real and typo'd queries' lowest best cosine ${fixed(realMin)}; ` +
      `gibberish answered ${gibberishAnswered.length} of ${semantic.gibberish.length}, ` +
      `${gibberishAnswered.filter((cosine) => cosine < realMin).length} of them below that lowest (run with SEARCH_MIN_SCORE=0 to see them all)`,
  );
}

if (perQueryLines) {
  const modes = [...answers.keys()];
  console.log(`\nnDCG@10 per query, clean / typo'd, ${modes.join(" · ")}`);
  for (const [i, query] of queries.entries()) {
    const values = modes
      .map((mode) => {
        const runs = answers.get(mode) as { clean: Answer[]; typo: Answer[] };
        const at = (rows: Answer[]) => score((rows[i] as Answer).ids, query.relevant).ndcg.toFixed(2);
        return `${at(runs.clean)}/${at(runs.typo)}`;
      })
      .join(" · ");
    const translation = translations[i];
    const shown = translation?.translated ? ` → ${JSON.stringify(translation.text)}` : "";
    console.log(
      `${query.id} ${query.lang} ${values}  ${JSON.stringify(query.query)}${shown}  typo'd ${JSON.stringify(typoQueries[i])}`,
    );
  }
}

let translationFigures: Record<string, unknown> | null = null;
if (translateMs.length > 0) {
  console.log("");
  translationFigures = {};
  for (const group of groups) {
    const ms = translateMs.filter((t) => group === "all" || t.lang === group).map((t) => t.ms);
    translationFigures[group] = { p50: round(percentile(ms, 50)), p95: round(percentile(ms, 95)) };
    console.log(
      `translating a query (${group}, ${ms.length} calls, warm): p50 ${percentile(ms, 50).toFixed(1)} ms, ` +
        `p95 ${percentile(ms, 95).toFixed(1)} ms, max ${percentile(ms, 100).toFixed(1)} ms`,
    );
  }
}

console.log(JSON.stringify({ settings, ...figures, translation_ms: translationFigures }));
