import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";

/**
 * The sizes of the values PostgreSQL stores out of `table`'s rows (in its TOAST table), one a value,
 * smallest first: what a row did not keep (a `vector` of D dimensions is 4 + 4 × D bytes there, its
 * length word staying in the row).
 */
export async function outOfRowValues(db: SqlClient, table: string): Promise<number[]> {
  const [toast] = await db.query<{ name: string }>(
    "SELECT reltoastrelid::regclass::text AS name FROM pg_class WHERE oid = $1::regclass",
    [table],
  );
  const values = await db.query<{ bytes: number | string }>(
    `SELECT sum(length(chunk_data)) AS bytes FROM ${toast?.name} GROUP BY chunk_id ORDER BY bytes`,
  );
  return values.map((value) => Number(value.bytes));
}
