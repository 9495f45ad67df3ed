/**
 * The SQL databases the repository tests run on, as describe blocks: PGlite in memory (always) and a
 * PostgreSQL server (TEST_DATABASE_URL; reported as skipped, not silently absent, without one), and
 * the server through pgbouncer (TEST_PGBOUNCER_URL). Each test starts from an empty database: PGlite's
 * tables are dropped, a server test gets a schema of its own, and the pgbouncer block's own database
 * has its tables dropped.
 */
import { afterAll, afterEach, beforeAll, describe } from "bun:test";
import { prepareDatabase } from "../../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import type { EmbeddingSpace } from "../../src/ports/embedding-space.ts";
import { type MigratedSnapshot, resetToMigrated, snapshotMigrated } from "./migrated-database.ts";
import { openNewPglite } from "./new-database.ts";
import { blockHooks } from "./skipped-blocks.ts";

/** Hands out clients on a fresh database and cleans up after each test. */
export interface TestDatabase {
  /** A client on a database holding none of our tables. */
  fresh(): Promise<SqlClient>;
  /**
   * A client on a database as `prepareDatabase(client, space, options)` leaves a new one: the last
   * test's brought back to that when it was migrated for the same (migrated-database.ts), else a
   * `fresh()` one, migrated.
   */
  migrated(space: EmbeddingSpace, options?: MigrateOptions): Promise<SqlClient>;
  /** Another client on the same database as the last `fresh()` or `migrated()` (a separate connection if possible). */
  another(): Promise<SqlClient>;
  cleanup(): Promise<void>;
}

export const POSTGRES_URL = Bun.env.TEST_DATABASE_URL ?? "";
/**
 * A pgbouncer in transaction pooling mode in front of TEST_DATABASE_URL's server, passing any
 * database name through (.ci/pgbouncer.sh): the contract then runs through it too, as the service
 * does with DATABASE_TRANSACTION_POOLER=true.
 */
export const PGBOUNCER_URL = Bun.env.TEST_PGBOUNCER_URL ?? "";

type MigrateOptions = NonNullable<Parameters<typeof prepareDatabase>[2]>;

/**
 * `migrated()` of a route: `client` (from `open`) reset to the kept snapshot when it was taken for
 * the same space and options and the reset succeeds; else `renew` gives an empty database's client,
 * which is migrated and its snapshot kept.
 */
async function migratedFromKept(
  kept: { snapshot?: MigratedSnapshot },
  space: EmbeddingSpace,
  options: MigrateOptions | undefined,
  { open, renew }: { open: () => Promise<SqlClient>; renew: () => Promise<SqlClient> },
): Promise<SqlClient> {
  const key = JSON.stringify({ space, options });
  if (kept.snapshot?.key === key) {
    const client = await open();
    if (await resetToMigrated(client, kept.snapshot)) return client;
  }
  kept.snapshot = undefined;
  const client = await renew();
  await prepareDatabase(client, space, options);
  kept.snapshot = await snapshotMigrated(client, key);
  return client;
}

/** Empties a database of our tables (the extensions stay): what a test starts from. */
const DROP_OUR_TABLES = `
  DO $$ DECLARE t record; BEGIN
    FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
      EXECUTE 'DROP TABLE IF EXISTS public.' || quote_ident(t.tablename) || ' CASCADE';
    END LOOP;
  END $$`;

/**
 * How a block's clients reach their database: PGlite in this process, a PostgreSQL server straight,
 * or the same server through pgbouncer's transaction pooling.
 */
export type DatabaseRoute = "embedded" | "server" | "pooler";

/** Registers `tests` once per database, inside a describe block named after it. */
export function forEachDatabase(
  tests: (db: TestDatabase, engine: "pglite" | "postgres", route: DatabaseRoute) => void,
): void {
  describe("PGlite in memory", () => {
    // One instance (a new database, copied: no initdb here), emptied before each test.
    let shared: SqlClient;
    const kept: { snapshot?: MigratedSnapshot } = {};
    beforeAll(async () => {
      shared = await openNewPglite();
    }, 30_000);
    afterAll(() => shared.close());
    const fresh = async () => {
      kept.snapshot = undefined;
      await shared.query(DROP_OUR_TABLES);
      return shared;
    };
    tests(
      {
        fresh,
        migrated: (space, options) =>
          migratedFromKept(kept, space, options, { open: async () => shared, renew: fresh }),
        async another() {
          return shared;
        },
        async cleanup() {},
      },
      "pglite",
      "embedded",
    );
  });

  describe.skipIf(!POSTGRES_URL)("PostgreSQL server (TEST_DATABASE_URL)", () => {
    // Each test gets its own schema (first in search_path; pgvector and pg_trgm stay in public).
    let admin: SqlClient;
    let schema = "";
    let clients: SqlClient[] = [];
    let counter = 0;
    // The last migrated schema, kept from one test to the next to be reset rather than migrated again.
    const kept: { snapshot?: MigratedSnapshot; schema?: string } = {};
    const dropKept = async () => {
      if (kept.schema) await admin.query(`DROP SCHEMA IF EXISTS ${kept.schema} CASCADE`);
      kept.schema = undefined;
    };
    const connect = () => {
      const client = connectPostgres(urlOfSchema(schema), { maxConnections: 2 });
      clients.push(client);
      return client;
    };
    const db: TestDatabase = {
      async fresh() {
        schema = `contract_${process.pid}_${++counter}`;
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.query(`CREATE SCHEMA ${schema}`);
        return connect();
      },
      migrated: (space, options) =>
        migratedFromKept(kept, space, options, {
          async open() {
            schema = kept.schema ?? "";
            return connect();
          },
          async renew() {
            await dropKept();
            const client = await db.fresh();
            kept.schema = schema;
            return client;
          },
        }),
      async another() {
        return connect();
      },
      async cleanup() {
        await Promise.all(clients.map((client) => client.close()));
        clients = [];
        if (schema && schema !== kept.schema) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        schema = "";
      },
    };
    blockHooks(!POSTGRES_URL, {
      async beforeAll() {
        admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
        await admin.query("CREATE EXTENSION IF NOT EXISTS vector");
        await admin.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
      },
      async afterAll() {
        await dropKept();
        await admin.close();
      },
    });
    afterEach(() => db.cleanup());
    tests(db, "postgres", "server");
  });

  const throughPgbouncer = Boolean(PGBOUNCER_URL && POSTGRES_URL);
  describe.skipIf(!throughPgbouncer)("PostgreSQL through pgbouncer, transaction pooling (TEST_PGBOUNCER_URL)", () => {
    // A session setting would not survive transaction pooling, so no schema per test: the block has
    // a database of its own, emptied of our tables before each test as PGlite's is (a CREATE and a
    // DROP DATABASE per test cost ~0.4 s each on this machine's disk).
    let admin: SqlClient;
    let owner: SqlClient | undefined;
    const database = `bouncer_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    let clients: SqlClient[] = [];
    const connect = () => {
      const url = new URL(PGBOUNCER_URL);
      url.pathname = `/${database}`;
      const client = connectPostgres(url.toString(), { maxConnections: 2, transactionPooler: true });
      clients.push(client);
      return client;
    };
    const kept: { snapshot?: MigratedSnapshot } = {};
    const db: TestDatabase = {
      migrated: (space, options) =>
        migratedFromKept(kept, space, options, {
          open: async () => connect(),
          renew: () => db.fresh(),
        }),
      async fresh() {
        kept.snapshot = undefined;
        if (!owner) {
          await admin.query(`CREATE DATABASE ${database}`);
          const url = new URL(POSTGRES_URL);
          url.pathname = `/${database}`;
          owner = connectPostgres(url.toString(), { maxConnections: 1 });
          await owner.query("CREATE EXTENSION IF NOT EXISTS vector");
          await owner.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
        }
        await owner.query(DROP_OUR_TABLES);
        return connect();
      },
      async another() {
        return connect();
      },
      async cleanup() {
        await Promise.all(clients.map((client) => client.close()));
        clients = [];
      },
    };
    blockHooks(!throughPgbouncer, {
      async beforeAll() {
        admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
      },
      async afterAll() {
        await owner?.close();
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.close();
      },
    });
    afterEach(() => db.cleanup());
    tests(db, "postgres", "pooler");
  });
}

/**
 * A schema of its own on TEST_DATABASE_URL's server, for a service started on it: `url` is the
 * server's URL with the schema first in its search_path (as DATABASE_URL); `drop` removes the schema
 * and everything in it, once whatever used it has closed.
 */
export async function schemaOfItsOwn(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.close();
  }
  return {
    url: urlOfSchema(schema),
    async drop() {
      const owner = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
      try {
        await owner.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await owner.close();
      }
    },
  };
}

/** TEST_DATABASE_URL with `schema` first in its search_path (pgvector and pg_trgm stay in public). */
function urlOfSchema(schema: string): string {
  const url = new URL(POSTGRES_URL);
  url.searchParams.set("search_path", `${schema},public`);
  return url.toString();
}
