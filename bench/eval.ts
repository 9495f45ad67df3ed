/**
 * Search quality of the offline embedder on the labelled dev set (shared/eval/README.md), without
 * and with Spanish → English translation (Apertium, when installed): embeds every product
 * (name + "\n" + description) and every query, ranks by cosine in memory, and prints nDCG@10,
 * recall@10 and MRR@10, overall and per lang, for each search mode and translation setting; then
 * what translation costs a query.
 * Run by hand: `bun bench/eval.ts [eval folder] [model dir] [--queries]` (`--queries`: one line per
 * query). Reads the files where they are; never copy them here.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { ApertiumTranslator, findApertium } from "../src/adapters/translation/apertium.ts";
import { embeddingText } from "../src/domain/product.ts";
import type { Vector } from "../src/domain/vector.ts";
import type { Translation } from "../src/ports/translator.ts";

interface EvalProduct {
  id: number;
  name: string;
  description: string;
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

/** One way of ranking: the search mode (only semantic so far) and whether texts are translated first. */
interface Setting {
  mode: "semantic";
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

function dot(a: readonly number[], b: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
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

const settings: Setting[] = [{ mode: "semantic", translation: false }];
if (translator) settings.push({ mode: "semantic", translation: true });

function rank(setting: Setting, queryIndex: number): { id: number; cosine: number }[] {
  const queryVector = (setting.translation ? translatedQueries : plainQueries)[queryIndex] as Vector;
  const productVectors = setting.translation ? translatedProducts : plainProducts;
  // Vectors are unit length, so the dot product is the cosine.
  return products
    .map((product, j) => ({ id: product.id, cosine: dot(queryVector, productVectors[j] as Vector) }))
    .sort((a, b) => b.cosine - a.cosine)
    .slice(0, K);
}

const results = settings.map((setting) => {
  const rankings = queries.map((_, i) => rank(setting, i));
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
});

const format = (s: Scores) =>
  `${s.ndcg.toFixed(3).padStart(7)} ${s.recall.toFixed(3).padStart(9)} ${s.mrr.toFixed(3).padStart(6)}`;
const languages = [...new Set(queries.map((q) => q.lang))].sort();
console.log(`\n${embedder.model} (${embedder.dimension} d), exact cosine, ${queries.length} dev queries\n`);
console.log("mode      translation  queries   nDCG@10 recall@10 MRR@10");
for (const { setting, perQuery } of results) {
  const label = `${setting.mode.padEnd(10)}${(setting.translation ? "on" : "off").padEnd(13)}`;
  console.log(`${label}${`all (${queries.length})`.padEnd(10)}${format(mean(perQuery))}`);
  for (const lang of languages) {
    const rows = perQuery.filter((_, i) => queries[i]?.lang === lang);
    console.log(`${label}${`${lang} (${rows.length})`.padEnd(10)}${format(mean(rows))}`);
  }
}

for (const { setting, topHits } of results) {
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
  console.log(`\nnDCG@10 per query (${settings.map((s) => (s.translation ? "on" : "off")).join(" / ")})`);
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
