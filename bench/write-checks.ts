/**
 * What coherence across instances costs on the write path, on a PostgreSQL server:
 * - the embedding-space check every product write carries (`EXISTS` on `embedding_space` in the
 *   INSERT: product-repository.ts), against the same INSERT unchecked;
 * - the commit position every write answer carries (X-Read-After: one `pg_current_wal_insert_lsn()`
 *   after the commit, read-write-clients.ts), against none;
 * - the embedding-space watch's look (one row read every 2 s per instance).
 * Single creates of 384-dimension products one after another, the variants interleaved in rounds of
 * 100 so that the machine's load falls on all alike. Run by hand:
 *   bun bench/write-checks.ts [--url postgres://…] [--writes 3000]
 * (or TEST_DATABASE_URL); it works in a schema of its own, dropped after. Last line: one JSON object.
 */
import { parseArgs } from "node:util";
import { type PostgresProductRepository, PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { readYourWrites } from "../src/adapters/postgres/read-write-clients.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { connectPostgres } from "../src/adapters/postgres/sql-client.ts";

const { values } = parseArgs({ options: { url: { type: "string" }, writes: { type: "string", default: "3000" } } });
const url = values.url ?? Bun.env.TEST_DATABASE_URL;
if (!url) throw new Error("--url or TEST_DATABASE_URL: a PostgreSQL server with pgvector");
const WRITES = Number(values.writes);
const ROUND = 100;
const SPACE = { model: "bench", dimension: 384 };

const schema = `write_checks_${process.pid}`;
const admin = connectPostgres(url, { maxConnections: 1 });
await admin.query(`CREATE SCHEMA ${schema}`);
const target = new URL(url);
target.searchParams.set("search_path", `${schema},public`);
const db = connectPostgres(target.toString(), { maxConnections: 4 });

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;
}

function summary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return { p50: round(percentile(sorted, 0.5)), p95: round(percentile(sorted, 0.95)), n: samples.length };
}

try {
  await prepareDatabase(db, SPACE);
  let wrotePosition = "";
  const request = {
    wrote(position: string) {
      wrotePosition = position;
    },
  };
  const variants = {
    plain: new PostgresProducts(db, SPACE.dimension).in("default"),
    spaceChecked: new PostgresProducts(db, SPACE.dimension, undefined, SPACE).in("default"),
    spaceCheckedWithPosition: new PostgresProducts(
      readYourWrites(db, db, { request: () => request, standbys: false, waitMs: 0 }),
      SPACE.dimension,
      undefined,
      SPACE,
    ).in("default"),
  };
  const samples: Record<keyof typeof variants, number[]> = {
    plain: [],
    spaceChecked: [],
    spaceCheckedWithPosition: [],
  };
  const vector = Array.from({ length: SPACE.dimension }, (_, i) => Math.sin(i + 1));
  let n = 0;
  for (let done = 0; done < WRITES; done += ROUND) {
    for (const [name, products] of Object.entries(variants) as [keyof typeof variants, PostgresProductRepository][]) {
      for (let i = 0; i < ROUND; i++) {
        n++;
        const started = performance.now();
        await products.add({
          product: { name: `Producto ${n}`, description: "Descripción de prueba", category: "bench" },
          embedding: vector,
          contentDigest: `d${n}`,
        });
        samples[name].push(performance.now() - started);
      }
    }
  }
  if (!/^[0-9A-F]+\/[0-9A-F]+$/.test(wrotePosition)) throw new Error(`no commit position: ${wrotePosition}`);

  const looks: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const started = performance.now();
    await db.query("SELECT model, dimension FROM embedding_space");
    looks.push(performance.now() - started);
  }

  const result = {
    writes: WRITES,
    createMs: Object.fromEntries(Object.entries(samples).map(([name, ms]) => [name, summary(ms)])),
    lookMs: summary(looks),
    loadAverage: (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" "),
  };
  for (const [name, ms] of Object.entries(result.createMs)) {
    console.error(`create, ${name}: p50 ${ms.p50} ms, p95 ${ms.p95} ms`);
  }
  console.error(`the watch's look: p50 ${result.lookMs.p50} ms`);
  console.log(JSON.stringify(result));
} finally {
  await db.close();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.close();
}
