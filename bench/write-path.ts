/**
 * The database's part of the bulk path alone: the repository's write of embedded products
 * (PostgresProductRepository.writeMany: ids drawn, one binary COPY into the catalogue's partition
 * per chunk) from one session and from several at once, with nothing else running: no HTTP, no
 * embedding, no job. Prints rows a second and the PostgreSQL server's CPU per row (its processes,
 * read from /proc: the server must run on this machine), the sessions' variants taking turns.
 *
 * 1. A new database (`write_path_bench`, dropped at the end), migrated as the service does, with
 *    `--dimension`-d products;
 * 2. each round writes `--rows` products, made beforehand (bench/vectors.ts: clustered vectors, the
 *    eval catalogue's texts), in chunks of `--chunk`, after a CHECKPOINT, from each `--sessions`
 *    count in turn, `--rounds` times.
 *
 * Run by hand: `bun bench/write-path.ts --database-url postgres://… [--rows 8192] [--chunk 512]
 *   [--sessions 1,4] [--rounds 2] [--dimension 3072]`. Last line: one JSON object.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { PostgresProducts } from "../src/adapters/postgres/product-repository.ts";
import { prepareDatabase } from "../src/adapters/postgres/schema.ts";
import { connectPostgres } from "../src/adapters/postgres/sql-client.ts";
import type { BulkWrite } from "../src/ports/product-repository.ts";
import { postmasterOf, serverCpuMs } from "./server-cpu.ts";
import { embeddedInserts, loadCatalogue, SyntheticSpace } from "./vectors.ts";

const { values: args } = parseArgs({
  options: {
    "database-url": { type: "string" },
    rows: { type: "string", default: "8192" },
    chunk: { type: "string", default: "512" },
    sessions: { type: "string", default: "1,4" },
    rounds: { type: "string", default: "2" },
    dimension: { type: "string", default: "3072" },
  },
});
const BASE = args["database-url"] ?? process.env.DATABASE_URL;
if (!BASE) {
  console.error("bench/write-path.ts needs a PostgreSQL server on this machine: --database-url (or DATABASE_URL)");
  process.exit(2);
}
const ROWS = Number(args.rows);
const CHUNK = Number(args.chunk);
const SESSIONS = (args.sessions as string).split(",").map(Number);
const ROUNDS = Number(args.rounds);
const DIMENSION = Number(args.dimension);
const DATABASE = "write_path_bench";

const admin = connectPostgres(BASE, { maxConnections: 1 });
await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
await admin.query(`CREATE DATABASE ${DATABASE}`);
const url = new URL(BASE);
url.pathname = `/${DATABASE}`;
const setup = connectPostgres(url.toString(), { maxConnections: 1 });
const figures: Record<string, number[]> = {};
try {
  await prepareDatabase(setup, { model: "write-path-bench", dimension: DIMENSION });
  const postmaster = await postmasterOf(setup);
  if (postmaster === undefined)
    throw new Error("the server's processes are not on this machine: its CPU cannot be read");
  const space = new SyntheticSpace(loadCatalogue(), DIMENSION);
  console.log(
    `write path: ${ROWS} products × ${DIMENSION} dims a round in chunks of ${CHUNK}, sessions ${SESSIONS.join(" and ")} in turn, ` +
      `${ROUNDS} rounds; load average ${loadavg()[0]?.toFixed(2)}`,
  );
  let next = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const sessions of SESSIONS) {
      const chunks: BulkWrite[][] = [];
      for (let first = next; first < next + ROWS; first += CHUNK) {
        chunks.push(await embeddedInserts(space, first, Math.min(CHUNK, next + ROWS - first)));
      }
      next += ROWS;
      const clients = Array.from({ length: sessions }, () => connectPostgres(url.toString(), { maxConnections: 1 }));
      const repositories = clients.map((client) => new PostgresProducts(client, DIMENSION).in("default"));
      await setup.query("CHECKPOINT");
      const cpuBefore = serverCpuMs(postmaster);
      const started = performance.now();
      let taken = 0;
      await Promise.all(
        repositories.map(async (repository) => {
          while (taken < chunks.length) await repository.writeMany(chunks[taken++] as BulkWrite[]);
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const cpuPerRow = (serverCpuMs(postmaster) - cpuBefore) / ROWS;
      await Promise.all(clients.map((client) => client.close()));
      console.log(
        `round ${round}, ${sessions} session(s): ${(ROWS / seconds).toFixed(0)} rows/s, ` +
          `server CPU ${cpuPerRow.toFixed(3)} ms a row; load ${loadavg()[0]?.toFixed(2)}`,
      );
      const keep = (key: string, value: number) => {
        figures[key] = [...(figures[key] ?? []), value];
      };
      keep(`rows_per_s_${sessions}`, Math.round(ROWS / seconds));
      keep(`db_cpu_ms_per_row_${sessions}`, Math.round(cpuPerRow * 1000) / 1000);
    }
  }
} finally {
  await setup.close();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await admin.close();
}
console.log(JSON.stringify({ rows: ROWS, chunk: CHUNK, dimension: DIMENSION, ...figures }));
