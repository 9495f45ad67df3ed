/**
 * Search quality of the offline embedder on the labelled dev set (shared/eval/README.md):
 * embeds every product (name + "\n" + description) and every query with LocalEmbedder, ranks by
 * cosine in memory, and prints nDCG@10, recall@10 and MRR@10, overall and per lang.
 * Run by hand: `bun bench/eval.ts [eval folder] [model dir]`. Reads the files where they are; never copy them here.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { embeddingText } from "../src/domain/product.ts";

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

const K = 10;
const evalDir = process.argv[2] ?? resolve(import.meta.dir, "../../shared/eval");
const modelDir = process.argv[3] ?? resolve(import.meta.dir, "../models/all-MiniLM-L6-v2");

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

const embedder = new LocalEmbedder(modelDir);
let started = performance.now();
const productVectors = await embedder.embed(products.map(embeddingText), "document");
console.log(`embedded ${products.length} products in ${((performance.now() - started) / 1000).toFixed(1)} s`);
started = performance.now();
const queryVectors = await embedder.embed(
  queries.map((q) => q.query),
  "query",
);
console.log(`embedded ${queries.length} queries in ${(performance.now() - started).toFixed(0)} ms`);
await embedder.dispose();

// Vectors are unit length, so the dot product is the cosine.
const perQuery = queries.map((query, i) => {
  const queryVector = queryVectors[i] as number[];
  const ranked = products
    .map((product, j) => ({ id: product.id, cosine: dot(queryVector, productVectors[j] as number[]) }))
    .sort((a, b) => b.cosine - a.cosine);
  const topScore = ranked[0]?.cosine ?? 0;
  const topGrade = query.relevant[String(ranked[0]?.id)] ?? 0;
  return { query, scores: score(ranked.map((r) => r.id).slice(0, K), query.relevant), topScore, topGrade };
});

const format = (s: Scores) =>
  `nDCG@10 ${s.ndcg.toFixed(3)}  recall@10 ${s.recall.toFixed(3)}  MRR@10 ${s.mrr.toFixed(3)}`;
console.log(`\n${embedder.model} (${embedder.dimension} d), exact cosine, ${queries.length} dev queries`);
console.log(`all (${perQuery.length})`.padEnd(10), format(mean(perQuery.map((q) => q.scores))));
for (const lang of [...new Set(queries.map((q) => q.lang))].sort()) {
  const rows = perQuery.filter((q) => q.query.lang === lang);
  console.log(`${lang} (${rows.length})`.padEnd(10), format(mean(rows.map((q) => q.scores))));
}

// The cosine of the best hit, by whether that hit is relevant: how the generator should read "weak" scores.
console.log("\ntop-1 cosine by the top hit's grade (min / median / max):");
for (const grade of [2, 1, 0]) {
  const values = perQuery
    .filter((q) => q.topGrade === grade)
    .map((q) => q.topScore)
    .sort((a, b) => a - b);
  if (values.length === 0) continue;
  const median = values[Math.floor(values.length / 2)] as number;
  const range = `${(values[0] as number).toFixed(2)} / ${median.toFixed(2)} / ${(values.at(-1) as number).toFixed(2)}`;
  console.log(`  grade ${grade}: ${String(values.length).padStart(2)} queries, ${range}`);
}
