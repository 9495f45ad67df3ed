/**
 * Embedding throughput of the offline model (LocalEmbedder): single texts, batches of 64, and RSS.
 * Run by hand: `bun bench/embed.ts [path/to/products.jsonl] [model dir]`.
 * Reads the products from the shared eval folder; never copy that file into the repository.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { LocalEmbedder } from "../src/adapters/providers/local-embedder.ts";
import { embeddingText } from "../src/domain/product.ts";

const productsPath = process.argv[2] ?? resolve(import.meta.dir, "../../shared/eval/products.jsonl");
const modelDir = process.argv[3] ?? resolve(import.meta.dir, "../models/all-MiniLM-L6-v2");
const SINGLES = 200;
const BATCH = 64;

const texts = readFileSync(productsPath, "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => embeddingText(JSON.parse(line) as { name: string; description: string; category: string }, []));

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const rssBefore = process.memoryUsage().rss;

const embedder = new LocalEmbedder(modelDir);
let started = performance.now();
await embedder.load();
console.log(`model load: ${(performance.now() - started).toFixed(0)} ms`);

// Warm-up, so the first-run allocations do not count.
await embedder.embed(texts.slice(0, 8), "document");

// Single texts: short queries, one call each, as a search does.
const queries = texts.slice(0, SINGLES).map((text) => text.split("\n")[0] as string);
started = performance.now();
for (const query of queries) await embedder.embed([query], "query");
let seconds = (performance.now() - started) / 1000;
console.log(
  `single texts (product names): ${(SINGLES / seconds).toFixed(0)} embeddings/s, ${((seconds * 1000) / SINGLES).toFixed(1)} ms each`,
);

// Batches of 64 short texts (product names), to compare with the figure in GUIDE.md.
const names = texts.map((text) => text.split("\n")[0] as string);
started = performance.now();
for (let start = 0; start < names.length; start += BATCH) {
  await embedder.embed(names.slice(start, start + BATCH), "document");
}
seconds = (performance.now() - started) / 1000;
console.log(`batches of ${BATCH} (names only): ${(names.length / seconds).toFixed(0)} embeddings/s`);

// Batches of 64 full product texts (name + description), one call per batch, as an ingest does
// (the embedder runs each call in forward passes of its own batch size, 16 by default).
started = performance.now();
for (let start = 0; start < texts.length; start += BATCH) {
  await embedder.embed(texts.slice(start, start + BATCH), "document");
}
seconds = (performance.now() - started) / 1000;
console.log(
  `batches of ${BATCH} (name + description): ${(texts.length / seconds).toFixed(0)} embeddings/s over ${texts.length} products`,
);

// The whole catalogue in one call: the embedder sorts it by length before batching, so padding is minimal.
started = performance.now();
await embedder.embed(texts, "document");
seconds = (performance.now() - started) / 1000;
console.log(`one call of ${texts.length} texts: ${(texts.length / seconds).toFixed(0)} embeddings/s`);

const rss = process.memoryUsage().rss;
console.log(`RSS: ${mb(rss)} (before loading the model: ${mb(rssBefore)})`);
await embedder.dispose();
