import postgres from "postgres";
import { DatabaseUnavailable } from "../../domain/errors.ts";

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
  close(): Promise<void>;
}

export interface PostgresOptions {
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Seconds to wait for a connection before failing with DatabaseUnavailable (default 10). */
  connectTimeoutSeconds?: number;
  /** Seconds close() lets running queries finish before cutting the connections (default 5). */
  closeTimeoutSeconds?: number;
}

/** A pooled postgres.js client. Connects lazily: nothing is sent until the first query. */
export function connectPostgres(url: string, options: PostgresOptions = {}): SqlClient {
  const sql = postgres(url, {
    max: options.maxConnections ?? 10,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    idle_timeout: 60,
    onnotice: () => {},
  });
  return {
    ...postgresExecutor(sql),
    close: () => sql.end({ timeout: options.closeTimeoutSeconds ?? 5 }),
  };
}

type Executor = Pick<SqlClient, "query" | "transaction">;

function postgresExecutor(sql: postgres.Sql | postgres.TransactionSql): Executor {
  return {
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      try {
        // postgres.js types parameters as its own ParameterOrJSON union; ours are plain values.
        const rows = await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true });
        return rows as unknown as T[];
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
    },
    async transaction<R>(fn: (tx: SqlClient) => Promise<R>): Promise<R> {
      const run = (tx: postgres.TransactionSql) => fn(insideTransaction(postgresExecutor(tx)));
      try {
        // `begin` and `savepoint` type their result as UnwrapPromiseArray<R>, which is R for non-arrays.
        return (await ("savepoint" in sql ? sql.savepoint(run) : sql.begin(run))) as R;
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
    },
  };
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
    code === "57P03" // cannot connect now (starting up, recovering)
  );
}

/** Wraps a connection-class error in DatabaseUnavailable; returns any other error unchanged. */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailable) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && (CONNECTION_ERROR_CODES.has(code) || isConnectionSqlState(code))) {
    return new DatabaseUnavailable(undefined, { cause: error });
  }
  return error;
}
