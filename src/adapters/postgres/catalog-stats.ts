import type { SqlClient } from "./sql-client.ts";

/** How many products the catalogue holds (the products gauge, counted when metrics are scraped). */
export async function countProducts(db: SqlClient): Promise<number> {
  const [row] = await db.query<{ n: number | string }>("SELECT count(*) AS n FROM products");
  return Number(row?.n ?? 0);
}
