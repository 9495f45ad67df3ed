/**
 * IVFFlat lists against probes (issue 24): on a database `bench:scale -- --keep` left (its vectors,
 * its queries), for each `--lists` an `ivf-bq` index is built (as the service builds one:
 * `embedding_bits bit_hamming_ops`, buildMemoryFor's memory, 2 parallel workers) and, for each
 * `--probes`, the SQL part of a search (the `--rerank` nearest by Hamming distance re-ranked by the
 * half-precision cosine) is timed, one query at a time, `--passes` times each, with recall@10
 * against the exact half-precision ranking (the full vectors' would read the whole TOAST at every
 * query: 13 GB at 1,000,000). The query vector goes as text, as psql sends it (about 0.7 ms of
 * each figure at 3072 dimensions): compare the figures with each other, not with bench:scale's.
 * It is how ivfLists and probesFor were chosen (vector-index.ts).
 *
 *   bun run bench:scale -- --n 100000 --keep          # prints the database it leaves
 *   bun bench/lists-probes.ts --database-url postgres://.../sku_scale_bench_PID --n 100000 \
 *     [--lists 100,400,800] [--probes 7,10,15,20] [--rerank 40] [--queries 100] [--passes 3]
 *
 * The table must have no vector index of its own (`bun run cli index drop`, or DROP INDEX): the
 * planner would choose between the two. The bench drops its index at the end. `--n`: the `--n` the
 * database was made with (its queries are drawn from it). Last line: one JSON object.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { cataloguePartition } from "../src/adapters/postgres/schema.ts";
import { connectPostgres } from "../src/adapters/postgres/sql-client.ts";
import { buildMemoryFor, indexTarget } from "../src/adapters/postgres/vector-index.ts";
import { DEFAULT_PRODUCTS_FILE, loadCatalogue, SyntheticSpace, seedOf } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string" },
    n: { type: "string" },
    lists: { type: "string", default: "100,400" },
    probes: { type: "string", default: "5,7,10,15,20" },
    rerank: { type: "string", default: "40" },
    queries: { type: "string", default: "100" },
    passes: { type: "string", default: "3" },
  },
});
if (!args["database-url"] || !args.n) {
  console.error("usage: bun bench/lists-probes.ts --database-url URL --n N [--lists L,...] [--probes P,...]");
  process.exit(2);
}
const DIMENSION = 3072;
const N = Number(args.n);
const LISTS = args.lists.split(",").map(Number);
const PROBES = args.probes.split(",").map(Number);
const RERANK = Number(args.rerank);
const QUERIES = Number(args.queries);
const PASSES = Number(args.passes);
const TABLE = cataloguePartition(1);
const INDEX = "bench_lists_probes";
const load = () => (loadavg()[0] as number).toFixed(2);

const db = connectPostgres(args["database-url"], { maxConnections: 1 });
const existing = await db.query<{ name: string }>(
  `SELECT indexrelid::regclass::text AS name FROM pg_index JOIN pg_class ON pg_class.oid = indexrelid
   JOIN pg_am ON pg_am.oid = relam WHERE indrelid = $1::regclass AND amname IN ('ivfflat', 'hnsw')`,
  [TABLE],
);
if (existing.some((index) => index.name !== INDEX)) {
  console.error(`${TABLE} has a vector index (${existing.map((index) => index.name).join(", ")}): drop it first`);
  process.exit(2);
}
const [{ rows } = { rows: 0 }] = await db.query<{ rows: number }>(`SELECT count(*)::int AS rows FROM ${TABLE}`);
console.log(
  `bench/lists-probes: ${rows} rows × ${DIMENSION} in ${TABLE}; lists ${LISTS.join(", ")}; probes ${PROBES.join(", ")}; re-rank ${RERANK}; ${QUERIES} queries × ${PASSES} passes; load ${load()}`,
);

// bench:scale's unfiltered queries (its queryNear), as text.
const space = new SyntheticSpace(loadCatalogue(DEFAULT_PRODUCTS_FILE), DIMENSION);
const queries = Array.from(
  { length: QUERIES },
  (_, i) => `[${space.queryLowRank(seedOf(`pick:${i}`) % N, `query:${i}`).join(",")}]`,
);
const started = performance.now();
await db.query("SET max_parallel_workers_per_gather = 2");
const exact: number[][] = [];
for (const query of queries) {
  const top = await db.query<{ id: number | string }>(
    `SELECT id FROM ${TABLE} ORDER BY embedding_half <=> $1::vector::halfvec LIMIT 10`,
    [query],
  );
  exact.push(top.map((row) => Number(row.id)));
}
console.log(`exact references: ${((performance.now() - started) / 1000).toFixed(0)} s`);

const target = indexTarget(DIMENSION, "ivf-bq");
if (!target) throw new Error("no ivf-bq at this dimension");
const search = `SELECT id FROM (
    SELECT id, embedding_half <=> $1::vector::halfvec AS near FROM (
      SELECT id, embedding_half FROM ${TABLE}
      ORDER BY ${target.expression} <~> binary_quantize($1::vector)::bit(${DIMENSION}) LIMIT ${RERANK}
    ) AS by_bits ORDER BY near LIMIT 10
  ) AS best`;
const figures: Record<string, unknown>[] = [];
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number;
for (const lists of LISTS) {
  await db.query(`DROP INDEX IF EXISTS ${INDEX}`);
  const memory = buildMemoryFor(target, rows, lists);
  await db.query(`SET maintenance_work_mem = '${memory}'`);
  await db.query("SET max_parallel_maintenance_workers = 2");
  const building = performance.now();
  await db.query(
    `CREATE INDEX ${INDEX} ON ${TABLE} USING ${target.method} (${target.expression} ${target.operatorClass}) WITH (lists = ${lists})`,
  );
  const buildS = (performance.now() - building) / 1000;
  const [{ mb } = { mb: 0 }] = await db.query<{ mb: number }>(`SELECT pg_relation_size('${INDEX}') / 1048576 AS mb`);
  console.log(`lists ${lists}: built in ${buildS.toFixed(1)} s (${memory} of memory), ${mb} MB; load ${load()}`);
  for (const probes of PROBES) {
    await db.query(`SET ivfflat.probes = ${probes}`);
    const times: number[] = [];
    let found = 0;
    for (let pass = 0; pass < PASSES; pass++) {
      for (const [i, query] of queries.entries()) {
        const at = performance.now();
        const best = await db.query<{ id: number | string }>(search, [query]);
        times.push(performance.now() - at);
        if (pass === 0) found += best.filter((row) => exact[i]?.includes(Number(row.id))).length;
      }
    }
    times.sort((a, b) => a - b);
    const row = {
      lists,
      probes,
      p50_ms: Number(quantile(times, 0.5).toFixed(2)),
      p95_ms: Number(quantile(times, 0.95).toFixed(2)),
      recall_at_10: Number((found / (QUERIES * 10)).toFixed(3)),
      build_s: Number(buildS.toFixed(1)),
      load: Number(load()),
    };
    figures.push(row);
    console.log(
      `  probes ${probes}: p50 ${row.p50_ms} ms, p95 ${row.p95_ms} ms, recall@10 ${row.recall_at_10}; load ${row.load}`,
    );
  }
}
await db.query(`DROP INDEX IF EXISTS ${INDEX}`);
await db.close();
console.log(JSON.stringify({ rows, rerank: RERANK, figures }));
