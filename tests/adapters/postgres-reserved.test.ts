/**
 * `reserved` on a PostgreSQL server (TEST_DATABASE_URL) when every connection of the pool is in use:
 * a wait for one that outlasts the client's query timeout fails (DatabaseUnavailable), and the
 * connection it was waiting for, once it comes, goes back to the pool instead of staying held.
 */
import { describe, expect, test } from "bun:test";
import { connectPostgres } from "../../src/adapters/postgres/sql-client.ts";
import { DatabaseUnavailable } from "../../src/domain/errors.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

describe.skipIf(!POSTGRES_URL)("reserved connections (TEST_DATABASE_URL)", () => {
  test("a wait for a connection that times out leaves none held: the pool serves the next statement", async () => {
    const db = connectPostgres(POSTGRES_URL, { maxConnections: 1, queryTimeoutMs: 1500 });
    const reserved = db.reserved as NonNullable<typeof db.reserved>;
    try {
      // The pool's one connection, held until the gate opens.
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      let holding = () => {};
      const held = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const holder = reserved(async (connection) => {
        await connection.query("SELECT 1");
        holding();
        await gate;
      });
      await held;
      // No connection within the 1.5 s: refused, as the service refuses a database that does not answer.
      const waiting = reserved((connection) => connection.query("SELECT 2"));
      await expect(waiting).rejects.toBeInstanceOf(DatabaseUnavailable);
      open();
      await holder;
      // The connection the refused wait got afterwards is back in the pool: this statement has it
      // (held by nobody, it was never released, and this statement timed out waiting for it).
      expect(await db.query<{ three: number }>("SELECT 3 AS three")).toEqual([{ three: 3 }]);
    } finally {
      await db.close();
    }
  });
});
