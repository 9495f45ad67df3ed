import { type Attributes, hasAttributes } from "../../domain/attributes.ts";
import type { Vector } from "../../domain/vector.ts";
import type { EmbeddingSpace, EmbeddingSpaceStore, ProductText, StagedVector } from "../../ports/embedding-space.ts";
import { encodeCopyRows } from "./binary-copy.ts";
import {
  addInRowCopies,
  defineWordsView,
  EMBEDDED_TEXT_DIGEST_SQL,
  NOT_ZERO_CHECK,
  SCHEMA_LOCK_KEY,
} from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

interface ProductTextRow {
  id: number | string;
  name: string;
  category: string;
  description: string;
  attributes: Attributes | string | null;
  embedded_attributes: string[] | null;
  text_digest: string;
}

/**
 * A product whose staged vector is missing or was made from another text than its current one (the
 * digest of its text now, not the stored one: that is of the text its live vector was made from).
 */
const UNSTAGED = `(embedding_next IS NULL OR embedding_next_digest IS DISTINCT FROM ${EMBEDDED_TEXT_DIGEST_SQL})`;

/**
 * The EmbeddingSpaceStore port over PostgreSQL or PGlite. The staged vectors live in two columns of
 * `products` that search never reads, `embedding_next` (of the new dimension) and
 * `embedding_next_digest`, added when a staging begins; `embedding_staging` records which space they
 * are for, so an interrupted re-embed resumes only for that same model and dimension. The switch is
 * one transaction under the schema's advisory lock (so no migration runs meanwhile), with inserts and
 * updates held by a table lock: the staged column takes the place of `embedding`.
 */
export class SqlEmbeddingSpace implements EmbeddingSpaceStore {
  constructor(private readonly db: SqlClient) {}

  async current(): Promise<EmbeddingSpace> {
    const [row] = await this.db.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
    if (!row) throw new Error("embedding_space is empty: the schema was altered by hand");
    return { model: row.model, dimension: Number(row.dimension) };
  }

  async beginStaging(space: EmbeddingSpace): Promise<{ staged: number; total: number }> {
    return this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
      const [record] = await tx.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_staging");
      const sameSpace = record?.model === space.model && Number(record.dimension) === space.dimension;
      if (!sameSpace) {
        await dropStaging(tx);
        await tx.query(
          `ALTER TABLE products ADD COLUMN embedding_next vector(${space.dimension}), ADD COLUMN embedding_next_digest text`,
        );
        await tx.query("INSERT INTO embedding_staging (model, dimension) VALUES ($1, $2)", [
          space.model,
          space.dimension,
        ]);
      }
      const [counts] = await tx.query<{ staged: number | string; total: number | string }>(
        `SELECT count(*) FILTER (WHERE NOT ${UNSTAGED}) AS staged, count(*) AS total FROM products`,
      );
      return { staged: Number(counts?.staged ?? 0), total: Number(counts?.total ?? 0) };
    });
  }

  async unstaged(afterId: number, limit: number): Promise<ProductText[]> {
    return unstagedIn(this.db, afterId, limit);
  }

  async stage(vectors: readonly StagedVector[]): Promise<void> {
    if (vectors.length === 0) return;
    const dimension = (vectors[0] as StagedVector).vector.length;
    await this.db.transaction((tx) => writeStaged(tx, vectors, dimension));
  }

  async switchTo(
    space: EmbeddingSpace,
    embedRest: (products: readonly ProductText[]) => Promise<Vector[]>,
  ): Promise<{ products: number }> {
    const result = await this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
      const [record] = await tx.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_staging");
      if (record?.model !== space.model || Number(record.dimension) !== space.dimension) {
        throw new Error(`no staging for ${space.model} (${space.dimension} dimensions) to switch to`);
      }
      // From here inserts and updates wait for the commit; reads wait only during the swap itself.
      await tx.query("LOCK TABLE products IN SHARE ROW EXCLUSIVE MODE");
      for (let afterId = 0; ; ) {
        const rest = await unstagedIn(tx, afterId, 256);
        if (rest.length === 0) break;
        const vectors = await embedRest(rest);
        await writeStaged(
          tx,
          rest.map(({ id, contentDigest }, i) => ({ id, contentDigest, vector: vectors[i] as Vector })),
          space.dimension,
        );
        afterId = (rest.at(-1) as ProductText).id;
      }
      // Each product's digest is now that of the text its new vector was made from.
      await tx.query("UPDATE products SET content_digest = embedding_next_digest");
      // CASCADE: the half-precision copy and the bits, when there are, go with the column they are
      // made from, and the vector indexes and CATALOGUE_WORDS_VIEW with them.
      await tx.query("ALTER TABLE products DROP COLUMN embedding CASCADE");
      await tx.query("ALTER TABLE products DROP COLUMN embedding_next_digest");
      await tx.query("ALTER TABLE products RENAME COLUMN embedding_next TO embedding");
      await tx.query("ALTER TABLE products ALTER COLUMN embedding SET NOT NULL");
      await tx.query(`ALTER TABLE products ADD ${NOT_ZERO_CHECK}`);
      await addInRowCopies(tx, space.dimension);
      await defineWordsView(tx); // dropped with `embedding`: the filtered searches rank by its columns
      await tx.query("UPDATE embedding_space SET model = $1, dimension = $2", [space.model, space.dimension]);
      await tx.query("DELETE FROM embedding_staging");
      const [after] = await tx.query<{ n: number | string }>("SELECT count(*) AS n FROM products");
      return { products: Number(after?.n ?? 0) };
    });
    // Every row was rewritten at least once: give the space back, so scans do not read dead rows.
    await this.db.query("VACUUM FULL products").catch(() => {});
    return result;
  }

  async abandonStaging(): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
      await dropStaging(tx);
    });
  }
}

async function dropStaging(tx: SqlClient): Promise<void> {
  await tx.query(
    "ALTER TABLE products DROP COLUMN IF EXISTS embedding_next, DROP COLUMN IF EXISTS embedding_next_digest",
  );
  await tx.query("DELETE FROM embedding_staging");
}

async function unstagedIn(db: SqlClient, afterId: number, limit: number): Promise<ProductText[]> {
  const rows = await db.query<ProductTextRow>(
    `SELECT id, name, category, description, attributes,
       (SELECT c.embedded_attributes FROM catalogues c WHERE c.name = products.catalogue) AS embedded_attributes,
       ${EMBEDDED_TEXT_DIGEST_SQL} AS text_digest
     FROM products WHERE id > $1 AND ${UNSTAGED} ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
  return rows.map((row) => {
    const attributes = typeof row.attributes === "string" ? (JSON.parse(row.attributes) as Attributes) : row.attributes;
    return {
      id: Number(row.id),
      name: row.name,
      category: row.category,
      description: row.description,
      ...(hasAttributes(attributes) ? { attributes } : {}),
      embeddedAttributes: [...(row.embedded_attributes ?? [])],
      contentDigest: row.text_digest,
    };
  });
}

/** Writes staged vectors with binary COPY into a temporary table and one UPDATE (a vector as text costs more to parse than to store). */
async function writeStaged(tx: SqlClient, vectors: readonly StagedVector[], dimension: number): Promise<void> {
  await tx.query(
    `CREATE TEMPORARY TABLE staged_vectors (id bigint NOT NULL, digest text NOT NULL, embedding vector(${dimension}) NOT NULL)
     ON COMMIT DROP`,
  );
  await tx.copyIn(
    "staged_vectors",
    ["id", "digest", "embedding"],
    encodeCopyRows(vectors.map(({ id, contentDigest, vector }) => [{ int8: id }, { text: contentDigest }, { vector }])),
  );
  await tx.query(
    `UPDATE products p SET embedding_next = s.embedding, embedding_next_digest = s.digest
     FROM staged_vectors s WHERE p.id = s.id`,
  );
  await tx.query("DROP TABLE staged_vectors");
}
