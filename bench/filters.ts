/**
 * Attribute filters and facets (issue 22): recall@10 and latency of filtered searches through the
 * service's own repository (PostgresProducts) on PostgreSQL + pgvector, for filters selecting about
 * 50 %, 5 % and 0.1 % of one catalogue, and what a browsing search (facets over the best 1,000,
 * browse-results.ts) costs against the same search without facets.
 *
 * One catalogue of `--products` products with embedding-like vectors (bench/vectors.ts) and
 * attributes: `half` (true for every other product: 50 %), `brand` (one of 20: 5 %), `rare` (true
 * for one in 1,000: 0.1 %), `price` (0 to 99: `{"lt": 5}` selects 5 %), `weight` (0 to 999, with no
 * index of its own unless `--indexed-numbers weight`: `{"lt": 50}` selects 5 %, `{"lt": 1}` 0.1 %). The index policy gives it
 * its vector index after the load (as `import` does). The reference of each query is the same
 * repository forced to the exact plan (filterExactMaxRows: 1e12): an exact scan of the matching
 * products (of all of them for the unfiltered one). Latency: one query at a time, `--passes` times,
 * p50 / p95; with facets: the browsing search's window (`window`, RESULT_WINDOW) and browse(), and
 * how many of the exact best RESULT_WINDOW the window holds (on 20 queries); and with facets over
 * the relevant results as the service reads them (relevantWindow at DEFAULT_RELEVANT_SHARE: the
 * first FIRST_WINDOW, the whole window only when all of those are relevant), how many there are
 * and how many of the exact relevant results (the exact window's, at the same share) they hold.
 * `--window-sizes`: then the unfiltered search's p50 with a window of each size.
 *
 * Run by hand:
 *   bun bench/filters.ts [--database-url postgres://postgres@127.0.0.1:55432/sku_test] [--products 100000]
 *     [--dimension 3072] [--queries 100] [--passes 3] [--keep] [--window-sizes 10,100,200,1000]
 *     [--indexed-numbers weight]
 *   bun bench/filters.ts --quick      # 5,000 × 384, 30 queries
 * Works in the schema bench_filters, dropped before and after; with `--keep` it is kept, and a run
 * that finds it holding the same products (count and dimension) measures them again without
 * loading (to compare two versions of the code on the same rows and index). Last line: one JSON object.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { PostgresCatalogueRepository } from "../src/adapters/postgres/catalogue-repository.ts";
import { DEFAULT_SEARCH_PLAN, PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { connectPostgres } from "../src/adapters/postgres/sql-client.ts";
import {
  IndexesInUse,
  indexTarget,
  SqlVectorIndexes,
  vectorSessionSettings,
} from "../src/adapters/postgres/vector-index.ts";
import type { AttributeCondition } from "../src/domain/attribute-filter.ts";
import {
  browse,
  DEFAULT_RELEVANT_SHARE,
  RESULT_WINDOW,
  relevantResults,
  relevantWindow,
} from "../src/domain/browse-results.ts";
import { MaintainCatalogueIndexes } from "../src/domain/maintain-vector-index.ts";
import type { BulkWrite } from "../src/ports/product-repository.ts";
import { type CatalogueProduct, SyntheticSpace } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string", default: "postgres://postgres@127.0.0.1:55432/sku_test" },
    products: { type: "string" },
    dimension: { type: "string" },
    queries: { type: "string" },
    passes: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    "window-sizes": { type: "string", default: "" },
    "indexed-numbers": { type: "string", default: "" },
  },
});

const QUICK = args.quick === true;
const PRODUCTS = Number(args.products ?? (QUICK ? 5_000 : 100_000));
const DIMENSION = Number(args.dimension ?? (QUICK ? 384 : 3072));
const QUERIES = Number(args.queries ?? (QUICK ? 30 : 100));
const PASSES = Number(args.passes);
const CATALOGUE = "tienda";
/** `--indexed-numbers weight`: INDEXED_NUMBER_ATTRIBUTES, as the service would be started with. */
const INDEXED_NUMBERS = (args["indexed-numbers"] as string).split(",").filter(Boolean);
const LIMIT = 10;
/** The queries whose window is compared with the exact window (each an exact scan of the matching products). */
const WINDOW_RECALL_QUERIES = 20;
const SCHEMA = "bench_filters";
const KEEP = args.keep === true;
const WINDOW_SIZES = (args["window-sizes"] as string)
  .split(",")
  .filter((size) => size.trim() !== "")
  .map(Number);

const out = (line: string) => console.log(line);
const p = (ms: number[], q: number) => [...ms].sort((a, b) => a - b)[Math.floor(q * (ms.length - 1))] as number;

/** Whether the schema holds the catalogue a run with these arguments loads (then --keep measures it again). */
async function loadedBefore(): Promise<boolean> {
  try {
    const [row] = await admin.query<{ n: number | string; dimension: number }>(
      `SELECT (SELECT count(*) FROM ${SCHEMA}.products WHERE catalogue = $1) AS n,
              (SELECT dimension FROM ${SCHEMA}.embedding_space) AS dimension`,
      [CATALOGUE],
    );
    return Number(row?.n) === PRODUCTS && Number(row?.dimension) === DIMENSION;
  } catch {
    return false;
  }
}
const fmt = (ms: number) => ms.toFixed(2);

const FILTERS: { name: string; conditions: AttributeCondition[] }[] = [
  { name: "none", conditions: [] },
  { name: "50 % (half: true)", conditions: [{ key: "half", op: "anyOf", values: [true] }] },
  { name: "5 % (brand)", conditions: [{ key: "brand", op: "anyOf", values: ["marca-3"] }] },
  { name: "5 % (price < 5)", conditions: [{ key: "price", op: "range", lt: 5 }] },
  { name: "0.1 % (rare: true)", conditions: [{ key: "rare", op: "anyOf", values: [true] }] },
  // `weight` has no index of its own unless --indexed-numbers names it (INDEXED_NUMBER_ATTRIBUTES).
  { name: "5 % (weight < 50)", conditions: [{ key: "weight", op: "range", lt: 50 }] },
  { name: "0.1 % (weight < 1)", conditions: [{ key: "weight", op: "range", lt: 1 }] },
];

const EVERY_PRODUCT: AttributeCondition[] = [{ key: "price", op: "exists", exists: true }];

function texts(): CatalogueProduct[] {
  return Array.from({ length: 12_000 }, (_, i) => {
    const category = `Categoría ${Math.floor(Math.sqrt(i) / 3)}`;
    return { name: `Producto ${i}`, description: "", category, keys: [category, `${category} > ${i % 7}`] };
  });
}

const space = new SyntheticSpace(texts(), DIMENSION);
const admin = connectPostgres(args["database-url"] as string, { maxConnections: 1 });
const reused = KEEP && (await loadedBefore());
if (!reused) {
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.query(`CREATE SCHEMA ${SCHEMA}`);
}
const url = new URL(args["database-url"] as string);
url.searchParams.set("search_path", `${SCHEMA},public`);
const db = connectPostgres(url.toString(), {
  maxConnections: 2,
  sessionSettings: vectorSessionSettings({ efSearch: DEFAULT_SEARCH_PLAN.efSearch, probes: "auto" }),
});
const summary: Record<string, unknown> = { products: PRODUCTS, dimension: DIMENSION, queries: QUERIES };
try {
  out(
    `bench/filters: ${PRODUCTS} × ${DIMENSION}, ${QUERIES} queries × ${PASSES} passes; load ${loadavg()[0]?.toFixed(1)}`,
  );
  await prepareDatabase(db, { model: "bench", dimension: DIMENSION }, { numberIndexes: INDEXED_NUMBERS });
  if (!reused) await new PostgresCatalogueRepository(db).create(CATALOGUE);
  const indexesInUse = new IndexesInUse(db, DIMENSION, indexTarget(DIMENSION));
  const plan = { ...DEFAULT_SEARCH_PLAN, indexedNumberAttributes: INDEXED_NUMBERS };
  const products = new PostgresProducts(db, DIMENSION, plan, undefined, { indexesInUse }).in(CATALOGUE);
  const exact = new PostgresProducts(db, DIMENSION, { ...plan, filterExactMaxRows: 1e12 }, undefined, {
    indexesInUse,
  }).in(CATALOGUE);
  const started = performance.now();
  for (let start = 0; start < (reused ? 0 : PRODUCTS); start += 500) {
    const writes: BulkWrite[] = [];
    for (let row = start; row < Math.min(PRODUCTS, start + 500); row++) {
      const { name, category } = space.text(row);
      const attributes = {
        half: row % 2 === 0,
        brand: `marca-${row % 20}`,
        rare: row % 1000 === 7,
        price: row % 100,
        weight: row % 1000,
      };
      writes.push({
        kind: "insert",
        row: {
          product: { name, description: "", category, attributes },
          embedding: Array.from(space.productLowRank(row)),
          contentDigest: `d${row}`,
        },
      });
    }
    await products.writeMany(writes);
  }
  if (reused) out(`reusing the ${PRODUCTS} products kept in ${SCHEMA} (--keep)`);
  else {
    await db.query("VACUUM ANALYZE products");
    out(`loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const indexes = new SqlVectorIndexes(db, DIMENSION, { server: true, buildMemory: "auto", inUse: indexesInUse });
    const decision = await new MaintainCatalogueIndexes({ indexes, policy: { mode: "auto", minRows: 5000 } }).afterLoad(
      CATALOGUE,
    );
    out(`index policy: ${decision}`);
  }

  const queries = Array.from({ length: QUERIES }, (_, i) =>
    Array.from(space.queryLowRank((i * 7919) % PRODUCTS, `query:${i}`)),
  );
  const results: Record<string, unknown> = {};
  for (const { name, conditions } of FILTERS) {
    // Unfiltered, the exact repository would use the index too: a condition every product meets
    // (each has a price) makes it scan them all exactly.
    const reference = conditions.length > 0 ? conditions : EVERY_PRODUCT;
    const truth = await Promise.all(
      queries.map(async (vector) =>
        (await exact.searchByVector(vector, { limit: LIMIT, attributes: reference })).map((hit) => hit.id),
      ),
    );
    // The window's recall: how many of the exact best RESULT_WINDOW (by the same cosine) it holds,
    // on the first WINDOW_RECALL_QUERIES queries (an exact window reads every matching product).
    const exactWindows = await Promise.all(
      queries
        .slice(0, WINDOW_RECALL_QUERIES)
        .map((vector) => exact.searchByVector(vector, { limit: RESULT_WINDOW, attributes: reference, window: true })),
    );
    const windowTruth = exactWindows.map((hits) => hits.map((hit) => hit.id));
    // The relevant results a browsing search answers from (relevantWindow), as the service does by default.
    const relevantTruth = exactWindows.map((hits) =>
      relevantResults(hits, DEFAULT_RELEVANT_SHARE).map((hit) => hit.id),
    );
    let windowFound = 0;
    let windowAsked = 0;
    let relevantFound = 0;
    let relevantAsked = 0;
    const relevantSizes: number[] = [];
    const plain: number[] = [];
    const faceted: number[] = [];
    const relevantFaceted: number[] = [];
    let found = 0;
    let asked = 0;
    for (let pass = 0; pass < PASSES; pass++) {
      for (const [i, vector] of queries.entries()) {
        let t = performance.now();
        const hits = await products.searchByVector(vector, { limit: LIMIT, attributes: conditions });
        plain.push(performance.now() - t);
        if (pass === 0) {
          const expected = truth[i] ?? [];
          found += hits.filter((hit) => expected.includes(hit.id)).length;
          asked += expected.length;
        }
        t = performance.now();
        const window = await products.searchByVector(vector, {
          limit: RESULT_WINDOW,
          attributes: conditions,
          window: true,
        });
        browse(window, { offset: 0, sort: [], facets: ["brand", "price", "half"] }, LIMIT);
        faceted.push(performance.now() - t);
        t = performance.now();
        const relevant = await relevantWindow(
          (size) => products.searchByVector(vector, { limit: size, attributes: conditions, window: true }),
          DEFAULT_RELEVANT_SHARE,
        );
        browse(relevant, { offset: 0, sort: [], facets: ["brand", "price", "half"] }, LIMIT);
        relevantFaceted.push(performance.now() - t);
        const exactWindow = pass === 0 ? windowTruth[i] : undefined;
        if (exactWindow) {
          const held = new Set(window.map((hit) => hit.id));
          windowFound += exactWindow.filter((id) => held.has(id)).length;
          windowAsked += exactWindow.length;
          const exactRelevant = relevantTruth[i] ?? [];
          const heldRelevant = new Set(relevant.map((hit) => hit.id));
          relevantFound += exactRelevant.filter((id) => heldRelevant.has(id)).length;
          relevantAsked += exactRelevant.length;
          relevantSizes.push(relevant.length);
        }
      }
    }
    const figures = {
      recall: asked === 0 ? 1 : found / asked,
      p50: p(plain, 0.5),
      p95: p(plain, 0.95),
      facetsP50: p(faceted, 0.5),
      facetsP95: p(faceted, 0.95),
      windowRecall: windowAsked === 0 ? 1 : windowFound / windowAsked,
      relevantFacetsP50: p(relevantFaceted, 0.5),
      relevantFacetsP95: p(relevantFaceted, 0.95),
      relevantSize: p(relevantSizes, 0.5),
      relevantRecall: relevantAsked === 0 ? 1 : relevantFound / relevantAsked,
    };
    results[name] = figures;
    out(
      `${name}: recall@10 ${figures.recall.toFixed(3)}, p50 ${fmt(figures.p50)} ms, p95 ${fmt(figures.p95)} ms; ` +
        `with facets over ${RESULT_WINDOW}: p50 ${fmt(figures.facetsP50)} ms, p95 ${fmt(figures.facetsP95)} ms, ` +
        `the window holding ${figures.windowRecall.toFixed(3)} of the exact best ${RESULT_WINDOW}; ` +
        `with facets over the relevant results (share ${DEFAULT_RELEVANT_SHARE}, as the service): p50 ${fmt(figures.relevantFacetsP50)} ms, ` +
        `p95 ${fmt(figures.relevantFacetsP95)} ms (${(figures.relevantFacetsP50 / figures.p50).toFixed(1)}× the search), ` +
        `${figures.relevantSize} of them (median), holding ${figures.relevantRecall.toFixed(3)} of the exact ones; ` +
        `load ${loadavg()[0]?.toFixed(1)}`,
    );
  }
  summary.filters = results;
  // What a browsing search's window costs by its size (the unfiltered search of N, as `window`).
  const sizes: Record<string, number> = {};
  for (const size of WINDOW_SIZES) {
    const times: number[] = [];
    for (let pass = 0; pass < PASSES; pass++) {
      for (const vector of queries) {
        const t = performance.now();
        await products.searchByVector(vector, { limit: size, window: size > LIMIT });
        times.push(performance.now() - t);
      }
    }
    sizes[size] = p(times, 0.5);
    out(`window of ${size}: p50 ${fmt(sizes[size] as number)} ms; load ${loadavg()[0]?.toFixed(1)}`);
  }
  if (WINDOW_SIZES.length > 0) summary.windowSizes = sizes;
} finally {
  await db.close();
  if (!KEEP) await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.close();
}
out(JSON.stringify(summary));
