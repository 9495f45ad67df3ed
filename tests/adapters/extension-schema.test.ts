/**
 * A PostgreSQL database whose extensions live in a schema of their own, outside the connection's
 * search_path (as some hosted PostgreSQL keep them): the schema is not applied, and the error says
 * which extension, where, and what to do; with that schema on the search_path it is applied.
 */
import { describe, expect, test } from "bun:test";
import { ExtensionOutOfReach, prepareDatabase } from "../../src/adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

const SPACE = { model: "test", dimension: 4 };
const database = `extensions_${process.pid}`;

describe.skipIf(!POSTGRES_URL)("extensions outside the search_path (TEST_DATABASE_URL)", () => {
  let admin: SqlClient;
  const urlOf = (searchPath?: string) => {
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${database}`;
    url.search = searchPath ? `?search_path=${encodeURIComponent(searchPath)}` : "";
    return url.toString();
  };
  /** A new database with `vector` and `pg_trgm` installed in the given schemas. */
  async function databaseWith(schemas: { vector: string; pg_trgm?: string }): Promise<void> {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${database}`);
    const owner = connectPostgres(urlOf(), { maxConnections: 1 });
    try {
      await owner.query("CREATE SCHEMA extensions");
      await owner.query(`CREATE EXTENSION vector SCHEMA ${schemas.vector}`);
      if (schemas.pg_trgm) await owner.query(`CREATE EXTENSION pg_trgm SCHEMA ${schemas.pg_trgm}`);
    } finally {
      await owner.close();
    }
  }
  async function tables(): Promise<string[]> {
    const db = connectPostgres(urlOf(), { maxConnections: 1 });
    try {
      const rows = await db.query<{ name: string }>(
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
      );
      return rows.map((row) => row.name);
    } finally {
      await db.close();
    }
  }

  blockHooks(!POSTGRES_URL, {
    async beforeAll() {
      admin = connectPostgres(POSTGRES_URL, { maxConnections: 1 });
    },
    async afterAll() {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.close();
    },
  });

  test("vector in a schema off the search_path: nothing is applied, and the error names it, its schema and the remedies", async () => {
    await databaseWith({ vector: "extensions" });
    const db = connectPostgres(urlOf(), { maxConnections: 1 });
    try {
      const applying = prepareDatabase(db, SPACE);
      await expect(applying).rejects.toBeInstanceOf(ExtensionOutOfReach);
      await expect(applying).rejects.toMatchObject({ extension: "vector", schema: "extensions" });
      await expect(applying).rejects.toThrow(/search_path=public,extensions.*ALTER EXTENSION vector SET SCHEMA public/);
    } finally {
      await db.close();
    }
    expect(await tables()).toEqual([]);
    // The remedy the message gives: that schema on the connection's search_path.
    const reaching = connectPostgres(urlOf("public,extensions"), { maxConnections: 1 });
    try {
      await prepareDatabase(reaching, SPACE);
      expect(await reaching.query("SELECT '[1,0,0,0]'::vector <=> '[0,1,0,0]'::vector AS distance")).toEqual([
        { distance: 1 },
      ]);
    } finally {
      await reaching.close();
    }
    expect(await tables()).toContain("schema_migrations");
  });

  test("pg_trgm there while vector is on the search_path: refused alike, naming pg_trgm", async () => {
    await databaseWith({ vector: "public", pg_trgm: "extensions" });
    const db = connectPostgres(urlOf(), { maxConnections: 1 });
    try {
      await expect(prepareDatabase(db, SPACE)).rejects.toMatchObject({ extension: "pg_trgm", schema: "extensions" });
    } finally {
      await db.close();
    }
    expect(await tables()).toEqual([]);
  });
});
