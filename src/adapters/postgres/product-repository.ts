import type { NewProduct, Product, ScoredProduct } from "../../domain/product.ts";
import type { Vector } from "../../domain/vector.ts";
import type { ProductRepository } from "../../ports/product-repository.ts";
import { vectorParam } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

interface ProductRow {
  id: number | string | bigint;
  name: string;
  description: string;
  category: string;
}

/**
 * Products over PostgreSQL or PGlite.
 *
 * Search is an exact cosine scan of the `vector` column, with no index: it compares the query with
 * every product, as the spec says, and its recall is perfect. bench/search.ts measured it at 12,430
 * products: with 384 dimensions (the offline model) p95 ≈ 24 ms on PostgreSQL and ≈ 29 ms on PGlite,
 * which needs no index. With 3072 dimensions each vector (12 kB) is stored out of line (TOAST) and
 * the scan reaches p95 ≈ 150 ms (PostgreSQL) / ≈ 280 ms (PGlite): the 3072-d providers need in-row
 * `halfvec` storage or an HNSW index on `embedding::halfvec(3072)`.
 */
export class PostgresProductRepository implements ProductRepository {
  constructor(private readonly db: SqlClient) {}

  async add(product: NewProduct, embedding: Vector): Promise<Product> {
    const [row] = await this.db.query<ProductRow>(
      `INSERT INTO products (name, description, category, embedding)
       VALUES ($1, $2, $3, $4::vector)
       RETURNING id, name, description, category`,
      [product.name, product.description, product.category, vectorParam(embedding)],
    );
    if (!row) throw new Error("INSERT ... RETURNING returned no row");
    return toProduct(row);
  }

  async searchByVector(embedding: Vector, limit: number): Promise<ScoredProduct[]> {
    const rows = await this.db.query<ProductRow & { distance: number }>(
      `SELECT id, name, description, category, embedding <=> $1::vector AS distance
       FROM products
       ORDER BY distance, id
       LIMIT $2`,
      [vectorParam(embedding), limit],
    );
    return rows.map((row) => ({ ...toProduct(row), score: 1 - Number(row.distance) }));
  }
}

function toProduct(row: ProductRow): Product {
  return { id: Number(row.id), name: row.name, description: row.description, category: row.category };
}
