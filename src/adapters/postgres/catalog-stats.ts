import type { SqlClient } from "./sql-client.ts";

/** How many products each catalogue holds (the products gauge, counted when metrics are scraped). */
export async function countProducts(db: SqlClient): Promise<{ catalogue: string; products: number }[]> {
  const rows = await db.query<{ catalogue: string; products: number | string }>(
    "SELECT catalogue, count(*) AS products FROM products GROUP BY catalogue",
  );
  return rows.map((row) => ({ catalogue: row.catalogue, products: Number(row.products) }));
}
