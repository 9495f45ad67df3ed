import type { NewProduct, Product, ScoredProduct } from "../../domain/product.ts";
import type { Vector } from "../../domain/vector.ts";
import type { ProductRepository } from "../../ports/product-repository.ts";
import { HALF_PRECISION_COPY_FROM_DIMENSION, vectorParam } from "./schema.ts";
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
 * Search is exact, with no index: it compares the query with every product, as the spec says.
 * - Up to HALF_PRECISION_COPY_FROM_DIMENSION dimensions (the offline model's 384) it scans the
 *   `vector` column: bench/search.ts measured p95 ≈ 24 ms (PostgreSQL) / ≈ 29 ms (PGlite) at 12,430 products.
 * - Longer vectors are stored out of the row, so it scans the in-row half-precision copy
 *   (`embedding_half`) for the best candidates, several times more than asked, and ranks those by
 *   the exact cosine of the full vectors. Half precision moves a cosine by about 1e-5, far less
 *   than the gap the extra candidates cover, so the ranking and the scores are those of the full
 *   vectors. At 3072 dimensions and 12,430 products: p95 45 ms on PostgreSQL (150 ms scanning the
 *   out-of-row vectors); PGlite stays at ≈ 290 ms either way (half precision is slow in WASM).
 */
export class PostgresProductRepository implements ProductRepository {
  private readonly scansHalfCopy: boolean;

  /** `dimension`: that of the stored embeddings (it decides how search scans). */
  constructor(
    private readonly db: SqlClient,
    dimension: number,
  ) {
    this.scansHalfCopy = dimension >= HALF_PRECISION_COPY_FROM_DIMENSION;
  }

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
    const query = vectorParam(embedding);
    const rows = this.scansHalfCopy
      ? await this.db.query<ProductRow & { distance: number }>(
          `SELECT id, name, description, category, embedding <=> $1::vector AS distance
           FROM (
             SELECT id, name, description, category, embedding
             FROM products
             ORDER BY embedding_half <=> $1::vector::halfvec, id
             LIMIT $3
           ) AS candidates
           ORDER BY distance, id
           LIMIT $2`,
          [query, limit, candidatesFor(limit)],
        )
      : await this.db.query<ProductRow & { distance: number }>(
          `SELECT id, name, description, category, embedding <=> $1::vector AS distance
           FROM products
           ORDER BY distance, id
           LIMIT $2`,
          [query, limit],
        );
    return rows.map((row) => ({ ...toProduct(row), score: 1 - Number(row.distance) }));
  }
}

/** Candidates taken from the half-precision scan to re-rank exactly: 4× the limit, at least 40. */
function candidatesFor(limit: number): number {
  return Math.max(40, 4 * limit);
}

function toProduct(row: ProductRow): Product {
  return { id: Number(row.id), name: row.name, description: row.description, category: row.category };
}
