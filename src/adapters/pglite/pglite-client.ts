import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Extension, PGlite, type PGliteOptions, type Transaction } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { vector } from "@electric-sql/pglite-pgvector";
import pgvector from "pgvector";
import { DatabaseUnavailable } from "../../domain/errors.ts";
import {
  copyStatement,
  HalfVectorParameter,
  insideTransaction,
  type SqlClient,
  VectorParameter,
} from "../postgres/sql-client.ts";
import { lockDataDir } from "./data-dir-lock.ts";
import { PreparedStatements } from "./prepared-statements.ts";

/**
 * Where PGlite finds its files when it cannot look next to its own module, as inside a
 * `bun build --compile` executable (see GUIDE.md). Each one is passed through untouched.
 */
export interface PgliteAssets {
  pgliteWasmModule?: WebAssembly.Module;
  initdbWasmModule?: WebAssembly.Module;
  fsBundle?: Blob;
  /** A real file path (or file: URL) of pgvector's `vector.tar.gz`. */
  vectorBundlePath?: string | URL;
  /** A real file path (or file: URL) of PGlite's `pg_trgm.tar.gz` (trigram matching, for typo tolerance). */
  trgmBundlePath?: string | URL;
  /**
   * A new database's files (a `dumpDataDir` tarball of a database just made by initdb): unpacked
   * when there is no database yet, instead of running initdb (which takes about 3 s and 800 MB of memory).
   */
  initialDataDir?: Blob;
}

/**
 * A GIN index (the products' words, their attributes, the search vocabulary's trigrams) takes new
 * entries into a pending list, which every search through it reads whole, until it is merged into
 * the index: by autovacuum on a server, by the insert that takes it past `gin_pending_list_limit`
 * (4 MB by default) otherwise. PGlite has no autovacuum, so a catalogue's lists grew to the limit and
 * stayed there: 468 pages of the products' words after 8,000 products, and the search vocabulary's
 * trigram index, its list full, was not used at all (the planner scanned the 8,885 words for each
 * typed one: 32 ms for four). With a 64 kB limit (the least PostgreSQL takes) the lists stay a few
 * pages, for 12 % fewer products written a second by PGlite (5,700 → 5,020, measured side by side);
 * a hybrid search's candidates on the eval catalogue (12,430 products) went from 46 to 24 ms p50.
 */
const GIN_UPKEEP_SETTINGS = { gin_pending_list_limit: "64kB" };

/** Merges every GIN index's pending list into it (a database written before GIN_UPKEEP_SETTINGS: about 0.1 s for 12,430 products). */
const MERGE_GIN_PENDING_LISTS = `
  SELECT gin_clean_pending_list(c.oid) FROM pg_class c JOIN pg_am am ON am.oid = c.relam
  WHERE am.amname = 'gin' AND c.relkind = 'i'`;

/**
 * Opens the embedded database with pgvector and pg_trgm loaded: persisted in `dataDir`/pgdata (created when
 * missing, locked against other processes), or in memory when `dataDir` is undefined. PGlite is one backend in this process, so every query
 * and transaction runs one after another; a query outside a running transaction waits for it.
 * `sessionSettings` are set once, for every later query (e.g. vectorSessionSettings), after
 * GIN_UPKEEP_SETTINGS; GIN indexes' pending lists are merged at once, and a data directory's tables
 * that need it are vacuumed (vacuumWhereChanged).
 */
export async function openPglite(
  dataDir: string | undefined,
  assets: PgliteAssets = {},
  sessionSettings: Record<string, string> = {},
  { vacuumEveryMs }: { vacuumEveryMs?: number } = {},
): Promise<SqlClient> {
  const { vectorBundlePath, trgmBundlePath, initialDataDir, ...wasm } = assets;
  const options: PGliteOptions = {
    extensions: {
      vector: vectorBundlePath === undefined ? vector : withBundlePath(vector, vectorBundlePath),
      pg_trgm: trgmBundlePath === undefined ? pg_trgm : withBundlePath(pg_trgm, trgmBundlePath),
    },
    ...wasm,
  };
  const unlock = dataDir === undefined ? () => {} : lockDataDir(dataDir);
  let db: PGlite | undefined;
  try {
    if (dataDir === undefined) {
      if (initialDataDir !== undefined) options.loadDataDir = initialDataDir;
    } else {
      options.dataDir = join(dataDir, "pgdata");
      if (existsSync(join(options.dataDir, "PG_VERSION"))) {
        keepPrivate(options.dataDir);
      } else if (initialDataDir !== undefined) {
        await unpackNewDatabase(initialDataDir, options.dataDir);
      }
    }
    db = await PGlite.create(options);
    for (const [name, value] of Object.entries({ ...GIN_UPKEEP_SETTINGS, ...sessionSettings })) {
      await db.query("SELECT set_config($1, $2, false)", [name, value]);
    }
    await db.query(MERGE_GIN_PENDING_LISTS);
  } catch (error) {
    await db?.close().catch(() => {});
    unlock();
    throw error;
  }
  const opened = db;
  const executor = pgliteExecutor(opened);
  // PGlite is one backend: a vacuum waits for the queries before it, and those after wait for it.
  let vacuuming: Promise<unknown> = Promise.resolve();
  const vacuum = () => {
    vacuuming = vacuuming.then(() => vacuumWhereChanged(executor)).catch(() => {});
    return vacuuming;
  };
  // What an earlier process left unvacuumed (it stopped without closing, or predates this upkeep).
  if (dataDir !== undefined) await vacuum();
  const timer = vacuumEveryMs === undefined ? undefined : setInterval(() => void vacuum(), vacuumEveryMs);
  timer?.unref();
  return {
    ...executor,
    close: async () => {
      if (opened.closed) return;
      clearInterval(timer);
      // What this process wrote is left vacuumed for the next (a command's import, then `serve`).
      if (dataDir !== undefined) await vacuum();
      await opened.close();
      unlock();
    },
  };
}

/**
 * What autovacuum does on a PostgreSQL server, which PGlite lacks: VACUUM (ANALYZE) of each table
 * that changed enough since its last one, by autovacuum's own default thresholds (dead rows past
 * 50 + 20 % of its rows, rows inserted past 1,000 + 20 %, rows changed since its statistics past
 * 50 + 10 %), and of each never analyzed. Without it the planner had no statistics but those an
 * index build gathers, a GIN index's own (what it estimates a search through it from) were never
 * updated, and dead rows were never reclaimed. The counts start again at each open (PGlite keeps
 * no statistics across restarts), so a table is also vacuumed when a process that wrote to it
 * closes the database, and, since the counts of a process that stopped without closing it (or of a
 * version before this upkeep) are lost, when its pages outgrow what its last VACUUM or ANALYZE
 * counted by 50 + 20 %: a data directory is looked at when opened. Returns the tables vacuumed.
 */
export async function vacuumWhereChanged(db: Pick<SqlClient, "query">): Promise<string[]> {
  // The backend sends its counts to the statistics at most once a second, when idle: now, before the next statement.
  await db.query("SELECT pg_stat_force_next_flush()");
  const tables = await db.query<{ name: string }>(`
    SELECT format('%I.%I', s.schemaname, s.relname) AS name
    FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE c.relkind = 'r' AND c.relpersistence <> 't' AND (
      c.reltuples < 0
      OR s.n_dead_tup > 50 + 0.2 * c.reltuples
      OR s.n_ins_since_vacuum > 1000 + 0.2 * c.reltuples
      OR s.n_mod_since_analyze > 50 + 0.1 * c.reltuples
      OR pg_relation_size(c.oid) / current_setting('block_size')::int > 50 + 1.2 * c.relpages
    )
    ORDER BY 1`);
  for (const { name } of tables) await db.query(`VACUUM (ANALYZE) ${name}`);
  return tables.map((table) => table.name);
}

/**
 * Unpacks a new database's tarball into `pgdata` natively (Bun.Archive), rather than through
 * PGlite's `loadDataDir`, which writes its 39 MB of files through the WebAssembly file system:
 * `bun start` on an empty DATA_DIR answers its first `GET /` in 0.87 to 0.93 of the time (2.68 →
 * 2.49 s), with 0.84 to 0.89 of the CPU. Unpacked into a folder only this user can read (PGlite's
 * was readable by all), beside `pgdata`, then renamed to it: a start interrupted half-way leaves no
 * half database, and the next one unpacks it again.
 */
async function unpackNewDatabase(tarball: Blob, pgdata: string): Promise<void> {
  if (existsSync(pgdata) && readdirSync(pgdata).length > 0) {
    throw new Error(
      `${pgdata} holds files but no database (no PG_VERSION): move it away, or remove it, and start again`,
    );
  }
  const partial = `${pgdata}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { mode: 0o700 });
  await new Bun.Archive(await tarball.bytes()).extract(partial);
  chmodSync(partial, 0o700);
  renameSync(partial, pgdata);
}

/**
 * A database made before its folder was private (PGlite made it readable by every user of the
 * machine, with the users' password hashes and the keys' digests inside) is made private: its
 * folder's mode becomes 700 on the next open. Left as it is where this user may not change it (a
 * folder of another owner, a read-only mount): the open goes on.
 */
function keepPrivate(pgdata: string): void {
  try {
    if ((statSync(pgdata).mode & 0o077) !== 0) chmodSync(pgdata, 0o700);
  } catch {
    // Not ours to change: opened as it is.
  }
}

/** The extension, its files read from `path` (a real file) rather than next to its module. */
function withBundlePath(extension: Extension, path: string | URL): Extension {
  const bundlePath = typeof path === "string" ? pathToFileURL(path) : path;
  return {
    name: extension.name,
    setup: async (pg, emscriptenOpts) => ({ ...(await extension.setup(pg, emscriptenOpts)), bundlePath }),
  };
}

function pgliteExecutor(db: PGlite) {
  const statements = new PreparedStatements(db);
  return {
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      if (db.closed) throw new DatabaseUnavailable();
      return statements.query<T>(db, text, textParams(params));
    },
    async copyIn(table: string, columns: readonly string[], data: Uint8Array): Promise<void> {
      if (db.closed) throw new DatabaseUnavailable();
      await copyAsSessionUser(db, table, columns, data);
    },
    transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R> {
      if (db.closed) return Promise.reject(new DatabaseUnavailable());
      return db.transaction((tx) => fn(insideTransaction(transactionExecutor(tx, { next: 0 }, statements))));
    },
    // One backend in this process: its notifications cannot be lost to a broken connection.
    async listen(channel: string, onNotify: (payload: string) => void, onListen: () => void) {
      if (db.closed) throw new DatabaseUnavailable();
      const unlisten = await db.listen(channel, onNotify);
      onListen();
      return unlisten;
    },
  };
}

/** Parameters as PGlite takes them: a vector in pgvector's text form `[1,2,3]`. */
function textParams(params: readonly unknown[]): unknown[] {
  // toSql only accepts a plain array; a Float32Array must be copied first. Each component is first
  // rounded to the float4 the server stores (Math.fround): the shortest decimal of an unrounded double
  // could parse to a float4 one unit away, as a binary parameter never does.
  return params.map((param) =>
    param instanceof VectorParameter
      ? pgvector.toSql(Array.from(param.components, Math.fround))
      : param instanceof HalfVectorParameter
        ? pgvector.toSql(Array.from(param.components, Math.f16round))
        : param,
  );
}

/**
 * COPY into `table` from PGlite's in-memory `/dev/blob`, its stand-in for STDIN. PostgreSQL lets
 * only roles with pg_read_server_files COPY from a file, so a transaction running as another role
 * (the catalogue's: product-repository.ts) copies as the session user, then goes back to that role.
 */
async function copyAsSessionUser(
  db: Pick<PGlite | Transaction, "query">,
  table: string,
  columns: readonly string[],
  data: Uint8Array,
): Promise<void> {
  const copy = () => db.query(copyStatement(table, columns, "'/dev/blob'"), [], { blob: new Blob([data]) });
  const [who] = (
    await db.query<{ role: string; session: string }>("SELECT current_user AS role, session_user AS session")
  ).rows;
  if (!who || who.role === who.session) {
    await copy();
    return;
  }
  await db.query("SELECT set_config('role', 'none', true)");
  await copy();
  await db.query("SELECT set_config('role', $1, true)", [who.role]);
}

/** PGlite's Transaction has no nesting, so a nested transaction is a savepoint. */
function transactionExecutor(
  tx: Transaction,
  savepoints: { next: number },
  statements: PreparedStatements,
): Pick<SqlClient, "query" | "transaction" | "copyIn"> {
  return {
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      return statements.query<T>(tx, text, textParams(params));
    },
    async copyIn(table: string, columns: readonly string[], data: Uint8Array): Promise<void> {
      await copyAsSessionUser(tx, table, columns, data);
    },
    async transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R> {
      const name = `sp_${savepoints.next++}`;
      await tx.query(`SAVEPOINT ${name}`);
      try {
        const result = await fn(insideTransaction(transactionExecutor(tx, savepoints, statements)));
        await tx.query(`RELEASE SAVEPOINT ${name}`);
        return result;
      } catch (error) {
        await tx.query(`ROLLBACK TO SAVEPOINT ${name}`);
        throw error;
      }
    },
  };
}
