import type { AttributeCondition } from "../../domain/attribute-filter.ts";
import { type Attributes, hasAttributes, sortedKeys } from "../../domain/attributes.ts";
import { CatalogueNotFound, EmbeddingSpaceChanged } from "../../domain/errors.ts";
import { publicView } from "../../domain/manage-products.ts";
import type { HybridCandidate, Product, StoredProduct, VersionedHit } from "../../domain/product.ts";
import type { Vector } from "../../domain/vector.ts";
import type { EmbeddingSpace } from "../../ports/embedding-space.ts";
import type {
  AddResult,
  BulkWrite,
  BulkWriteOutcome,
  EmbeddedProduct,
  ExportedProduct,
  HybridQuery,
  IdempotencyRecord,
  IdempotentAnswer,
  LexicalQuery,
  ListQuery,
  ProductCatalogues,
  ProductPage,
  ProductRepository,
  ProductUpdate,
  SearchQuery,
  UpdateResult,
} from "../../ports/product-repository.ts";
import { type CopyField, decodeVector, encodeCopyRows } from "./binary-copy.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import {
  attributeNumberSql,
  BINARY_QUANTIZED_COLUMN,
  CATALOGUE_ROLE,
  CATALOGUE_SETTING,
  CATALOGUE_VOCABULARY_VIEW,
  CATALOGUE_WORDS_VIEW,
  cataloguePartition,
  HALF_PRECISION_COPY_FROM_DIMENSION,
  INDEXED_NUMBER_ATTRIBUTES,
  TEXT_SEARCH_CONFIGS,
  vectorParam,
} from "./schema.ts";
import { HalfVectorParameter, type SqlClient } from "./sql-client.ts";
import { type IndexesInUse, probesFor, reranked, type SearchIndex, type VectorSearchSettings } from "./vector-index.ts";

/**
 * The space of the vectors a repository stores (the embedder's): `changed` hears of the space the
 * catalogue was found in when it is another (the service then refuses searches too).
 */
export interface SpaceOfWrites {
  model: string;
  dimension: number;
  changed?: (stored: EmbeddingSpace) => void;
}

interface ProductRow {
  id: number | string | bigint;
  name: string;
  description: string;
  category: string;
  sku: string | null;
  /** jsonb: postgres.js and PGlite parse it; a text cast would not be (both accepted). */
  attributes: Attributes | string | null;
}

interface StoredRow extends ProductRow {
  content_digest: string;
  version: number;
}

const PRODUCT_COLUMNS = "id, name, description, category, sku, attributes";
const STORED_COLUMNS = `${PRODUCT_COLUMNS}, content_digest, version`;
const UNIQUE_VIOLATION = "23505";
/** pgvector's errors for a vector of the wrong dimension ("expected 384 dimensions, not 32", "different vector dimensions"). */
const DATA_EXCEPTION = "22000";

/** LEXICAL_RANK_MAX_ROWS by default: README "Hybrid search at 1,000,000" measured 2,000 against 4,000. */
export const DEFAULT_LEXICAL_RANK_MAX_ROWS = 2_000;

/**
 * Filters matching up to this many products are scanned exactly (VECTOR_FILTER_EXACT_MAX_ROWS), an
 * HNSW scan's candidate list (VECTOR_EF_SEARCH), the lists an IVFFlat scan reads (VECTOR_IVF_PROBES),
 * the candidates of a binary-quantized index re-ranked by their half-precision cosine
 * (VECTOR_RERANK_DEPTH): bench/scale.ts measured them; and the matches a lexical side ranks.
 */
export const DEFAULT_SEARCH_PLAN: VectorSearchSettings = {
  filterExactMaxRows: 30_000,
  filterFarExactMaxRows: 300_000,
  efSearch: 100,
  probes: "auto",
  rerankDepth: 40,
  lexicalRankMaxRows: DEFAULT_LEXICAL_RANK_MAX_ROWS,
};

/**
 * A lexical or hybrid search first reads up to lexicalRankMaxRows + 1 of the products matching any
 * word of the query, to rank them all when that is every one (hybridCandidates), in a catalogue of
 * at most this many times lexicalRankMaxRows products: there a query matching no more than that
 * has exactly the candidates of ranking every match (on the eval catalogue, 12,430 products, 39 of
 * the 40 dev queries, and the eval's figures, as before stop 41). Past it, a query's common words
 * match more, and the scan would only cost: tried at 1,000,000 products, it took the p50 of the dev
 * queries' candidates from 43 to 72 to 80 ms (limit 4,000).
 */
const LEXICAL_ANY_WORD_FACTOR = 10;

/**
 * Products over PostgreSQL or PGlite, each catalogue's in a partition of `products` of its own
 * (schema.ts, migration 16): `in(catalogue)` gives one catalogue's repository.
 *
 * Isolation has two walls. Every statement names its catalogue (`catalogue = $n`), which also
 * lets the planner read that catalogue's partition alone. And every statement runs inside the
 * catalogue (inCatalogue): in a transaction as CATALOGUE_ROLE, whose row-level security policy lets
 * it see and write only rows of the catalogue CATALOGUE_SETTING names for that transaction, so a
 * statement that forgot its condition would still find nothing of another catalogue. Entering it
 * checks that the catalogue exists (CatalogueNotFound otherwise), in the same statement. It costs a
 * transaction per read: BEGIN, that statement, COMMIT (bench/catalogues.ts measures it).
 *
 * Search takes candidates, several times more than asked, nearest to the query by one column, and
 * ranks those by the exact cosine of the full vectors, so the scores are always exact:
 * - Up to HALF_PRECISION_COPY_FROM_DIMENSION dimensions (the offline model's 384) that column is
 *   `embedding` itself.
 * - Longer vectors are stored out of the row, so it is the in-row half-precision copy
 *   (`embedding_half`). Half precision moves a cosine by about 1e-5, far less than the gap the
 *   extra candidates cover. Scanning it at 3072 dimensions and 12,430 products: p95 45 ms on
 *   PostgreSQL (150 ms scanning the out-of-row vectors).
 * The candidates come from the catalogue's vector index once it has one (vector-index.ts), else
 * from an exact scan; filtered searches choose by the filter's size (denseCandidates). An HNSW index
 * on that column serves the same query (the planner picks it); a binary-quantized one has a query of
 * its own: its Hamming-nearest candidates, re-ranked by that column first.
 *
 * Bulk writes go in by binary COPY (a vector as text would cost more to parse than to store): new
 * products straight into the catalogue's partition, a mix with updates through a temporary table
 * (writeMany).
 *
 * With a read pool (DATABASE_READ_URL), reads and searches go there; writes, and the reads a write
 * depends on (idempotency records, the products an import or an update writes over), go to the
 * primary, and each committed write is reported (`wrote`) for read-your-writes.
 *
 * Given the embedding space its vectors are of (`writesInSpace`: the embedder's), every product
 * write stores only while the catalogue is in that space, checked by the write itself: a process
 * whose model the catalogue has been moved away from (a `reembed` run elsewhere) stores nothing
 * and gets EmbeddingSpaceChanged. The check is in the writing statement (`EXISTS` on
 * `embedding_space`), and a statement takes its table locks before its snapshot; the re-embed's
 * switch holds a lock on `products` that every write waits for, from before it embeds what was
 * written meanwhile to its commit. So a write that embedded with the old model and commits after
 * the switch finds the new space and stores nothing, and one that committed before is embedded
 * again by the switch. (A batch takes that lock first, explicitly, then checks.)
 */
export class PostgresProducts implements ProductCatalogues {
  private readonly settings: RepositorySettings;

  /**
   * `dimension`: that of the stored embeddings (it decides how search scans); `search`: how filtered
   * searches choose their plan, the session's hnsw.ef_search, the probes and the re-rank depth
   * (vector-index.ts); `writesInSpace`: the space of the vectors this repository is given to store
   * (none: writes are not checked); `indexesInUse`: which vector index each catalogue has (unset:
   * none is known, and a large filter's search is one scan ordered by the distance);
   * `insideTransaction`: `db` is a transaction's client (the import jobs' commit), which goes on
   * after the products' statements: each leaves the catalogue's role and setting as it found them.
   */
  constructor(
    db: SqlClient | ReadWriteClients,
    dimension: number,
    search: VectorSearchSettings = DEFAULT_SEARCH_PLAN,
    writesInSpace?: SpaceOfWrites,
    options: { insideTransaction?: boolean; indexesInUse?: IndexesInUse | undefined } = {},
  ) {
    this.settings = {
      pools: poolsOf(db),
      dimension,
      scansHalfCopy: dimension >= HALF_PRECISION_COPY_FROM_DIMENSION,
      search,
      writesInSpace,
      insideTransaction: options.insideTransaction === true,
      indexesInUse: options.indexesInUse,
      indexedNumbers: new Set([...INDEXED_NUMBER_ATTRIBUTES, ...(search.indexedNumberAttributes ?? [])]),
    };
  }

  in(catalogue: string): PostgresProductRepository {
    return new PostgresProductRepository(this.settings, catalogue);
  }
}

/** What every catalogue's repository of one PostgresProducts shares. */
interface RepositorySettings {
  pools: ReadWriteClients;
  dimension: number;
  scansHalfCopy: boolean;
  search: VectorSearchSettings;
  writesInSpace: SpaceOfWrites | undefined;
  insideTransaction: boolean;
  indexesInUse: IndexesInUse | undefined;
  /** The number attributes with an index of their own: `price`, and the search settings' indexedNumberAttributes. */
  indexedNumbers: ReadonlySet<string>;
}

/** The catalogue a transaction entered: its partition of `products` (schema.ts). */
interface Entered {
  partition: string;
}

/** One catalogue's products (see PostgresProducts). */
export class PostgresProductRepository implements ProductRepository {
  private readonly scansHalfCopy: boolean;
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;
  private readonly pools: ReadWriteClients;
  private readonly dimension: number;
  private readonly search: VectorSearchSettings;
  private readonly writesInSpace: SpaceOfWrites | undefined;

  constructor(
    private readonly settings: RepositorySettings,
    readonly catalogue: string,
  ) {
    ({
      pools: this.pools,
      dimension: this.dimension,
      scansHalfCopy: this.scansHalfCopy,
      search: this.search,
      writesInSpace: this.writesInSpace,
    } = settings);
    this.reads = this.pools.reads;
    this.writes = this.pools.writes;
  }

  /**
   * Runs `statements` inside the catalogue: in a transaction (a savepoint within one) whose
   * statements run as CATALOGUE_ROLE with CATALOGUE_SETTING naming this catalogue, so that row-level
   * security refuses every row of another (schema.ts). The same statement checks that the catalogue
   * exists: CatalogueNotFound when it does not (or no longer does).
   */
  private inCatalogue<T>(db: SqlClient, statements: (tx: SqlClient, entered: Entered) => Promise<T>): Promise<T> {
    return db.transaction(async (tx) => {
      const [entered] = await tx.query<{ id: number }>(
        `SELECT id, set_config('${CATALOGUE_SETTING}', name, true), set_config('role', '${CATALOGUE_ROLE}', true)
         FROM catalogues WHERE name = $1`,
        [this.catalogue],
      );
      if (!entered) throw new CatalogueNotFound(this.catalogue);
      const result = await statements(tx, { partition: cataloguePartition(Number(entered.id)) });
      // SET LOCAL outlives a savepoint's release: give the enclosing transaction back as it was.
      if (this.settings.insideTransaction) {
        await tx.query(`SELECT set_config('role', 'none', true), set_config('${CATALOGUE_SETTING}', '', true)`);
      }
      return result;
    });
  }

  async add(
    { product, embedding, contentDigest }: EmbeddedProduct,
    idempotency?: IdempotencyRecord,
  ): Promise<AddResult> {
    const insert = async (db: SqlClient) => {
      const params: unknown[] = [
        this.catalogue,
        product.name,
        product.description,
        product.category,
        product.sku ?? null,
        contentDigest,
        vectorParam(embedding),
        attributesParam(product.attributes),
      ];
      const [row] = await db.query<ProductRow>(
        `INSERT INTO products (catalogue, name, description, category, sku, content_digest, embedding, attributes)
         SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::vector, $8::text::jsonb
         WHERE ${this.inSpace(params)}
         RETURNING ${PRODUCT_COLUMNS}`,
        params,
      );
      // No row without an error: the catalogue is in another space (no sku conflict is skipped here).
      if (!row) throw await this.spaceChangedOn(db);
      return toProduct(row);
    };
    try {
      const result = idempotency
        ? await this.addIdempotently(insert, idempotency)
        : { created: await this.inCatalogue(this.writes, insert) };
      await this.pools.wrote();
      return result;
    } catch (error) {
      if (isSkuViolation(error)) return { skuTaken: product.sku as string };
      await this.refuseIfWrongDimension(error);
      throw error;
    }
  }

  private async addIdempotently(
    insert: (db: SqlClient) => Promise<Product>,
    { owner, key, fingerprint, ttlHours }: IdempotencyRecord,
  ): Promise<AddResult> {
    const created = await this.inCatalogue(this.writes, async (tx) => {
      // The key is claimed before the product is stored: a concurrent create with the same key
      // waits here, on the key's primary key, until this transaction ends, then finds the answer
      // (or claims the key itself if this one rolled back). Stored first, the product made it wait
      // on the sku instead, and fail as skuTaken (issue 18: 9 × 409 where 8 replays were due).
      // A record younger than its ttl wins: then this transaction stores nothing. The claim's
      // product_id and response are placeholders no one else sees: they are set before commit.
      const claimed = await tx.query(
        `INSERT INTO idempotency_keys (owner, key, fingerprint, product_id, response)
         VALUES ($1, $2, $3, 0, 'null'::jsonb)
         ON CONFLICT (owner, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, created_at = now()
           WHERE idempotency_keys.created_at <= now() - make_interval(hours => $4)
         RETURNING key`,
        [owner, key, fingerprint, ttlHours],
      );
      if (claimed.length === 0) throw KEY_ALREADY_ANSWERED;
      const stored = await insert(tx);
      await tx.query(
        "UPDATE idempotency_keys SET product_id = $3, response = $4::jsonb WHERE owner = $1 AND key = $2",
        [owner, key, stored.id, JSON.stringify(stored)],
      );
      return stored;
    }).catch((error) => {
      if (error === KEY_ALREADY_ANSWERED) return null;
      throw error;
    });
    if (created) return { created };
    const earlier = await this.findIdempotentAnswer(owner, key, ttlHours);
    if (!earlier) throw new Error(`idempotency key ${JSON.stringify(key)} was answered, then vanished`);
    return { alreadyAnswered: earlier };
  }

  async findIdempotentAnswer(owner: string, key: string, ttlHours: number): Promise<IdempotentAnswer | null> {
    const [row] = await this.writes.query<{ fingerprint: string; response: ProductRow | string }>(
      `SELECT fingerprint, response FROM idempotency_keys
       WHERE owner = $1 AND key = $2 AND created_at > now() - make_interval(hours => $3)`,
      [owner, key, ttlHours],
    );
    if (!row) return null;
    // postgres.js parses jsonb; PGlite too, but a text cast would not be: accept both.
    const response = typeof row.response === "string" ? (JSON.parse(row.response) as ProductRow) : row.response;
    return { fingerprint: row.fingerprint, product: toProduct(response) };
  }

  async pruneIdempotencyKeys(ttlHours: number): Promise<number> {
    const rows = await this.writes.query(
      "DELETE FROM idempotency_keys WHERE created_at <= now() - make_interval(hours => $1) RETURNING key",
      [ttlHours],
    );
    return rows.length;
  }

  async get(id: number, options: { latest?: boolean } = {}): Promise<StoredProduct | null> {
    const db = options.latest ? this.writes : this.reads;
    const [row] = await this.inCatalogue(db, (tx) =>
      tx.query<StoredRow>(`SELECT ${STORED_COLUMNS} FROM products WHERE catalogue = $1 AND id = $2`, [
        this.catalogue,
        id,
      ]),
    );
    return row ? toStored(row) : null;
  }

  /**
   * A filtered list counts and pages its products' ids through CATALOGUE_WORDS_VIEW, where the
   * indexes serve the filter, and reads the page's products by id, under the policy (as a filtered
   * search's exact plan does: denseCandidates).
   */
  async list(query: ListQuery): Promise<ProductPage> {
    const params: unknown[] = [this.catalogue];
    const conditions: string[] = ["catalogue = $1"];
    const filter = rowFilter(params, query);
    if (filter) conditions.push(filter.sql);
    const source = filter ? CATALOGUE_WORDS_VIEW : "products";
    const counted = `SELECT count(*) AS n FROM ${source}${where(conditions)}`;
    const countParams = [...params];
    const ascending = query.order === "id";
    const order = `ORDER BY id ${ascending ? "ASC" : "DESC"}`;
    if (query.after !== undefined) {
      params.push(query.after);
      conditions.push(`id ${ascending ? ">" : "<"} $${params.length}`);
    }
    params.push(query.limit + 1);
    const page = filter
      ? `SELECT ${PRODUCT_COLUMNS} FROM products WHERE catalogue = $1 AND id = ANY(ARRAY(
           SELECT id FROM ${CATALOGUE_WORDS_VIEW}${where(conditions)} ${order} LIMIT $${params.length}
         )) ${order}`
      : `SELECT ${PRODUCT_COLUMNS} FROM products${where(conditions)} ${order} LIMIT $${params.length}`;
    const [count, rows] = await this.inCatalogue(
      this.reads,
      async (tx) =>
        [
          (await tx.query<{ n: number | string }>(counted, countParams))[0],
          await tx.query<ProductRow>(page, params),
        ] as const,
    );
    return {
      items: rows.slice(0, query.limit).map(toProduct),
      total: Number(count?.n ?? 0),
      more: rows.length > query.limit,
    };
  }

  async update(id: number, expectedVersion: number, { fields, embedding }: ProductUpdate): Promise<UpdateResult> {
    let rows: StoredRow[];
    const params: unknown[] = [
      id,
      expectedVersion,
      fields.name,
      fields.description,
      fields.category,
      fields.sku ?? null,
      embedding ? vectorParam(embedding.vector) : null,
      embedding?.contentDigest ?? null,
      this.catalogue,
      attributesParam(fields.attributes),
    ];
    try {
      rows = await this.inCatalogue(this.writes, (tx) =>
        tx.query<StoredRow>(
          `UPDATE products SET name = $3, description = $4, category = $5, sku = $6, attributes = $10::text::jsonb,
             embedding = COALESCE($7::vector, embedding), content_digest = COALESCE($8, content_digest),
             version = version + 1, updated_at = now()
           WHERE catalogue = $9 AND id = $1 AND version = $2 AND ${this.inSpace(params)}
           RETURNING ${STORED_COLUMNS}`,
          params,
        ),
      );
    } catch (error) {
      if (isSkuViolation(error)) return { skuTaken: fields.sku as string };
      await this.refuseIfWrongDimension(error);
      throw error;
    }
    const [row] = rows;
    if (row) {
      await this.pools.wrote();
      return { updated: toStored(row) };
    }
    await this.refuseIfSpaceChanged(this.writes);
    const [exists] = await this.inCatalogue(this.writes, (tx) =>
      tx.query("SELECT 1 FROM products WHERE catalogue = $1 AND id = $2", [this.catalogue, id]),
    );
    return exists ? { conflict: true } : { missing: true };
  }

  async remove(id: number): Promise<boolean> {
    const params: unknown[] = [this.catalogue, id];
    const deleted = await this.inCatalogue(this.writes, (tx) =>
      tx.query(
        `DELETE FROM products WHERE catalogue = $1 AND id = $2 AND ${this.inSpace(params)} RETURNING id`,
        params,
      ),
    );
    if (deleted.length === 0) {
      await this.refuseIfSpaceChanged(this.writes);
      return false;
    }
    await this.pools.wrote();
    return true;
  }

  /**
   * The condition that the catalogue is in `writesInSpace`, its model and dimension appended to
   * `params`; `true` when writes are not checked.
   */
  private inSpace(params: unknown[]): string {
    if (!this.writesInSpace) return "true";
    params.push(this.writesInSpace.model, this.writesInSpace.dimension);
    return `EXISTS (SELECT 1 FROM embedding_space WHERE model = $${params.length - 1}::text AND dimension = $${params.length}::integer)`;
  }

  /**
   * After a checked write failed: a vector of another dimension than the column's fails before the
   * check can say why (the statement is planned with the new column), so the space is looked at
   * (outside the write's transaction, which the error ended).
   */
  private async refuseIfWrongDimension(error: unknown): Promise<void> {
    if (this.writesInSpace && (error as { code?: unknown } | null)?.code === DATA_EXCEPTION) {
      await this.refuseIfSpaceChanged(this.writes);
    }
  }

  /** Throws EmbeddingSpaceChanged when the catalogue is no longer in `writesInSpace`. */
  private async refuseIfSpaceChanged(db: SqlClient): Promise<void> {
    if (!this.writesInSpace) return;
    const { model, dimension, changed } = this.writesInSpace;
    const [stored] = await db.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
    if (stored && (stored.model !== model || Number(stored.dimension) !== dimension)) {
      const found = { model: stored.model, dimension: Number(stored.dimension) };
      changed?.(found);
      throw new EmbeddingSpaceChanged(found, { model, dimension });
    }
  }

  /** The EmbeddingSpaceChanged a checked write that stored nothing stands for. */
  private async spaceChangedOn(db: SqlClient): Promise<Error> {
    try {
      await this.refuseIfSpaceChanged(db);
    } catch (error) {
      return error as Error;
    }
    return new Error("INSERT ... RETURNING returned no row, and the catalogue is in this repository's space");
  }

  async categories(): Promise<{ name: string; products: number }[]> {
    const rows = await this.inCatalogue(this.reads, (tx) =>
      tx.query<{ name: string; products: number | string }>(
        `SELECT category AS name, count(*) AS products FROM products WHERE catalogue = $1
         GROUP BY category ORDER BY count(*) DESC, category`,
        [this.catalogue],
      ),
    );
    return rows.map((row) => ({ name: row.name, products: Number(row.products) }));
  }

  async productsAfter(
    afterId: number,
    limit: number,
    { withEmbeddings }: { withEmbeddings: boolean },
  ): Promise<ExportedProduct[]> {
    // The vector in pgvector's binary format: each stored float4 as it is.
    const rows = await this.inCatalogue(this.reads, (tx) =>
      tx.query<ProductRow & { embedding?: Uint8Array }>(
        `SELECT ${PRODUCT_COLUMNS}${withEmbeddings ? ", vector_send(embedding) AS embedding" : ""}
         FROM products WHERE catalogue = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [this.catalogue, afterId, limit],
      ),
    );
    return rows.map((row) => {
      const product: ExportedProduct = toProduct(row);
      if (row.embedding !== undefined) product.embedding = decodeVector(row.embedding);
      return product;
    });
  }

  async storedAfter(afterId: number, limit: number): Promise<StoredProduct[]> {
    const rows = await this.inCatalogue(this.writes, (tx) =>
      tx.query<StoredRow>(
        `SELECT ${STORED_COLUMNS} FROM products WHERE catalogue = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [this.catalogue, afterId, limit],
      ),
    );
    return rows.map(toStored);
  }

  async embeddedAttributes(): Promise<string[]> {
    const [row] = await this.writes.query<{ embedded_attributes: string[] }>(
      "SELECT embedded_attributes FROM catalogues WHERE name = $1",
      [this.catalogue],
    );
    if (!row) throw new CatalogueNotFound(this.catalogue);
    return [...row.embedded_attributes];
  }

  async findBySkus(skus: readonly string[]): Promise<StoredProduct[]> {
    if (skus.length === 0) return [];
    const rows = await this.inCatalogue(this.writes, (tx) =>
      tx.query<StoredRow>(`SELECT ${STORED_COLUMNS} FROM products WHERE catalogue = $1 AND sku = ANY($2::text[])`, [
        this.catalogue,
        [...skus],
      ]),
    );
    return rows.map(toStored);
  }

  async writeMany(writes: readonly BulkWrite[]): Promise<BulkWriteOutcome[]> {
    if (writes.length === 0) return [];
    const inserts = writes.flatMap((write) => (write.kind === "insert" ? [write.row] : []));
    if (inserts.length === writes.length) {
      const copied = await this.insertByCopy(inserts);
      if (copied) return copied;
    }
    return this.writeThroughStaging(writes);
  }

  /**
   * New products only (an import's usual chunk): their ids drawn first, then the rows written by
   * one binary COPY straight into the catalogue's partition, the cheapest way in (nothing staged and
   * written twice: a 3072-d vector is 12 kB, stored out of the row). COPY refuses a table under
   * row-level security, so this one statement runs as the session user, into the partition alone:
   * its bounds refuse a row of another catalogue as the policy would (and every row names this
   * one). Undefined, with nothing written, when a sku was taken meanwhile (the import checked them
   * before): then the staged path decides row by row.
   */
  private async insertByCopy(rows: readonly EmbeddedProduct[]): Promise<BulkWriteOutcome[] | undefined> {
    let ids: number[];
    try {
      ids = await this.inCatalogue(this.writes, async (tx, { partition }) => {
        if (this.writesInSpace) {
          // As writeThroughStaging: the lock every write of `products` takes, then the space checked.
          await tx.query("LOCK TABLE products IN ROW EXCLUSIVE MODE");
          await this.refuseIfSpaceChanged(tx);
        }
        const drawn = await tx.query<{ id: number | string }>(
          "SELECT nextval(pg_get_serial_sequence('products', 'id')) AS id FROM generate_series(1, $1)",
          [rows.length],
        );
        const drawnIds = drawn.map((row) => Number(row.id));
        const copied = rows.map(({ product, embedding, contentDigest }, i): CopyField[] => [
          { text: this.catalogue },
          { int8: drawnIds[i] as number },
          product.sku === undefined ? null : { text: product.sku },
          { text: product.name },
          { text: product.description },
          { text: product.category },
          { text: contentDigest },
          { vector: embedding },
          { jsonb: attributesParam(product.attributes) },
        ]);
        await tx.query("SELECT set_config('role', 'none', true)");
        await tx.copyIn(
          partition,
          ["catalogue", "id", "sku", "name", "description", "category", "content_digest", "embedding", "attributes"],
          encodeCopyRows(copied),
        );
        await tx.query(`SELECT set_config('role', '${CATALOGUE_ROLE}', true)`);
        return drawnIds;
      });
    } catch (error) {
      if (isSkuViolation(error)) return undefined;
      throw error;
    }
    await this.pools.wrote();
    return rows.map(({ product }, i) => ({ written: publicView({ id: ids[i] as number, ...product }) }));
  }

  /**
   * Any mix of inserts and updates: the rows are loaded by binary COPY into a temporary table,
   * then inserted (a sku taken meanwhile skips its row) and updated (a version changed meanwhile
   * skips its row) from it in two statements.
   */
  private async writeThroughStaging(writes: readonly BulkWrite[]): Promise<BulkWriteOutcome[]> {
    const staged = writes.map((write, position): CopyField[] => {
      const base: CopyField[] = [{ int4: position }];
      if (write.kind === "insert") {
        const { product, embedding, contentDigest } = write.row;
        return [
          ...base,
          null,
          null,
          product.sku === undefined ? null : { text: product.sku },
          { text: product.name },
          { text: product.description },
          { text: product.category },
          { text: contentDigest },
          { vector: embedding },
          { jsonb: attributesParam(product.attributes) },
        ];
      }
      const { fields, embedding } = write.update;
      return [
        ...base,
        { int8: write.id },
        { int4: write.expectedVersion },
        fields.sku === undefined ? null : { text: fields.sku },
        { text: fields.name },
        { text: fields.description },
        { text: fields.category },
        embedding ? { text: embedding.contentDigest } : null,
        embedding ? { vector: embedding.vector } : null,
        { jsonb: attributesParam(fields.attributes) },
      ];
    });
    const { inserted, updated, ids } = await this.inCatalogue(this.writes, async (tx) => {
      if (this.writesInSpace) {
        // The lock every write of `products` takes, taken first, then the space checked: a switch of
        // space waits for this batch's commit, or this batch for the switch's (then it finds the new space).
        await tx.query("LOCK TABLE products IN ROW EXCLUSIVE MODE");
        await this.refuseIfSpaceChanged(tx);
      }
      await tx.query(
        `CREATE TEMPORARY TABLE product_writes (
           position integer NOT NULL, id bigint, expected_version integer, sku text, name text NOT NULL,
           description text NOT NULL, category text NOT NULL, content_digest text, embedding vector(${this.dimension}),
           attributes jsonb NOT NULL
         ) ON COMMIT DROP`,
      );
      await tx.copyIn(
        "product_writes",
        [
          "position",
          "id",
          "expected_version",
          "sku",
          "name",
          "description",
          "category",
          "content_digest",
          "embedding",
          "attributes",
        ],
        encodeCopyRows(staged),
      );
      // New rows get their ids first, so that each inserted row is known by its position.
      await tx.query(
        "UPDATE product_writes SET id = nextval(pg_get_serial_sequence('products', 'id')) WHERE expected_version IS NULL",
      );
      const insertedRows = await tx.query<{ id: number | string }>(
        `INSERT INTO products (catalogue, id, sku, name, description, category, content_digest, embedding, attributes)
         SELECT $1, id, sku, name, description, category, content_digest, embedding, attributes
         FROM product_writes WHERE expected_version IS NULL ORDER BY position
         ON CONFLICT (catalogue, sku) WHERE sku IS NOT NULL DO NOTHING
         RETURNING id`,
        [this.catalogue],
      );
      const updatedRows = await tx.query<{ id: number | string }>(
        `UPDATE products p SET name = w.name, description = w.description, category = w.category, sku = w.sku,
           attributes = w.attributes,
           embedding = COALESCE(w.embedding, p.embedding), content_digest = COALESCE(w.content_digest, p.content_digest),
           version = p.version + 1, updated_at = now()
         FROM product_writes w
         WHERE p.catalogue = $1 AND w.expected_version IS NOT NULL AND p.id = w.id AND p.version = w.expected_version
         RETURNING p.id`,
        [this.catalogue],
      );
      const positions = await tx.query<{ id: number | string }>("SELECT id FROM product_writes ORDER BY position");
      return {
        inserted: new Set(insertedRows.map((row) => Number(row.id))),
        updated: new Set(updatedRows.map((row) => Number(row.id))),
        ids: positions.map((row) => Number(row.id)),
      };
    });
    await this.pools.wrote();
    const lost = writes.flatMap((write, i) =>
      write.kind === "update" && !updated.has(ids[i] as number) ? [ids[i] as number] : [],
    );
    const stillThere = new Set<number>();
    if (lost.length > 0) {
      const rows = await this.inCatalogue(this.writes, (tx) =>
        tx.query<{ id: number | string }>("SELECT id FROM products WHERE catalogue = $1 AND id = ANY($2::bigint[])", [
          this.catalogue,
          lost,
        ]),
      );
      for (const row of rows) stillThere.add(Number(row.id));
    }
    return writes.map((write, i): BulkWriteOutcome => {
      const id = ids[i] as number;
      if (write.kind === "insert") {
        return inserted.has(id) ? { written: publicView({ id, ...write.row.product }) } : { raced: "skuTaken" };
      }
      if (updated.has(id)) return { written: publicView({ id, ...write.update.fields }) };
      return { raced: stillThere.has(id) ? "changed" : "missing" };
    });
  }

  async searchByVector(embedding: Vector, query: SearchQuery): Promise<VersionedHit[]> {
    const rows = await this.inCatalogue(this.reads, async (tx, entered) => {
      const params: unknown[] = [vectorParam(embedding), query.limit, this.catalogue];
      // A browsing search's thousand is ranked by the scanned column's cosine: no exact cosine of
      // each (read from TOAST past 512 dimensions, 33 µs a product at load 10) and no candidates
      // beyond the thousand but WINDOW_BITS_FACTOR times as many from a binary-quantized index.
      // Its first ones are those an exact search finds: the index is read at least as deep.
      const dense = await this.denseCandidates(
        tx,
        entered,
        this.scannedDistance(params, embedding),
        params,
        "$3",
        rowFilter(params, query),
        query.window ? query.limit : candidatesFor(query.limit),
        query.window ? `${PRODUCT_COLUMNS}, version` : `${PRODUCT_COLUMNS}, version, embedding`,
        query.window ? WINDOW_BITS_FACTOR * query.limit : undefined,
      );
      if (query.window) {
        // `$1 IS NOT NULL`: the exact plan past 512 dimensions reads only the query's halfvec, and an
        // unread parameter has no type (PostgreSQL refuses the statement).
        return queryWithSettings<ProductRow & { version: number; distance: number }>(
          tx,
          dense.settings,
          `SELECT ${PRODUCT_COLUMNS}, version, near AS distance FROM (${dense.sql}) AS dense
           WHERE $1::vector IS NOT NULL ORDER BY near, id LIMIT $2`,
          params,
        );
      }
      // The candidates' own distances are read from the scanned column (in the row); only the
      // finalists' full vectors, stored out of the row past 512 dimensions, are read for the exact
      // cosine (a row carries its out-of-row vector as a pointer until the cosine reads it). The
      // finalists are the `limit` best by the scanned column: half precision moves a cosine by about
      // 1e-5, so the exact order could only take in a product from further down through a tie that
      // close at the last place. At 1,000,000 × 3072 a full vector (its TOAST chunks) took about
      // 0.03 ms to read from memory and 0.45 ms from the disk: twice the limit, as before stop 40,
      // took p50 6.25 to 6.87 ms there (16.3 to 17.1 for a query seen for the first time) against
      // 5.55 to 5.64 (11.8 to 12.6) with the limit, at the same recall@10 (0.991; README "Vector
      // index"). The rows come from the scan itself: no second lookup by id (0.26 ms of 4.6 at
      // 100,000 × 3072).
      return queryWithSettings<ProductRow & { version: number; distance: number }>(
        tx,
        dense.settings,
        `WITH dense AS (${dense.sql}),
         finalists AS (SELECT * FROM dense ORDER BY near LIMIT $2)
         SELECT ${PRODUCT_COLUMNS}, version, embedding <=> $1::vector AS distance
         FROM finalists
         ORDER BY distance, id
         LIMIT $2`,
        params,
      );
    });
    return rows.map((row) => ({ ...toProduct(row), version: Number(row.version), score: 1 - Number(row.distance) }));
  }

  async hybridCandidates(embedding: Vector, lexical: LexicalQuery, query: HybridQuery): Promise<HybridCandidate[]> {
    const rows = await this.inCatalogue(this.reads, async (tx, entered) => {
      const params: unknown[] = [
        vectorParam(embedding),
        [...lexical.texts],
        [...lexical.expansions],
        query.candidates,
        lexical.misspellable === undefined ? null : [...lexical.misspellable],
        this.catalogue,
      ];
      const filter = rowFilter(params, query);
      const near = this.scannedDistance(params, embedding);
      // A browsing window may ask for more candidates than the setting would rank.
      const rankedRows = Math.max(this.search.lexicalRankMaxRows ?? DEFAULT_LEXICAL_RANK_MAX_ROWS, query.candidates);
      const dense = await this.denseCandidates(
        tx,
        entered,
        near,
        params,
        "$6",
        filter,
        query.candidates,
        "id",
        query.window ? WINDOW_BITS_FACTOR * query.candidates : query.candidates,
      );
      // Every candidate is scored by the scanned column, in the row: past 512 dimensions the full
      // vectors are out of it, and the search reads them for its answers alone (exactScores), as a
      // semantic search does for its finalists. A browsing search keeps these, as its semantic
      // window does. The words are matched through CATALOGUE_WORDS_VIEW, where the GIN index serves
      // `@@` (schema.ts).
      //
      // The lexical side ranks (ts_rank) at most lexicalRankMaxRows matching products. Up to that
      // many, every match is ranked, read by one scan of the index (`any_word`; not tried in a
      // catalogue of more than LEXICAL_ANY_WORD_FACTOR times as many products). Past it, up to
      // half of them are those holding every word of one of the query's texts (`every_word`), and
      // what they leave is shared equally by its words (`parts`), each word's taken as the index
      // gives them: a rare word's products are all ranked, and so are those holding every word; of
      // a word that thousands of products hold, some. Ranking every match read each one's row: at
      // 1,000,000 products a query of common words matched 300,000 of them and took up to 1.9 s
      // (README "Hybrid search at 1,000,000").
      const where = `catalogue = $6 ${filter ? `AND ${filter.sql}` : ""}`;
      return queryWithSettings<ProductRow & { version: number; distance: number; lexical: number }>(
        tx,
        dense.settings,
        `WITH q AS (SELECT $1::vector AS v, words.* FROM (${lexicalQuerySql("$6")}) AS words),
         dense AS (${dense.sql}),
         any_word AS (
           SELECT id, search_text FROM ${CATALOGUE_WORDS_VIEW}, q WHERE ${where} AND search_text @@ q.t
           LIMIT ${rankedRows + 1}
         ),
         too_many AS (
           SELECT CASE WHEN (SELECT reltuples FROM pg_class WHERE oid = '${entered.partition}'::regclass)
                            > ${LEXICAL_ANY_WORD_FACTOR * rankedRows} THEN true
                       ELSE (SELECT count(*) > ${rankedRows} FROM any_word) END AS past_limit
         ),
         every_word_matched AS (
           SELECT id, search_text FROM ${CATALOGUE_WORDS_VIEW}, q
           WHERE (SELECT past_limit FROM too_many) AND ${where} AND search_text @@ q.every_word
           LIMIT ${Math.ceil(rankedRows / 2)}
         ),
         matched AS (
           SELECT id, search_text FROM any_word WHERE NOT (SELECT past_limit FROM too_many)
           UNION ALL
           SELECT id, search_text FROM every_word_matched
           UNION ALL
           (SELECT found.id, found.search_text FROM q, unnest(q.parts) AS part, LATERAL (
              SELECT id, search_text FROM ${CATALOGUE_WORDS_VIEW}
              WHERE (SELECT past_limit FROM too_many) AND ${where} AND search_text @@ part
              LIMIT (SELECT (${rankedRows} - (SELECT count(*) FROM every_word_matched)) / greatest(cardinality(parts), 1) FROM q)
            ) AS found)
         ),
         lexical AS (
           SELECT id FROM (SELECT DISTINCT ON (id) id, search_text FROM matched ORDER BY id) AS distinct_matched, q
           ORDER BY ts_rank(search_text, q.t) DESC, id LIMIT $4
         )
         SELECT ${PRODUCT_COLUMNS}, version, ${near} AS distance, ts_rank(search_text, q.t) AS lexical
         FROM products, q
         WHERE catalogue = $6 AND id IN (SELECT id FROM dense UNION SELECT id FROM lexical)`,
        params,
      );
    });
    return rows.map((row) => ({
      ...toProduct(row),
      version: Number(row.version),
      score: 1 - Number(row.distance),
      lexical: Number(row.lexical),
      ...(this.scansHalfCopy ? { approximateScore: true } : {}),
    }));
  }

  async exactScores(embedding: Vector, ids: readonly number[]): Promise<Map<number, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.inCatalogue(this.reads, (tx) =>
      tx.query<{ id: number | string; distance: number }>(
        `SELECT id, embedding <=> $1::vector AS distance FROM products
         WHERE catalogue = $2 AND id = ANY($3::bigint[])`,
        [vectorParam(embedding), this.catalogue, [...ids]],
      ),
    );
    return new Map(rows.map((row) => [Number(row.id), 1 - Number(row.distance)]));
  }

  async knowsAnyWord(words: readonly string[]): Promise<boolean> {
    if (words.length === 0) return false;
    const [row] = await this.inCatalogue(this.reads, (tx) =>
      tx.query<{ known: boolean }>(
        `WITH typed AS (
           SELECT DISTINCT typed.word FROM unnest($1::text[]) AS typed(word) WHERE ${misspeltWhere("$2")}
         ),${correctionsSql("$2")}
         SELECT EXISTS (
           SELECT 1 FROM unnest($1::text[]) AS asked(word), ${CATALOGUE_VOCABULARY_VIEW} v
           WHERE v.catalogue = $2 AND v.word = asked.word
         ) OR EXISTS (SELECT 1 FROM corrected) AS known`,
        [[...words], this.catalogue],
      ),
    );
    return row?.known === true;
  }

  async catalogueWords(words: readonly string[]): Promise<string[]> {
    if (words.length === 0) return [];
    const rows = await this.inCatalogue(this.reads, (tx) =>
      tx.query<{ word: string }>(
        `SELECT DISTINCT v.word FROM unnest($1::text[]) AS asked(word), ${CATALOGUE_VOCABULARY_VIEW} v
         WHERE v.catalogue = $2 AND v.word = asked.word`,
        [[...words], this.catalogue],
      ),
    );
    return rows.map((row) => row.word);
  }

  /**
   * The cosine distance of a product to the query vector `$1` by the scanned column: `embedding`, or
   * from 512 dimensions its half-precision copy, the query then sent as a `halfvec` parameter of its
   * own (HalfVectorParameter), appended to `params`.
   */
  private scannedDistance(params: unknown[], embedding: Vector): string {
    if (!this.scansHalfCopy) return "embedding <=> $1::vector";
    params.push(new HalfVectorParameter(embedding));
    return `embedding_half <=> $${params.length}::halfvec`;
  }

  /**
   * The products of the catalogue (the parameter `catalogue`) nearest to the query vector `$1`
   * (`embedding`; of `categories` when given) by the scanned column, to re-rank by the exact cosine:
   * a subquery of `columns` and `near` (that distance), its parameters appended to `params`.
   *
   * Without a filter it is the index's query (ORDER BY distance LIMIT): the planner answers it from
   * the catalogue's HNSW index when there is one (vector-index.ts), else by a scan. With a filter, the
   * plan depends on how many products the planner expects it to let through (estimatedMatches): up
   * to filterExactMaxRows, an exact scan of just those rows (exactCandidates), as an index scan of a
   * small category far from the query misses many of its nearest products (bench/index.ts: recall@10
   * 0.63 to 0.89). Past it, the index gives the query's neighbourhood regardless of the filter, the
   * filter applied to each product: as many as should hold NEIGHBOURHOOD_EXPECTED of the filter's
   * products were the filter independent of where a product lies (at least LEAST_NEIGHBOURHOOD).
   * One statement then answers by one of three plans, as the neighbourhood calls for:
   * - it holds as many of the filter's products as an unfiltered search re-ranks: those are the
   *   candidates (the query is near its filter's products);
   * - it holds fewer, but at least a quarter of what an independent filter would leave there: the
   *   index scan filtered as it goes (iterative scanning: the session's *.iterative_scan), deeper
   *   than unfiltered;
   * - it holds fewer still: the filter's products lie elsewhere (a query far from a large category:
   *   "a coffee machine, among clothes"), where that scan found few of the nearest (bench/scale.ts at
   *   1,000,000: recall@10 0.48 and 0.00 for a 5 % and a 24 % category), so the exact scan, up to
   *   filterFarExactMaxRows products (past that, the index scan filtered as it goes).
   * PostgreSQL runs only the plan whose condition holds (a one-time filter), but costs all three.
   *
   * With a binary-quantized index, the index gives the products nearest by the Hamming distance of
   * their bits (`bitsDepth`, at least rerankDepth; iterative scanning fills that many past ef_search
   * or probes), and the `depth` nearest of those by the half-precision cosine are the candidates: the column is in the
   * row, so re-ranking 100 costs about 100 page reads, where the full vectors' would read TOAST.
   * With VECTOR_IVF_PROBES `auto`, an IVFFlat index's search reads probesFor its lists, and an HNSW
   * scan deeper than ef_search has it raised, both set for the search's own transaction (a pooled
   * connection's session setting would stay for whoever uses it next).
   *
   * `near`: the distance by the scanned column (scannedDistance).
   */
  private async denseCandidates(
    tx: SqlClient,
    { partition }: Entered,
    near: string,
    params: unknown[],
    catalogue: string,
    filter: RowFilter | undefined,
    depth: number,
    columns: string,
    bitsDepth = depth,
  ): Promise<DenseCandidates> {
    const matches = filter === undefined ? 0 : await this.estimatedMatches(tx, filter.spec, partition);
    if (filter !== undefined && matches <= this.search.filterExactMaxRows) {
      return { sql: exactCandidates(near, params, catalogue, filter, depth, columns), settings: {} };
    }
    const index: SearchIndex | undefined =
      this.scansHalfCopy || filter !== undefined
        ? await this.settings.indexesInUse?.of(partition).index(tx)
        : undefined;
    const bits = this.scansHalfCopy && reranked(index?.kind);
    const column = this.scansHalfCopy ? "embedding_half" : "embedding";
    const inCatalogue = ` WHERE catalogue = ${catalogue}`;
    // The deepest filtered HNSW scan of the statement: ef_search is raised to it.
    let filteredDepth = 0;
    // `selected` of the `scanned` rows nearest the query in the index's order, `where` applied to
    // the rows it yields.
    const byIndex = (selected: string, where: string, scanned: number) => {
      params.push(scanned);
      const order = bits ? `${BINARY_QUANTIZED_COLUMN} <~> binary_quantize($1::vector)::bit(${this.dimension})` : near;
      return `SELECT ${selected} FROM products${where} ORDER BY ${order} LIMIT $${params.length}`;
    };
    // The `depth` nearest by `near` of a scan's rows (which hold `column`).
    const reranking = (scan: string) => {
      params.push(depth);
      return `SELECT ${columns}, ${near} AS near FROM (${scan}) AS scanned ORDER BY near LIMIT $${params.length}`;
    };
    const bitsDepthOf = (least = 0) => Math.max(bitsDepth, this.search.rerankDepth, least);
    let candidates: string;
    if (filter === undefined) {
      candidates = bits
        ? reranking(byIndex(`${columns}, ${column}`, inCatalogue, bitsDepthOf()))
        : byIndex(`${columns}, ${near} AS near`, inCatalogue, Math.max(depth, this.search.efSearch));
    } else if (index?.kind === undefined) {
      // No index: the scan is exact whatever the filter lets through.
      params.push(depth);
      return {
        sql: `SELECT ${columns}, ${near} AS near FROM products${inCatalogue} AND ${filter.sql} ORDER BY near LIMIT $${params.length}`,
        settings: {},
      };
    } else {
      const filtered = `${inCatalogue} AND ${filter.sql}`;
      // A filtered HNSW scan keeps ef_search candidates at each step, of which the filter drops
      // some: as many as are asked for (up to pgvector's 1,000) keeps its relaxed order near the
      // exact one (bench/filters.ts).
      filteredDepth = Math.max(depth, this.search.efSearch, FILTERED_INDEX_CANDIDATES);
      const filteredScan = bits
        ? reranking(byIndex(`${columns}, ${column}`, filtered, bitsDepthOf(FILTERED_INDEX_CANDIDATES)))
        : byIndex(`${columns}, ${near} AS near`, filtered, filteredDepth);
      const rows = await this.catalogueRows(tx, partition);
      const share = rows > 0 ? Math.min(1, Math.max(matches, 1) / rows) : 1;
      const scanned = Math.min(
        MAX_NEIGHBOURHOOD,
        Math.max(LEAST_NEIGHBOURHOOD, Math.ceil(NEIGHBOURHOOD_EXPECTED / share)),
      );
      const neighbourhood = byIndex(`id, CASE WHEN ${filter.sql} THEN ${near} END AS near`, inCatalogue, scanned);
      // Enough: as many of the filter's products as an unfiltered search re-ranks (a browsing
      // window's are more than its size).
      const enough = bits ? bitsDepthOf() : depth;
      params.push(depth, enough);
      const [wanted, enoughFound] = [`$${params.length - 1}`, `$${params.length}`];
      const found = "(SELECT count(*) FROM passing)";
      const branches = [
        // The neighbourhood's candidates, read from `products` by id as exactCandidates reads its own.
        `SELECT ${columns}, best.near FROM products JOIN best USING (id)
         WHERE catalogue = ${catalogue} AND id = ANY(ARRAY(SELECT id FROM best)) AND ${found} >= ${enoughFound}`,
        `SELECT * FROM (${filteredScan}) AS filtered WHERE ${found} < ${enoughFound}`,
      ];
      if (matches <= this.search.filterFarExactMaxRows) {
        params.push(Math.min(enough, Math.max(1, Math.floor((scanned * share) / 4))));
        const few = `$${params.length}`;
        branches[1] += ` AND ${found} >= ${few}`;
        branches.push(
          `SELECT * FROM (${exactCandidates(near, params, catalogue, filter, depth, columns)}) AS far WHERE ${found} < ${few}`,
        );
      }
      candidates = `WITH neighbourhood AS MATERIALIZED (${neighbourhood}),
        passing AS MATERIALIZED (
          SELECT id, near FROM neighbourhood WHERE near IS NOT NULL ORDER BY near LIMIT ${enoughFound}
        ),
        best AS MATERIALIZED (SELECT id, near FROM passing ORDER BY near LIMIT ${wanted})
        ${branches.join("\n        UNION ALL\n        ")}`;
    }
    const settings = {
      ...(bits && this.search.probes === "auto" && index?.lists !== undefined
        ? { "ivfflat.probes": String(probesFor(index.lists)) }
        : {}),
      ...(!bits && filteredDepth > this.search.efSearch
        ? { "hnsw.ef_search": String(Math.min(filteredDepth, MAX_HNSW_EF_SEARCH)) }
        : {}),
      // The neighbourhood's statement holds the fallback's plan too, never run when the query is
      // near its filter, yet costed: past jit_above_cost, PostgreSQL compiled the statement first
      // (22 of 26 ms at 300,000 × 3072).
      ...(filter === undefined ? {} : { jit: "off" }),
    };
    return { sql: candidates, settings };
  }

  /** How many rows the catalogue's table holds, as ANALYZE last counted them (0 if never). */
  private async catalogueRows(tx: SqlClient, partition: string): Promise<number> {
    const [table] = await tx.query<{ rows: number | string }>(
      "SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = $1::regclass",
      [partition],
    );
    return Math.max(0, Number(table?.rows) || 0);
  }

  /**
   * How many of the catalogue's products the planner expects the filter to let through: its
   * estimate from the statistics ANALYZE keeps (of category, of the attributes as a whole, of the
   * indexed number attributes; a vector index's build runs ANALYZE, autovacuum does afterwards), read
   * from EXPLAIN, which plans the statement without running it. Counting them instead read every
   * row a filter let through, up to filterExactMaxRows + 1: at 100,000 × 384 a 50 % filter's search
   * took 60 ms p50 counting, 3.1 ms estimating (bench/filters.ts). Without statistics (a catalogue
   * never analyzed) PostgreSQL guesses a small share, and the search scans exactly.
   *
   * A range on an attribute with no index of its own has no statistics either: PostgreSQL guesses
   * a third of the rows whatever the range, and a 5 % range went through the vector index, keeping
   * recall@10 0.57 (bench/filters.ts, `weight < 50` at 100,000 × 3072: its nearest products lie in
   * lists far from the query's). Such a filter is estimated from a sample of the catalogue's rows
   * instead (sampledMatches).
   */
  private async estimatedMatches(tx: SqlClient, spec: FilterSpec, partition: string): Promise<number> {
    const { indexedNumbers } = this.settings;
    if (spec.attributes?.some((condition) => condition.op === "range" && !indexedNumbers.has(condition.key))) {
      const sampled = await this.sampledMatches(tx, spec, partition);
      if (sampled !== undefined) return sampled;
    }
    const params: unknown[] = [this.catalogue];
    const filter = rowFilter(params, spec) as RowFilter;
    const [row] = await tx.query<{ "QUERY PLAN": PlanOutline[] | string }>(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${CATALOGUE_WORDS_VIEW} WHERE catalogue = $1 AND ${filter.sql}`,
      params,
    );
    const plan = row?.["QUERY PLAN"];
    const [outline] = typeof plan === "string" ? (JSON.parse(plan) as PlanOutline[]) : (plan ?? []);
    const rows = outline?.Plan["Plan Rows"];
    if (typeof rows !== "number") throw new Error(`EXPLAIN gave no row estimate: ${JSON.stringify(plan)}`);
    return rows;
  }

  /**
   * How many of the catalogue's products the filter lets through, from a sample of about
   * ESTIMATE_SAMPLE_ROWS of its rows (TABLESAMPLE SYSTEM: whole pages, about one row each at 3072
   * dimensions; 10 to 17 ms at 100,000 × 3072), always the same sample while the table is the same
   * (REPEATABLE), so that every page of a browsing search takes the same plan. Undefined when the
   * table was never analyzed (no row count) or the sample holds none of its rows.
   */
  private async sampledMatches(tx: SqlClient, spec: FilterSpec, partition: string): Promise<number | undefined> {
    const rows = await this.catalogueRows(tx, partition);
    if (rows === 0) return undefined;
    const params: unknown[] = [this.catalogue, Math.min(100, (100 * ESTIMATE_SAMPLE_ROWS) / rows)];
    const filter = rowFilter(params, spec) as RowFilter;
    const [sample] = await tx.query<{ sampled: number | string; matching: number | string }>(
      `SELECT count(*) AS sampled, count(*) FILTER (WHERE ${filter.sql}) AS matching
       FROM products TABLESAMPLE SYSTEM ($2::float4) REPEATABLE (0) WHERE catalogue = $1`,
      params,
    );
    const sampled = Number(sample?.sampled);
    return sampled > 0 ? (Number(sample?.matching) / sampled) * rows : undefined;
  }

  async versions(ids: readonly number[]): Promise<Map<number, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.inCatalogue(this.reads, (tx) =>
      tx.query<{ id: number | string; version: number }>(
        "SELECT id, version FROM products WHERE catalogue = $1 AND id = ANY($2::bigint[])",
        [this.catalogue, [...ids]],
      ),
    );
    return new Map(rows.map((row) => [Number(row.id), Number(row.version)]));
  }
}

/**
 * How alike by spelling a query word and a word of the search vocabulary must be (pg_trgm's
 * similarity, 0 to 1) for the one to stand for the other: see correctionsSql. On the dev queries,
 * 0.3 (pg_trgm's own default) found the same misspellings and matched 5 in 40 gibberish queries to
 * catalogue words (bench/eval.ts: answered gibberish 2.5 % → 12.5 %).
 */
const TYPO_SIMILARITY = 0.4;

/**
 * CTEs that read the words of `typed(word)` (4 to 40 letters, not in the search vocabulary) as the
 * vocabulary's words they may be misspellings of, into `corrected(word)`: the vocabulary word most
 * like each by trigrams, when their similarity reaches TYPO_SIMILARITY ("cushiom" → "cushion", a
 * letter dropped, replaced or added), found through the vocabulary's trigram index; and the
 * vocabulary words that are a typed word with two neighbouring letters swapped ("cuhsion",
 * "iphnoe": a swap breaks three trigrams, which similarity alone does not forgive).
 *
 * The vocabulary is the catalogue's own (the parameter `catalogue`, read through
 * CATALOGUE_VOCABULARY_VIEW inside the catalogue): a word only another catalogue has is no
 * correction here.
 */
function correctionsSql(catalogue: string): string {
  return `
   nearest AS (
     SELECT close.word FROM typed CROSS JOIN LATERAL (
       SELECT v.word FROM ${CATALOGUE_VOCABULARY_VIEW} v
       WHERE v.catalogue = ${catalogue} AND v.word % typed.word AND similarity(v.word, typed.word) >= ${TYPO_SIMILARITY}
       ORDER BY similarity(v.word, typed.word) DESC, v.word LIMIT 1
     ) AS close
   ),
   swapped AS (
     SELECT v.word FROM ${CATALOGUE_VOCABULARY_VIEW} v
     WHERE v.catalogue = ${catalogue} AND v.word = ANY (ARRAY(
       SELECT overlay(typed.word placing substr(typed.word, at + 1, 1) || substr(typed.word, at, 1) from at for 2)
       FROM typed, generate_series(1, length(typed.word) - 1) AS at
     ))
   ),
   corrected AS (SELECT word FROM nearest UNION SELECT word FROM swapped)`;
}

/** The words of `typed(word)` that the corrections read: 4 to 40 letters, none of them a word of the catalogue's vocabulary. */
function misspeltWhere(catalogue: string): string {
  return `typed.word ~ '^[[:alpha:]]{4,40}$'
       AND NOT EXISTS (
         SELECT 1 FROM ${CATALOGUE_VOCABULARY_VIEW} v WHERE v.catalogue = ${catalogue} AND v.word = typed.word
       )`;
}

/**
 * The lexical query of `$2` (the query's texts) and `$3` (its expansions: other words for them), in the catalogue `catalogue`:
 * - `t`: each of their words, stemmed as search_text stems products (TEXT_SEARCH_CONFIGS), any of
 *   them matching (OR), so a natural-language query need not contain every word;
 * - `parts`: the same words one by one;
 * - `every_word`: the words of a text all together (AND), for each text of two words or more, any
 *   of them matching.
 * A word that is a stop word in any of those languages does not count ("for" in English, "para" in
 * Spanish): the other language would keep it and match it everywhere. Each is empty when no word counts.
 *
 * Typo tolerance: the words of `$5` (those that may be misspelt; null: those of `$2`) that the
 * search vocabulary (the words of the catalogue's names and categories, schema.ts) lacks are also
 * matched as the vocabulary words they may be misspellings of (correctionsSql).
 */
function lexicalQuerySql(catalogue: string): string {
  const configs = `unnest(ARRAY[${TEXT_SEARCH_CONFIGS.map((c) => `'${c}'`).join(", ")}]::regconfig[]) AS config`;
  const counts = (word: string) =>
    TEXT_SEARCH_CONFIGS.map((c) => `to_tsvector('${c}', ${word}) <> ''::tsvector`).join(" AND ");
  return `WITH words AS (
     SELECT DISTINCT word FROM unnest($2::text[] || $3::text[]) AS text,
       unnest(tsvector_to_array(to_tsvector('simple', text))) AS word
   ),
   typed AS (
     SELECT DISTINCT typed.word FROM unnest(coalesce($5::text[], $2::text[])) AS text,
       unnest(tsvector_to_array(to_tsvector('simple', text))) AS typed(word)
     WHERE ${misspeltWhere(catalogue)}
   ),${correctionsSql(catalogue)},
   parts AS (
     SELECT DISTINCT plainto_tsquery(config, word) AS part
     FROM (SELECT word FROM words UNION SELECT word FROM corrected) AS matched, ${configs}
     WHERE ${counts("word")}
   ),
   conjunctions AS (
     SELECT string_agg(plainto_tsquery(config, said.word)::text, ' & ') AS every_word
     FROM unnest($2::text[] || $3::text[]) WITH ORDINALITY AS text(text, at),
       unnest(tsvector_to_array(to_tsvector('simple', text.text))) AS said(word), ${configs}
     WHERE ${counts("said.word")}
     GROUP BY text.at, config
     HAVING count(*) > 1
   )
   SELECT coalesce((SELECT string_agg(part::text, ' | ') FROM parts), '')::tsquery AS t,
     coalesce((SELECT array_agg(part) FROM parts), '{}') AS parts,
     coalesce((SELECT string_agg('(' || every_word || ')', ' | ') FROM conjunctions), '')::tsquery AS every_word`;
}

/**
 * The `depth` products that `filter` lets through nearest to the query by `near`, exactly: found and
 * ranked in CATALOGUE_WORDS_VIEW, where the indexes serve the filter (the GIN index on attributes,
 * the btree on category, the index on price), each read once; only the best are then read from
 * `products`, by id (`= ANY`, which the primary key serves under the policy, being leakproof: joined
 * on id alone, the planner may read the whole partition instead). Under the policy itself, jsonb's
 * operators are not leakproof and were applied row by row to the whole partition (bench/filters.ts,
 * a 0.1 % filter, p50: 151 ms at 100,000 × 384 and 2.1 s at 3072, where it takes 1.1 and 1.9 ms
 * through the view). The view confines the ids to the catalogue the transaction names, and the
 * products read by them are still confined by the policy: both walls stand. `+ 0`: an order the
 * vector index cannot give, so the planner computes the distance of each row the filter lets through.
 */
function exactCandidates(
  near: string,
  params: unknown[],
  catalogue: string,
  filter: RowFilter,
  depth: number,
  columns: string,
): string {
  params.push(depth);
  return `WITH ranked AS MATERIALIZED (
            SELECT id, ${near} AS near FROM ${CATALOGUE_WORDS_VIEW}
            WHERE catalogue = ${catalogue} AND ${filter.sql}
            ORDER BY (${near}) + 0 LIMIT $${params.length}
          )
          SELECT ${columns}, ranked.near FROM products JOIN ranked USING (id)
          WHERE catalogue = ${catalogue} AND id = ANY(ARRAY(SELECT id FROM ranked))
          ORDER BY ranked.near LIMIT $${params.length}`;
}

/** A search's dense candidates: the statement's part that finds them, and the settings it runs with. */
interface DenseCandidates {
  sql: string;
  /** For the rest of the search's transaction (SET LOCAL): a pooled connection's session keeps none. */
  settings: Record<string, string>;
}

/**
 * Runs `text` in the transaction `tx` with `settings` set for the rest of it first. The two statements
 * go together, the second sent without waiting for the first's answer (the connection runs them in
 * order, and the second fails if the first did): one round trip instead of two, about 0.13 ms of a
 * search on a PostgreSQL server on the same machine (README "Vector index").
 */
async function queryWithSettings<T>(
  tx: SqlClient,
  settings: Record<string, string>,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  const entries = Object.entries(settings);
  if (entries.length === 0) return tx.query<T>(text, params);
  const [, rows] = await Promise.all([
    tx.query(
      `SELECT ${entries.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(", ")}`,
      entries.flat(),
    ),
    tx.query<T>(text, params),
  ]);
  return rows;
}

/** Thrown inside the transaction to roll it back when the idempotency key already has its answer. */
const KEY_ALREADY_ANSWERED = Symbol("idempotency key already answered");

/**
 * Candidates taken from the half-precision scan (or the index, then at least its ef_search: every
 * candidate its scan found) to re-rank exactly: 4× the limit, at least 40.
 */
function candidatesFor(limit: number): number {
  return Math.max(40, 4 * limit);
}

/**
 * A browsing search's window (SearchQuery.window) re-ranks this many times its size of a
 * binary-quantized index's candidates by the half-precision cosine. At 100,000 × 3072 (ivf-bq, 5
 * probes) the thousand held 0.715 of the exact thousand with 1,000 candidates, 0.766 with 2,000, 0.769
 * with 4,000 (the probes' lists bound it), and 2,000 took 62 ms where 4,000 took 106 at load 10; at
 * 3,000 × 512 (clustered test vectors) 0.64, 0.92, 1.0 with 1,000, 2,000, 3,000.
 */
const WINDOW_BITS_FACTOR = 2;

/**
 * Candidates of a filtered index scan: its relaxed order strays further from the exact one than an
 * unfiltered scan's, so more are re-ranked (bench/scale.ts measures the recall this keeps).
 */
const FILTERED_INDEX_CANDIDATES = 200;

/**
 * A filtered search's neighbourhood (denseCandidates) holds at least as many products as should
 * hold this many of the filter's were the filter independent of where a product lies; at most
 * MAX_NEIGHBOURHOOD products.
 */
const NEIGHBOURHOOD_EXPECTED = 10;
const LEAST_NEIGHBOURHOOD = 80;
const MAX_NEIGHBOURHOOD = 20_000;

/** Rows sampled to estimate a filter the statistics cannot (sampledMatches). */
const ESTIMATE_SAMPLE_ROWS = 1000;
/** The largest hnsw.ef_search pgvector takes. */
const MAX_HNSW_EF_SEARCH = 1000;

/** What EXPLAIN (FORMAT JSON) tells of a statement's plan that estimatedMatches reads. */
interface PlanOutline {
  Plan: { "Plan Rows"?: unknown };
}

/** What a filter asks of a product: categories, attribute conditions (the queries' own fields). */
interface FilterSpec {
  categories?: readonly string[] | undefined;
  attributes?: readonly AttributeCondition[] | undefined;
}

interface RowFilter {
  spec: FilterSpec;
  /** The condition, on the parameters that hold its values. */
  sql: string;
}

/**
 * The condition for a filter's categories and attribute conditions (AND), their parameters
 * appended to `params`; undefined without any. An any-of is containment (`@>`) of one of its
 * values, or of a one-item list of it (a list attribute holding it), which the GIN index on
 * `attributes` serves (jsonb_path_ops); a range compares the attribute's number (a value of
 * another type is no number: NULL, which no bound lets through), which an index serves for
 * INDEXED_NUMBER_ATTRIBUTES (`price`); exists is `?`.
 */
function rowFilter(params: unknown[], spec: FilterSpec): RowFilter | undefined {
  const conditions: string[] = [];
  if (spec.categories) {
    params.push(spec.categories);
    conditions.push(`category = ANY($${params.length}::text[])`);
  }
  for (const condition of spec.attributes ?? []) {
    if (condition.op === "anyOf") {
      const wanted = condition.values.flatMap((value) => {
        const alone = JSON.stringify({ [condition.key]: value });
        return typeof value === "string" ? [alone, JSON.stringify({ [condition.key]: [value] })] : [alone];
      });
      params.push(wanted);
      conditions.push(`attributes @> ANY($${params.length}::text[]::jsonb[])`);
    } else if (condition.op === "exists") {
      params.push(condition.key);
      conditions.push(`${condition.exists ? "" : "NOT "}(attributes ? $${params.length}::text)`);
    } else {
      const number = attributeNumberSql(condition.key);
      for (const [bound, operator] of [
        ["gt", ">"],
        ["gte", ">="],
        ["lt", "<"],
        ["lte", "<="],
      ] as const) {
        const limit = condition[bound];
        if (limit === undefined) continue;
        params.push(limit);
        conditions.push(`${number} ${operator} $${params.length}::numeric`);
      }
    }
  }
  return conditions.length === 0 ? undefined : { spec, sql: `(${conditions.join(" AND ")})` };
}

function where(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
}

/**
 * A write refused for a sku another product of its catalogue has: the unique index on (catalogue,
 * sku) reports the violation under its partition's own index (products_c2_catalogue_sku_idx).
 */
function isSkuViolation(error: unknown): boolean {
  const { code, constraint_name: name } = (error ?? {}) as { code?: unknown; constraint_name?: unknown };
  return code === UNIQUE_VIOLATION && (typeof name !== "string" || name.endsWith("sku_idx") || name.endsWith("_sku"));
}

function toProduct(row: ProductRow): Product {
  const product: Product = {
    id: Number(row.id),
    name: row.name,
    description: row.description,
    category: row.category,
  };
  if (row.sku !== null && row.sku !== undefined) product.sku = row.sku;
  const attributes = typeof row.attributes === "string" ? (JSON.parse(row.attributes) as Attributes) : row.attributes;
  if (hasAttributes(attributes)) product.attributes = sortedKeys(attributes);
  return product;
}

/**
 * A product's attributes as the parameter of a write, JSON text cast `::text::jsonb` (postgres.js
 * would send a text typed jsonb as a JSON string: `"{\"price\":1}"`, which contains nothing): `{}` for none.
 */
function attributesParam(attributes: Attributes | undefined): string {
  return JSON.stringify(attributes ?? {});
}

function toStored(row: StoredRow): StoredProduct {
  return { ...toProduct(row), contentDigest: row.content_digest, version: Number(row.version) };
}
