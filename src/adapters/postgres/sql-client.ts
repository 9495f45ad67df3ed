import postgres from "postgres";
import { DatabaseReadOnly, DatabaseUnavailable } from "../../domain/errors.ts";
import { encodeHalfVector, encodeVector } from "./binary-copy.ts";

/**
 * The little the repositories need from a database: plain SQL with `$1` parameters, transactions,
 * and closing. Implemented over postgres.js (a server) and over PGlite (embedded), so one set of
 * SQL serves both.
 */
export interface SqlClient {
  /** Rows as objects keyed by column name. bigint columns may come back as string, number or bigint. */
  query<T>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs `fn` in a transaction (a savepoint when already inside one); rolls back when it throws. */
  transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R>;
  /**
   * Loads rows in PostgreSQL's binary COPY format (binary-copy.ts) into `table`'s `columns`. Use it
   * inside a transaction for a temporary table that is dropped on commit.
   */
  copyIn(table: string, columns: readonly string[], data: Uint8Array): Promise<void>;
  /**
   * LISTEN on `channel`: `onNotify` gets each notification's payload, `onListen` runs each time the
   * listening starts (at first, and again after its connection was lost and made again:
   * notifications sent in between are lost). Resolves, once listening, with the function that
   * stops it. Absent where the client cannot listen (a transaction's client, a transaction pooler).
   */
  listen?(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<() => Promise<void>>;
  /**
   * Runs `fn` on one connection of the pool, held for it alone (no transaction, unless `fn` opens
   * one there): what a statement there sees, the next one sees too (read-your-writes waits on a
   * standby, then reads on it). Absent where there is only one connection anyway (PGlite).
   */
  reserved?<R>(fn: (connection: SqlClient) => Promise<R>): Promise<R>;
  close(): Promise<void>;
}

/**
 * A pgvector `vector` query parameter (write `$n::vector` in the SQL). Each client sends it as
 * cheaply as it can: a server gets pgvector's binary format (a 3072-d vector as text took ~0.35 ms
 * to write and ~0.4 ms for the server to parse, per query: a fifth of an indexed search at 100,000
 * products), PGlite the text form.
 */
export class VectorParameter {
  constructor(readonly components: ArrayLike<number>) {}
}

/**
 * A pgvector `halfvec` query parameter (write `$n::halfvec`): sent in half precision, so that a
 * statement comparing it with a `halfvec` column converts nothing per row. Written as
 * `$n::vector::halfvec`, the conversion of a parameter is folded once in a custom plan but made for
 * every row in a generic one (a prepared statement's plan after five runs): an exact scan of 1,000
 * products of 3072 dimensions took 39 ms instead of 3.
 */
export class HalfVectorParameter {
  constructor(readonly components: ArrayLike<number>) {}
}

/** The COPY statement for copyIn, reading from `source` (STDIN for a server, a file for PGlite). */
export function copyStatement(table: string, columns: readonly string[], source: string): string {
  const name = /^[a-z_][a-z0-9_]*$/;
  if (!name.test(table) || !columns.every((column) => name.test(column))) {
    throw new Error(`copyIn: not a plain table or column name: ${table} (${columns.join(", ")})`);
  }
  return `COPY ${table} (${columns.join(", ")}) FROM ${source} WITH (FORMAT binary)`;
}

export interface PostgresOptions {
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Seconds to wait for a connection before failing with DatabaseUnavailable (default 5). */
  connectTimeoutSeconds?: number;
  /** Seconds close() lets running queries finish before cutting the connections (default 5). */
  closeTimeoutSeconds?: number;
  /**
   * Longest wait for one statement, queueing for a connection included, in ms; unset: no limit (the
   * operator's commands: re-embedding, imports, index builds). Past it the caller gets
   * DatabaseUnavailable at once and the statement is cancelled; the server also stops it by itself
   * (statement_timeout), so a client that gave up leaves nothing running.
   */
  queryTimeoutMs?: number;
  /** Settings every connection starts with (e.g. vectorSessionSettings). */
  sessionSettings?: Record<string, string>;
  /**
   * A transaction-pooling proxy (pgbouncer `pool_mode = transaction`) sits between us and the
   * server (DATABASE_TRANSACTION_POOLER): a server connection is ours for one transaction only, so
   * no named prepared statements (postgres.js `prepare: false`) and no startup parameters (pgbouncer
   * refuses unknown ones: sessionSettings and statement_timeout then belong in its `connect_query`).
   */
  transactionPooler?: boolean;
  /** The server's notices (e.g. pgvector's during an index build); unset: ignored. */
  onNotice?: (message: string) => void;
}

/**
 * A pooled postgres.js client. Connects lazily: nothing is sent until the first query. A broken
 * connection is replaced on the next query, so the client heals by itself once the server is back;
 * a transaction (or a reserved connection) whose connection broke fails, and none of its later
 * statements runs on the new one.
 * postgres.js 3.4.9 needed a patch for both (patches/, README "PostgreSQL restarts").
 */
export function connectPostgres(url: string, options: PostgresOptions = {}): SqlClient {
  const { queryTimeoutMs } = options;
  const pooled = options.transactionPooler === true;
  const sql = postgres(url, {
    max: options.maxConnections ?? 10,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    idle_timeout: 60,
    // postgres.js waits before reconnecting a closed connection for a delay that grows as 3^n with
    // the errors of the whole pool, up to 20 s, fixed when the connection closes: after a restart
    // that cut every connection, a request routed to one of them waited that long though the
    // server was long back. At most one second, so the pool heals within a second of the server.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    onnotice: (notice) => options.onNotice?.(String(notice.message)),
    prepare: !pooled,
    connection: pooled
      ? {}
      : {
          ...options.sessionSettings,
          ...(queryTimeoutMs === undefined ? {} : { statement_timeout: queryTimeoutMs }),
        },
  });
  return {
    ...postgresExecutor(sql, queryTimeoutMs, !pooled),
    async reserved<R>(fn: (connection: SqlClient) => Promise<R>): Promise<R> {
      let connection: postgres.ReservedSql;
      const reserving = sql.reserve();
      try {
        // Past the time limit the wait goes on in postgres.js: the connection it gets then is given
        // back at once (held by nobody, it was lost to the pool for good).
        connection = await withTimeout(reserving, queryTimeoutMs, () => {
          reserving.then(
            (late) => late.release(),
            () => {},
          );
        });
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
      const executor = postgresExecutor(connection, queryTimeoutMs, !pooled);
      try {
        return await fn(
          insideTransaction({ ...executor, transaction: (inner) => transactionByStatements(executor, inner) }),
        );
      } finally {
        connection.release();
      }
    },
    // postgres.js listens on a connection of its own, which it makes again when it is lost. Through a
    // transaction pooler a LISTEN would stay on a server connection handed to others: none there.
    ...(pooled
      ? {}
      : {
          async listen(channel: string, onNotify: (payload: string) => void, onListen: () => void) {
            try {
              const { unlisten } = await sql.listen(channel, onNotify, onListen);
              return unlisten;
            } catch (error) {
              throw asDatabaseUnavailable(error);
            }
          },
        }),
    close: () => sql.end({ timeout: options.closeTimeoutSeconds ?? 5 }),
  };
}

type Executor = Pick<SqlClient, "query" | "transaction" | "copyIn">;

function postgresExecutor(
  sql: postgres.Sql | postgres.TransactionSql | postgres.ReservedSql,
  timeoutMs: number | undefined,
  prepare: boolean,
): Executor {
  return {
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      // postgres.js types parameters as its own ParameterOrJSON union; ours are plain values.
      const values = params.map((param) =>
        // Type 0: the server infers `vector` from the SQL's cast; the patched Bind then sends the
        // bytes as binary, as it does any Uint8Array of a type postgres.js has no serializer for.
        param instanceof VectorParameter
          ? sql.typed(encodeVector(param.components), 0)
          : param instanceof HalfVectorParameter
            ? sql.typed(encodeHalfVector(param.components), 0)
            : param,
      );
      const pending = sql.unsafe(text, values as postgres.ParameterOrJSON<never>[], { prepare });
      try {
        const rows = await withTimeout(pending, timeoutMs, () => void pending.cancel());
        return rows as unknown as T[];
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
    },
    async copyIn(table: string, columns: readonly string[], data: Uint8Array): Promise<void> {
      try {
        const stream = await sql.unsafe(copyStatement(table, columns, "STDIN")).writable();
        await new Promise<void>((resolve, reject) => {
          stream.once("error", reject);
          stream.once("finish", resolve);
          stream.end(data);
        });
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
    },
    async transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R> {
      const run = (tx: postgres.TransactionSql) => fn(insideTransaction(postgresExecutor(tx, timeoutMs, prepare)));
      try {
        // `begin` and `savepoint` type their result as UnwrapPromiseArray<R>, which is R for non-arrays.
        const begin = "savepoint" in sql ? sql.savepoint(run) : (sql as postgres.Sql).begin(run);
        return (await begin) as R;
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
    },
  };
}

/**
 * A transaction on a connection held alone, by its statements: BEGIN, then COMMIT (ROLLBACK when
 * `fn` throws); within one, a savepoint. postgres.js gives a reserved connection no `begin`, and a
 * read that waited on a standby for a write runs its catalogue's transaction there
 * (read-write-clients.ts, product-repository.ts). A ROLLBACK that fails (the connection broke)
 * leaves `fn`'s error as the one thrown.
 */
async function transactionByStatements<R>(
  executor: Executor,
  fn: (tx: SqlClient) => Promise<R>,
  depth = 0,
): Promise<R> {
  const savepoint = `reserved_${depth}`;
  await executor.query(depth === 0 ? "BEGIN" : `SAVEPOINT ${savepoint}`);
  const inner = insideTransaction({
    ...executor,
    transaction: (nested) => transactionByStatements(executor, nested, depth + 1),
  });
  let result: R;
  try {
    result = await fn(inner);
  } catch (error) {
    await executor.query(depth === 0 ? "ROLLBACK" : `ROLLBACK TO SAVEPOINT ${savepoint}`).catch(() => {});
    throw error;
  }
  await executor.query(depth === 0 ? "COMMIT" : `RELEASE SAVEPOINT ${savepoint}`);
  return result;
}

/** A statement that took longer than the client's queryTimeoutMs. */
export class QueryTimeout extends Error {
  override readonly name = "QueryTimeout";
  readonly code = "QUERY_TIMEOUT";
  constructor(readonly timeoutMs: number) {
    super(`no answer from the database within ${timeoutMs} ms`);
  }
}

/** `promise`, or a QueryTimeout after `timeoutMs` (then `onTimeout` runs); no limit when undefined. */
function withTimeout<T>(promise: Promise<T>, timeoutMs: number | undefined, onTimeout: () => void): Promise<T> {
  if (timeoutMs === undefined) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new QueryTimeout(timeoutMs));
    }, timeoutMs);
  });
  // The statement's own failure after the timeout is of no interest to anyone.
  promise.catch(() => {});
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** A transaction's client: closing it is a mistake, the owner of the connection closes. */
export function insideTransaction(executor: Executor): SqlClient {
  return {
    ...executor,
    close: () => Promise.reject(new Error("close() called on a transaction")),
  };
}

/** Node/Bun socket errors and postgres.js's own connection errors. */
const CONNECTION_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ConnectionRefused",
  "ConnectionClosed",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "QUERY_TIMEOUT",
]);

/** SQLSTATEs that mean "no usable session", not "your SQL is wrong". */
function isConnectionSqlState(code: string): boolean {
  return (
    code.startsWith("08") || // connection exception
    code.startsWith("28") || // invalid authorization: the server will not take us
    code === "3D000" || // the database does not exist
    code === "53300" || // too many connections
    code === "57P01" || // admin shutdown
    code === "57P02" || // crash shutdown
    code === "57P03" || // cannot connect now (starting up, recovering)
    code === "57014" // statement cancelled: by statement_timeout, or by us on our own timeout
  );
}

/** SQLSTATE of a write sent to a hot standby (or to a primary being demoted). */
const READ_ONLY_SQL_TRANSACTION = "25006";

/**
 * Wraps a connection-class error in DatabaseUnavailable, a write refused by a standby in
 * DatabaseReadOnly; returns any other error unchanged.
 */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailable) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === READ_ONLY_SQL_TRANSACTION) return new DatabaseReadOnly({ cause: error });
  if (typeof code === "string" && (CONNECTION_ERROR_CODES.has(code) || isConnectionSqlState(code))) {
    return new DatabaseUnavailable(undefined, { cause: error });
  }
  return error;
}
