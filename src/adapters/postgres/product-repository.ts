import type { NewProduct, Product, ScoredProduct } from "../../domain/product.ts";
import type { Vector } from "../../domain/vector.ts";
import type {
  AddResult,
  IdempotencyRecord,
  IdempotentAnswer,
  ProductRepository,
} from "../../ports/product-repository.ts";
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

  async add(product: NewProduct, embedding: Vector, idempotency?: IdempotencyRecord): Promise<AddResult> {
    const insert = async (db: SqlClient) => {
      const [row] = await db.query<ProductRow>(
        `INSERT INTO products (name, description, category, embedding)
         VALUES ($1, $2, $3, $4::vector)
         RETURNING id, name, description, category`,
        [product.name, product.description, product.category, vectorParam(embedding)],
      );
      if (!row) throw new Error("INSERT ... RETURNING returned no row");
      return toProduct(row);
    };
    if (!idempotency) return { created: await insert(this.db) };

    const { userId, key, fingerprint, ttlHours } = idempotency;
    const created = await this.db
      .transaction(async (tx) => {
        const stored = await insert(tx);
        // A record of the key younger than its ttl wins: then this transaction stores nothing. Two
        // creates with one key wait for each other on the primary key, so only one product is kept.
        const recorded = await tx.query(
          `INSERT INTO idempotency_keys (user_id, key, fingerprint, product_id, response)
           VALUES ($1, $2, $3, $4, $5::jsonb)
           ON CONFLICT (user_id, key) DO UPDATE
             SET fingerprint = EXCLUDED.fingerprint, product_id = EXCLUDED.product_id,
                 response = EXCLUDED.response, created_at = now()
             WHERE idempotency_keys.created_at <= now() - make_interval(hours => $6)
           RETURNING key`,
          [userId, key, fingerprint, stored.id, JSON.stringify(stored), ttlHours],
        );
        if (recorded.length === 0) throw KEY_ALREADY_ANSWERED;
        return stored;
      })
      .catch((error) => {
        if (error === KEY_ALREADY_ANSWERED) return null;
        throw error;
      });
    if (created) return { created };
    const earlier = await this.findIdempotentAnswer(userId, key, ttlHours);
    if (!earlier) throw new Error(`idempotency key ${JSON.stringify(key)} was answered, then vanished`);
    return { alreadyAnswered: earlier };
  }

  async findIdempotentAnswer(userId: number, key: string, ttlHours: number): Promise<IdempotentAnswer | null> {
    const [row] = await this.db.query<{ fingerprint: string; response: ProductRow | string }>(
      `SELECT fingerprint, response FROM idempotency_keys
       WHERE user_id = $1 AND key = $2 AND created_at > now() - make_interval(hours => $3)`,
      [userId, key, ttlHours],
    );
    if (!row) return null;
    // postgres.js parses jsonb; PGlite too, but a text cast would not be: accept both.
    const response = typeof row.response === "string" ? (JSON.parse(row.response) as ProductRow) : row.response;
    return { fingerprint: row.fingerprint, product: toProduct(response) };
  }

  async pruneIdempotencyKeys(ttlHours: number): Promise<number> {
    const rows = await this.db.query(
      "DELETE FROM idempotency_keys WHERE created_at <= now() - make_interval(hours => $1) RETURNING key",
      [ttlHours],
    );
    return rows.length;
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

/** Thrown inside the transaction to roll it back when the idempotency key already has its answer. */
const KEY_ALREADY_ANSWERED = Symbol("idempotency key already answered");

/** Candidates taken from the half-precision scan to re-rank exactly: 4× the limit, at least 40. */
function candidatesFor(limit: number): number {
  return Math.max(40, 4 * limit);
}

function toProduct(row: ProductRow): Product {
  return { id: Number(row.id), name: row.name, description: row.description, category: row.category };
}
