/**
 * Search quality of the offline embedder on the labelled dev set (shared/eval/README.md), without
 * and with Spanish → English translation (Apertium, when installed), in semantic and hybrid mode:
 * embeds every product (name + "\n" + description) and every query, loads the products into the
 * embedded database (PGlite in memory) and ranks them through the service's own search use case
 * and SQL, then prints nDCG@10, recall@10 and MRR@10, overall and per lang; hybrid also at other
 * weights (alpha) than the default; then what translation costs a query.
 * Run by hand: `bun bench/eval.ts [eval folder] [model dir] [--queries]` (`--queries`: one line per
 * query). Reads the files where they are; never copy them here.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { PostgresProductRepository } from "../src/adapters/postgres/product-repository.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { ApertiumTranslator, findApertium } from "../src/adapters/translation/apertium.ts";
import type { SearchMode } from "../src/domain/hybrid-ranking.ts";
import { contentDigest, embeddingText } from "../src/domain/product.ts";
import { DEFAULT_HYBRID_ALPHA, SearchAndRecommend } from "../src/domain/search-and-recommend.ts";
import type { Vector } from "../src/domain/vector.ts";
import type { Translation } from "../src/ports/translator.ts";

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

/** One way of ranking: the search mode, its weight in hybrid mode, and whether texts are translated first. */
interface Setting {
  mode: SearchMode;
  alpha: number;
  translation: boolean;
}

const K = 10;
const args = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
const perQueryLines = process.argv.includes("--queries");
const evalDir = args[0] ?? resolve(import.meta.dir, "../../shared/eval");
const modelDir = args[1] ?? resolve(import.meta.dir, "../models/all-MiniLM-L6-v2");

const products = readFileSync(join(evalDir, "products.jsonl"), "utf8")
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

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

const embedder = new LocalEmbedder(modelDir);
const apertium = findApertium();
const translator = apertium.found ? new ApertiumTranslator(apertium.pipelines, { timeoutMs: 10_000 }) : null;
if (translator === null) console.log(`translation: not measured, ${apertium.found ? "" : apertium.reason}`);

// Products: embedded as they are; with translation, only the texts read as Spanish change.
const productTexts = products.map(embeddingText);
let started = performance.now();
const plainProducts = await embedder.embed(productTexts, "document");
console.log(`embedded ${products.length} products in ${seconds(started)}`);
let translatedProducts: Vector[] = plainProducts;
if (translator) {
  started = performance.now();
  const translations = await translator.toEnglish(productTexts);
  const changed = translations.flatMap((t, i) => (t.translated ? [i] : []));
  const fresh = await embedder.embed(
    changed.map((i) => (translations[i] as Translation).text),
    "document",
  );
  translatedProducts = [...plainProducts];
  changed.forEach((i, n) => {
    translatedProducts[i] = fresh[n] as Vector;
  });
  console.log(`products through translation in ${seconds(started)}: ${describeLanguages(translations)}`);
}

// Queries, each alone as a search embeds it, timing what translation adds.
const plainQueries: Vector[] = [];
const translatedQueries: Vector[] = [];
const queryTranslations: (Translation | null)[] = [];
const embedMs: number[] = [];
const translateMs: { lang: string; ms: number }[] = [];
for (const query of queries) {
  const t = performance.now();
  plainQueries.push((await embedder.embed([query.query], "query"))[0] as Vector);
  embedMs.push(performance.now() - t);
  if (!translator) continue;
  const [translation] = await translator.toEnglish([query.query]);
  queryTranslations.push(translation ?? null);
  translatedQueries.push((await embedder.embed([translation?.text ?? query.query], "query"))[0] as Vector);
}
if (translator) {
  // Timed warm: the first round included the pipelines' start.
  for (let round = 0; round < 5; round++) {
    for (const query of queries) {
      const t = performance.now();
      await translator.toEnglish([query.query]);
      translateMs.push({ lang: query.lang, ms: performance.now() - t });
    }
  }
  console.log(`queries through translation: ${describeLanguages(queryTranslations.filter((t) => t !== null))}`);
}
await embedder.dispose();
await translator?.close();

/** The dev catalogue in an embedded database, with the vectors of one translation setting. */
async function catalogue(vectors: readonly Vector[]) {
  const client = await openPglite(undefined);
  await prepareDatabase(client, { model: embedder.model, dimension: embedder.dimension });
  const repository = new PostgresProductRepository(client, embedder.dimension);
  const rows = await Promise.all(
    products.map(async (product, i) => ({
      kind: "insert" as const,
      row: {
        product: { name: product.name, description: product.description, category: product.category },
        embedding: vectors[i] as Vector,
        contentDigest: await contentDigest(product),
      },
    })),
  );
  const written = await repository.writeMany(rows);
  // The database's ids, back to the eval's.
  const evalId = new Map(
    written.map((outcome, i) => ["written" in outcome ? outcome.written.id : -1, products[i]?.id]),
  );
  return { client, repository, evalId };
}

const databases = new Map([[false, await catalogue(plainProducts)]]);
if (translator) databases.set(true, await catalogue(translatedProducts));

const ALPHAS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9];
const settings: Setting[] = [];
for (const translation of translator ? [false, true] : [false]) {
  settings.push({ mode: "semantic", alpha: 1, translation });
  settings.push({ mode: "hybrid", alpha: DEFAULT_HYBRID_ALPHA, translation });
}
const sweep: Setting[] = (translator ? [false, true] : [false]).flatMap((translation) =>
  ALPHAS.map((alpha) => ({ mode: "hybrid" as const, alpha, translation })),
);

/** The top 10 eval ids of one query, through the search use case (the recommendation is not written). */
async function rank(setting: Setting, queryIndex: number): Promise<{ id: number; cosine: number }[]> {
  const database = databases.get(setting.translation) as Awaited<ReturnType<typeof catalogue>>;
  const vector = (setting.translation ? translatedQueries : plainQueries)[queryIndex] as Vector;
  const query = queries[queryIndex] as EvalQuery;
  const translation = setting.translation ? queryTranslations[queryIndex] : null;
  const search = new SearchAndRecommend({
    products: database.repository,
    embedder: { model: embedder.model, dimension: embedder.dimension, embed: async () => [vector] },
    generator: {
      name: "none",
      generate: async () => ({ text: "-", provider: "EVAL", model: "none" }),
      stream: async function* () {},
    },
    translator: translation
      ? { name: "recorded", toEnglish: async () => [translation], close: async () => {} }
      : undefined,
  });
  const { results } = await search.execute({
    query: query.query,
    limit: K,
    mode: setting.mode,
    ...(setting.mode === "hybrid" ? { alpha: setting.alpha } : {}),
  });
  return results.map((hit) => ({ id: database.evalId.get(hit.id) ?? -1, cosine: hit.score }));
}

async function evaluate(setting: Setting) {
  const rankings: { id: number; cosine: number }[][] = [];
  for (let i = 0; i < queries.length; i++) rankings.push(await rank(setting, i));
  return {
    setting,
    perQuery: queries.map((query, i) =>
      score(
        (rankings[i] ?? []).map((hit) => hit.id),
        query.relevant,
      ),
    ),
    // The cosine of the best hit and that hit's grade: how the generator should read "weak" scores.
    topHits: queries.map((query, i) => ({
      cosine: rankings[i]?.[0]?.cosine ?? 0,
      grade: query.relevant[String(rankings[i]?.[0]?.id)] ?? 0,
    })),
  };
}

const results = [];
for (const setting of settings) results.push(await evaluate(setting));
const swept = [];
for (const setting of sweep) swept.push(await evaluate(setting));
for (const { client } of databases.values()) await client.close();

const format = (s: Scores) =>
  `${s.ndcg.toFixed(3).padStart(7)} ${s.recall.toFixed(3).padStart(9)} ${s.mrr.toFixed(3).padStart(6)}`;
const languages = [...new Set(queries.map((q) => q.lang))].sort();
console.log(`\n${embedder.model} (${embedder.dimension} d), exact cosine, ${queries.length} dev queries\n`);
console.log("mode          translation  queries   nDCG@10 recall@10 MRR@10");
const labelOf = (setting: Setting) =>
  `${`${setting.mode}${setting.mode === "hybrid" ? ` ${setting.alpha}` : ""}`.padEnd(14)}${(setting.translation ? "on" : "off").padEnd(13)}`;
for (const { setting, perQuery } of results) {
  const label = labelOf(setting);
  console.log(`${label}${`all (${queries.length})`.padEnd(10)}${format(mean(perQuery))}`);
  for (const lang of languages) {
    const rows = perQuery.filter((_, i) => queries[i]?.lang === lang);
    console.log(`${label}${`${lang} (${rows.length})`.padEnd(10)}${format(mean(rows))}`);
  }
}

console.log("\nhybrid by alpha (the weight of the semantic score), nDCG@10 all / en / es:");
for (const { setting, perQuery } of swept) {
  const byLang = ["all", ...languages].map((lang) =>
    mean(perQuery.filter((_, i) => lang === "all" || queries[i]?.lang === lang)).ndcg.toFixed(3),
  );
  console.log(`  ${labelOf(setting)}${byLang.join(" / ")}`);
}

for (const { setting, topHits } of results.filter((result) => result.setting.mode === "semantic")) {
  console.log(
    `\ntop-1 cosine by the top hit's grade, translation ${setting.translation ? "on" : "off"} (min / median / max):`,
  );
  for (const grade of [2, 1, 0]) {
    const values = topHits
      .filter((hit) => hit.grade === grade)
      .map((hit) => hit.cosine)
      .sort((a, b) => a - b);
    if (values.length === 0) continue;
    const median = values[Math.floor(values.length / 2)] as number;
    const range = `${(values[0] as number).toFixed(2)} / ${median.toFixed(2)} / ${(values.at(-1) as number).toFixed(2)}`;
    console.log(`  grade ${grade}: ${String(values.length).padStart(2)} queries, ${range}`);
  }
}

if (perQueryLines) {
  console.log(`\nnDCG@10 per query (${settings.map((s) => labelOf(s).replace(/\s+/g, " ").trim()).join(" / ")})`);
  for (const [i, query] of queries.entries()) {
    const values = results.map(({ perQuery }) => (perQuery[i] as Scores).ndcg.toFixed(2)).join(" / ");
    const translation = queryTranslations[i];
    const shown = translation?.translated ? ` → ${JSON.stringify(translation.text)}` : "";
    console.log(`${query.id} ${query.lang} ${values}  ${JSON.stringify(query.query)}${shown}`);
  }
}

console.log(
  `\nper query: embedding p50 ${percentile(embedMs, 50).toFixed(1)} ms, p95 ${percentile(embedMs, 95).toFixed(1)} ms`,
);
if (translator) {
  for (const lang of ["all", ...languages]) {
    const ms = translateMs.filter((t) => lang === "all" || t.lang === lang).map((t) => t.ms);
    console.log(
      `translation adds (${lang}, ${ms.length} calls, warm): p50 ${percentile(ms, 50).toFixed(1)} ms, ` +
        `p95 ${percentile(ms, 95).toFixed(1)} ms, max ${percentile(ms, 100).toFixed(1)} ms`,
    );
  }
}

function describeLanguages(translations: readonly Translation[]): string {
  const count = (language: string) => translations.filter((t) => t.language === language).length;
  const translated = translations.filter((t) => t.translated).length;
  return `${count("es")} read as Spanish, ${count("en")} as English, ${count("unknown")} unknown; ${translated} translated`;
}
