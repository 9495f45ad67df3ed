import { ATTRIBUTE_KEY } from "../../domain/attributes.ts";
import type { EmbeddingSpace } from "../../ports/embedding-space.ts";
import { type SqlClient, VectorParameter } from "./sql-client.ts";
import { buildMemoryFor, type IndexTarget, indexTarget, kindOfName } from "./vector-index.ts";

/** The database holds embeddings of another model or dimension than the configured embedder's. */
export class EmbeddingSpaceMismatch extends Error {
  constructor(
    readonly stored: EmbeddingSpace,
    readonly configured: EmbeddingSpace,
  ) {
    super(
      `The database holds embeddings of model "${stored.model}" (${stored.dimension} dimensions), ` +
        `but the configured embedder is "${configured.model}" (${configured.dimension} dimensions); ` +
        "vectors of different models cannot be compared. To rebuild every product's embedding with the " +
        "configured model, run `bun run cli reembed` (or `sku-search reembed` for the executable).",
    );
    this.name = "EmbeddingSpaceMismatch";
  }
}

/**
 * An extension the schema needs (pgvector's `vector`, `pg_trgm`) installed in a schema outside the
 * connection's search_path, as some hosted PostgreSQL keep extensions in a schema of their own:
 * `CREATE EXTENSION IF NOT EXISTS` then does nothing, and every statement failed with `type "vector"
 * does not exist`. Said at start, with what to do.
 */
export class ExtensionOutOfReach extends Error {
  constructor(
    readonly extension: string,
    readonly schema: string,
    readonly searchPath: string,
  ) {
    super(
      `The ${extension} extension is installed in the schema "${schema}", which is not on this ` +
        `connection's search_path (${searchPath}), so its types and functions cannot be found. Add the ` +
        `schema to the search_path (ALTER ROLE <user> SET search_path = "$user", public, ${schema}; or the ` +
        `parameter search_path=public,${schema} in DATABASE_URL's query string), or move the extension ` +
        `(ALTER EXTENSION ${extension} SET SCHEMA public).`,
    );
    this.name = "ExtensionOutOfReach";
  }
}

/** pgvector's `vector` type holds at most 16,000 dimensions. */
const MAX_DIMENSION = 16_000;

/** Any constant shared by every replica: whoever holds it is the one changing the schema. */
export const SCHEMA_LOCK_KEY = 8_310_427_734_115;

/** A vector as a query parameter (cast it with `$n::vector`). */
export function vectorParam(vector: ArrayLike<number>): VectorParameter {
  return new VectorParameter(vector);
}

interface Migration {
  version: number;
  name: string;
  apply(tx: SqlClient, space: EmbeddingSpace): Promise<void>;
}

/**
 * Applied in order, each once, recorded in `schema_migrations`. Never edit one that has shipped:
 * append a new one. The `products.embedding` dimension comes from the configured embedder.
 *
 * No vector index: search is an exact cosine scan (see product-repository.ts for why).
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "users, products, embedding space",
    async apply(tx, space) {
      await tx.query(`
        CREATE TABLE users (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          username text NOT NULL UNIQUE,
          password_hash text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now()
        )`);
      await tx.query(`
        CREATE TABLE products (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          name text NOT NULL,
          description text NOT NULL,
          category text NOT NULL,
          embedding vector(${space.dimension}) NOT NULL ${NOT_ZERO_CHECK},
          created_at timestamptz NOT NULL DEFAULT now()
        )`);
      await tx.query(`
        CREATE TABLE embedding_space (
          singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
          model text NOT NULL,
          dimension integer NOT NULL CHECK (dimension > 0)
        )`);
      await tx.query("INSERT INTO embedding_space (model, dimension) VALUES ($1, $2)", [space.model, space.dimension]);
    },
  },
  {
    version: 2,
    name: "query embedding cache",
    async apply(tx) {
      // `key` is a digest of model, dimension and normalised query (a query may be longer than a
      // btree entry allows); `embedding` has no fixed dimension, as entries of any model may coexist.
      await tx.query(`
        CREATE TABLE query_embeddings (
          key text PRIMARY KEY,
          model text NOT NULL,
          embedding vector NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now()
        )`);
      await tx.query("CREATE INDEX query_embeddings_created_at ON query_embeddings (created_at)");
    },
  },
  {
    version: 3,
    name: "in-row half-precision copy of long embeddings",
    async apply(tx) {
      const [stored] = await tx.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
      if (stored) await addHalfPrecisionCopy(tx, stored.dimension);
    },
  },
  {
    version: 4,
    name: "token versions, idempotency keys",
    async apply(tx) {
      await tx.query("ALTER TABLE users ADD COLUMN token_version integer NOT NULL DEFAULT 0");
      // The first answer to a create sent with an Idempotency-Key, per user; written in the same
      // transaction as the product, so a key is recorded exactly when its product is.
      await tx.query(`
        CREATE TABLE idempotency_keys (
          user_id bigint NOT NULL,
          key text NOT NULL,
          fingerprint text NOT NULL,
          product_id bigint NOT NULL,
          response jsonb NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (user_id, key)
        )`);
      await tx.query("CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)");
    },
  },
  {
    version: 5,
    name: "product lifecycle: sku, content digest, version",
    async apply(tx) {
      await tx.query("ALTER TABLE products ADD COLUMN sku text");
      await tx.query("CREATE UNIQUE INDEX products_sku ON products (sku) WHERE sku IS NOT NULL");
      // The digest of the text each embedding was computed from (domain/product.ts contentDigest).
      await tx.query("ALTER TABLE products ADD COLUMN content_digest text");
      await tx.query(`UPDATE products SET content_digest = ${CONTENT_DIGEST_SQL}`);
      await tx.query("ALTER TABLE products ALTER COLUMN content_digest SET NOT NULL");
      await tx.query("ALTER TABLE products ADD COLUMN version integer NOT NULL DEFAULT 1");
      await tx.query("ALTER TABLE products ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()");
      // Filtered search scans a category's rows; listings page through them by id.
      await tx.query("CREATE INDEX products_category_id ON products (category, id)");
    },
  },
  {
    version: 6,
    name: "rate limit counters",
    async apply(tx) {
      // One row per client key and budget (rate-limit-counters.ts). UNLOGGED: counts lost in a
      // crash only give clients a fresh window; no index but the key, so updates stay HOT.
      await tx.query(`
        CREATE UNLOGGED TABLE rate_limit_counters (
          key text PRIMARY KEY,
          window_end timestamptz NOT NULL,
          hits integer NOT NULL
        )`);
    },
  },
  {
    version: 7,
    name: "full-text search of products (hybrid ranking)",
    async apply(tx) {
      await tx.query(
        `ALTER TABLE products ADD COLUMN search_text tsvector GENERATED ALWAYS AS (${SEARCH_TEXT_SQL}) STORED`,
      );
      await tx.query("CREATE INDEX products_search_text ON products USING gin (search_text)");
    },
  },
  {
    version: 8,
    name: "embedding staging (resumable re-embed)",
    async apply(tx) {
      // The space a re-embed is staging vectors for (embedding-space.ts); empty when none runs.
      await tx.query(`
        CREATE TABLE embedding_staging (
          singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
          model text NOT NULL,
          dimension integer NOT NULL CHECK (dimension > 0),
          started_at timestamptz NOT NULL DEFAULT now()
        )`);
    },
  },
  {
    version: 9,
    name: "upkeep lease (one instance at a time)",
    async apply(tx) {
      // Who does the catalogue's upkeep now among the instances (upkeep-lease.ts).
      await tx.query(`
        CREATE TABLE upkeep_lease (
          name text PRIMARY KEY,
          holder text NOT NULL,
          expires_at timestamptz NOT NULL
        )`);
    },
  },
  {
    version: 10,
    name: "import jobs",
    async apply(tx) {
      // A bulk import as a job (import-job-repository.ts): who sent it, where it stands, and the
      // lease of the one worker that may write its items (a token and when it lapses).
      await tx.query(`
        CREATE TABLE import_jobs (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          owner text NOT NULL,
          status text NOT NULL CHECK (status IN ('enqueued', 'processing', 'succeeded', 'failed')),
          total integer NOT NULL,
          error text,
          lease_token text,
          lease_until timestamptz,
          enqueued_at timestamptz NOT NULL,
          started_at timestamptz,
          finished_at timestamptz
        )`);
      // The queue: workers look only at unfinished jobs; the prune only at finished ones.
      await tx.query("CREATE INDEX import_jobs_unfinished ON import_jobs (id) WHERE finished_at IS NULL");
      await tx.query("CREATE INDEX import_jobs_finished_at ON import_jobs (finished_at) WHERE finished_at IS NOT NULL");
      // Each item: its validated product while it waits, its result once it has one (never both).
      await tx.query(`
        CREATE TABLE import_job_items (
          job_id bigint NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
          position integer NOT NULL,
          product jsonb,
          status text CHECK (status IN ('created', 'updated', 'unchanged', 'failed')),
          product_id bigint,
          sku text,
          detail text,
          PRIMARY KEY (job_id, position),
          CHECK ((product IS NULL) <> (status IS NULL))
        )`);
    },
  },
  {
    version: 11,
    name: "user roles, API keys",
    async apply(tx) {
      // Every user so far could do everything: each stays an admin. New users name their role.
      await tx.query(
        "ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'viewer'))",
      );
      await tx.query("ALTER TABLE users ALTER COLUMN role DROP DEFAULT");
      // An API key's row holds no secret: the key is derived from its id and the server's secret
      // (adapters/security/hmac-api-keys.ts), so a dump of this table yields no usable key.
      await tx.query(`
        CREATE TABLE api_keys (
          id text PRIMARY KEY,
          name text NOT NULL,
          actions text[] NOT NULL,
          catalogues text[] NOT NULL,
          expires_at timestamptz,
          created_at timestamptz NOT NULL DEFAULT now(),
          last_used_at timestamptz
        )`);
    },
  },
  {
    version: 12,
    name: "idempotency keys per caller (users and API keys)",
    async apply(tx) {
      // A key's creates are idempotent too: the records belong to the caller's id ("user:12",
      // "key:<id>"), no longer to a user id alone.
      await tx.query("ALTER TABLE idempotency_keys ADD COLUMN owner text");
      await tx.query("UPDATE idempotency_keys SET owner = 'user:' || user_id");
      await tx.query("ALTER TABLE idempotency_keys ALTER COLUMN owner SET NOT NULL");
      await tx.query("ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey");
      await tx.query("ALTER TABLE idempotency_keys DROP COLUMN user_id");
      await tx.query("ALTER TABLE idempotency_keys ADD PRIMARY KEY (owner, key)");
    },
  },
  {
    version: 13,
    name: "search vocabulary (typo tolerance)",
    async apply(tx) {
      // Trigram matching (a contrib extension of PostgreSQL; PGlite loads it, pglite-client.ts).
      await tx.query("CREATE EXTENSION IF NOT EXISTS pg_trgm");
      // The words of the catalogue's names and categories, which a misspelled query word is matched
      // to by trigram similarity (product-repository.ts, LEXICAL_QUERY_SQL). Per catalogue.
      await tx.query(`
        CREATE TABLE search_vocabulary (
          catalogue text NOT NULL DEFAULT 'default',
          word text NOT NULL,
          PRIMARY KEY (catalogue, word)
        )`);
      await tx.query("CREATE INDEX search_vocabulary_trigrams ON search_vocabulary USING gin (word gin_trgm_ops)");
      // Kept by the database itself, whatever writes the products (one statement's rows at once):
      // words are added, never removed (a word of a deleted product only leads to nothing).
      await tx.query(`
        CREATE OR REPLACE FUNCTION remember_search_vocabulary() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO search_vocabulary (word)
          SELECT DISTINCT word FROM written_products, ${VOCABULARY_WORDS_SQL}
          ON CONFLICT DO NOTHING;
          RETURN NULL;
        END $$`);
      for (const operation of ["INSERT", "UPDATE"]) {
        await tx.query(`
          CREATE TRIGGER products_search_vocabulary_${operation.toLowerCase()} AFTER ${operation} ON products
          REFERENCING NEW TABLE AS written_products
          FOR EACH STATEMENT EXECUTE FUNCTION remember_search_vocabulary()`);
      }
      await tx.query(
        `INSERT INTO search_vocabulary (word) SELECT DISTINCT word FROM products, ${VOCABULARY_WORDS_SQL} ON CONFLICT DO NOTHING`,
      );
    },
  },
  {
    version: 14,
    name: "synonyms",
    async apply(tx) {
      // A catalogue's sets of equivalent words or phrases (synonym-store.ts), in the order given.
      await tx.query(`
        CREATE TABLE synonym_sets (
          catalogue text NOT NULL DEFAULT 'default',
          position integer NOT NULL,
          terms text[] NOT NULL,
          PRIMARY KEY (catalogue, position)
        )`);
    },
  },
  {
    version: 15,
    name: "search analytics",
    async apply(tx) {
      // Answered searches and the clicks and conversions shops report on them (search-analytics.ts):
      // no caller, no address, only what the request carried. Pruned after ANALYTICS_RETENTION_DAYS.
      await tx.query(`
        CREATE TABLE searches (
          search_id uuid PRIMARY KEY,
          catalogue text NOT NULL DEFAULT 'default',
          query text NOT NULL,
          mode text NOT NULL,
          results integer NOT NULL,
          searched_at timestamptz NOT NULL
        )`);
      await tx.query("CREATE INDEX searches_catalogue_searched_at ON searches (catalogue, searched_at)");
      await tx.query("CREATE INDEX searches_searched_at ON searches (searched_at)");
      await tx.query(`
        CREATE TABLE search_events (
          search_id uuid NOT NULL,
          product_id bigint NOT NULL,
          type text NOT NULL CHECK (type IN ('click', 'conversion')),
          happened_at timestamptz NOT NULL
        )`);
      await tx.query("CREATE INDEX search_events_search_id ON search_events (search_id)");
      await tx.query("CREATE INDEX search_events_happened_at ON search_events (happened_at)");
    },
  },
  {
    version: 16,
    name: "catalogues: products partitioned by catalogue, row-level security; vocabulary, synonyms, analytics per catalogue",
    async apply(tx) {
      await partitionProductsByCatalogue(tx);
      // A bulk import's job writes into one catalogue; every job so far was the default one's.
      await tx.query("ALTER TABLE import_jobs ADD COLUMN catalogue text NOT NULL DEFAULT 'default'");
      await tx.query("ALTER TABLE import_jobs ALTER COLUMN catalogue DROP DEFAULT");
      await relevancePerCatalogue(tx);
    },
  },
  {
    version: 17,
    name: "product attributes",
    async apply(tx) {
      // A product's attributes (domain/attributes.ts): `{}` when it has none, never null. A constant
      // default: adding the column rewrites no row. The GIN index (jsonb_path_ops: `@>` only, about a
      // third of jsonb_ops' size) serves the attribute filters' equality and any-of conditions; it is
      // made on every catalogue's partition, and on those made later.
      await tx.query("ALTER TABLE products ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'::jsonb");
      await tx.query("CREATE INDEX products_attributes ON products USING gin (attributes jsonb_path_ops)");
      // The lexical side of a hybrid search reads products through this view: filters need the attributes there too.
      await tx.query(
        `CREATE OR REPLACE VIEW ${CATALOGUE_WORDS_VIEW} AS SELECT catalogue, id, category, search_text, attributes
         FROM products WHERE catalogue = current_setting('${CATALOGUE_SETTING}', true)`,
      );
    },
  },
  {
    version: 18,
    name: "embedded attributes per catalogue",
    async apply(tx) {
      // The attributes a catalogue embeds with each product's text (domain/attributes.ts
      // checkedEmbeddedAttributes: at most 8 names, in order). None by default: every stored
      // digest stays that of its product's text, nothing is embedded again by this migration.
      await tx.query("ALTER TABLE catalogues ADD COLUMN embedded_attributes text[] NOT NULL DEFAULT '{}'");
    },
  },
  {
    version: 19,
    name: "an index on the price attribute",
    async apply(tx) {
      // A range filter on `price` (the one well-known number attribute, domain/attributes.ts) is
      // found through this index, and ANALYZE keeps statistics of it, from which the planner
      // estimates how many products a range lets through (product-repository.ts chooses its plan
      // by that). Its expression must be the one the filters write: attributeNumberSql.
      for (const key of INDEXED_NUMBER_ATTRIBUTES) {
        await tx.query(`CREATE INDEX products_attribute_${key} ON products (${attributeNumberSql(key)})`);
      }
      // The statistics of the new expression: autovacuum gathers them only once enough rows change.
      await tx.query("ANALYZE products");
    },
  },
  {
    version: 20,
    name: "products' rows kept whole up to a page; in-row binary quantization of long embeddings",
    async apply(tx) {
      const partitions = await tx.query<{ name: string }>(
        "SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'products'::regclass",
      );
      for (const { name } of partitions) await tx.query(`ALTER TABLE ${name} SET (${WHOLE_ROWS})`);
      const [stored] = await tx.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
      // Short embeddings: rows written from now on are kept whole; the others stay as they are.
      if (!stored || stored.dimension < HALF_PRECISION_COPY_FROM_DIMENSION) return;
      // Long ones: adding the column rewrites the table, every row whole. The binary-quantized
      // indexes (vector-index.ts) were on binary_quantize(embedding_half): each is dropped before
      // the rewrite (which would build it again for nothing), then built on the column, under its
      // own name and settings.
      const indexes = await tx.query<{ name: string; definition: string; rows: number | string }>(
        `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition, greatest(t.reltuples, 0) AS rows
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
         WHERE i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'products'::regclass)
           AND pg_get_indexdef(c.oid) LIKE '%binary_quantize(embedding_half)%'`,
      );
      for (const index of indexes) await tx.query(`DROP INDEX ${index.name}`);
      await addBinaryQuantizedCopy(tx, stored.dimension);
      for (const index of indexes) {
        // The memory a build of its kind and size is given (an IVFFlat build's k-means refuses to
        // start without room for its sample: 270 MB at 1,000,000 products).
        const kind = kindOfName(index.name, stored.dimension) === "hnsw-bq" ? "hnsw-bq" : "ivf-bq";
        const memory = buildMemoryFor(indexTarget(stored.dimension, kind) as IndexTarget, Number(index.rows));
        await tx.query(`SET LOCAL maintenance_work_mem = '${memory}'`);
        await tx.query(
          index.definition.replace(/\(\(binary_quantize\(embedding_half\)\)::bit\([0-9]+\)\)/, BINARY_QUANTIZED_COLUMN),
        );
      }
    },
  },
  {
    version: 21,
    name: "query embeddings stored as pgvector's binary format",
    async apply(tx) {
      // A cached query's vector is written and read whole, never compared in SQL: stored as the
      // bytes of pgvector's binary format (vector_send), nothing parses it as text on its way in or
      // out (PGlite stored 8 of 384 dimensions in 2.0 ms instead of 4.5). Entries are kept.
      await tx.query("ALTER TABLE query_embeddings ALTER COLUMN embedding TYPE bytea USING vector_send(embedding)");
    },
  },
  {
    version: 22,
    name: "a filter's products ranked where they are found",
    async apply(tx) {
      // The exact plan of a filtered search (product-repository.ts) ranks the products its filter
      // lets through by their distance in this view, then reads only the best from `products`: it
      // read every one of them twice (once here for its id, once again by id for its distance), 35 ms
      // of a 5 % filter's search at 100,000 × 3072 against 22 ms now.
      await defineWordsView(tx);
    },
  },
];

/**
 * Number attributes with an index of their own (migration 19), served to range filters: the
 * well-known `price`. A range on any other attribute is read from the rows the other conditions leave.
 */
export const INDEXED_NUMBER_ATTRIBUTES = ["price"] as const;

/**
 * An attribute's number as SQL (NULL when the product has no such attribute or it is not a number:
 * a text "59.90" is no number), the key written into the text: an index on this expression serves
 * a condition only when the condition's expression is the same, and a parameter never is. Keys are
 * ATTRIBUTE_KEY's (checked again here, as they go into the SQL).
 */
export function attributeNumberSql(key: string): string {
  if (!ATTRIBUTE_KEY.test(key)) throw new Error(`not an attribute key: ${JSON.stringify(key)}`);
  return `(CASE WHEN jsonb_typeof(attributes -> '${key}') = 'number' THEN (attributes -> '${key}')::numeric END)`;
}

/** The catalogue the contract's `/products…` routes stand for; every product from before catalogues is in it. */
const DEFAULT_CATALOGUE_NAME = "default";

/**
 * The role every product statement runs as (`SET LOCAL ROLE`, product-repository.ts): row-level
 * security confines it to the rows of the catalogue named by CATALOGUE_SETTING. Superusers and a
 * table's owner are never confined (FORCE ROW LEVEL SECURITY would confine the owner, but not a
 * superuser, and the service often connects as one), so the statements must run as a role that is
 * neither: this one, made NOLOGIN by the migration, and granted to the service's user.
 */
export const CATALOGUE_ROLE = "sku_search_catalogue";

/** The per-transaction setting (set_config(..., true)) naming the catalogue the policy lets CATALOGUE_ROLE see. */
export const CATALOGUE_SETTING = "sku_search.catalogue";

/**
 * The lexical side of hybrid search reads products through this view, and a filtered search finds
 * the products its filter lets through here. Row-level security keeps an index from serving a
 * condition whose operator is not leakproof (`@@`, pg_trgm's, every jsonb operator: `@>` too), as
 * that operator would see rows before the policy has filtered them: a GIN index scan under the
 * policy became a scan of the catalogue's whole heap (6 kB a row at 3072 dimensions). The view runs
 * with its owner's rights (not confined) but carries the policy's own condition as a plain one, so
 * the planner folds both into a one-time filter on the setting and keeps the index. What it gives
 * is ids, words, attributes and vectors (a filtered search ranks its products here); the products
 * themselves are then read from `products`, under the policy.
 */
export const CATALOGUE_WORDS_VIEW = "product_words";

/**
 * (Re)defines CATALOGUE_WORDS_VIEW over the columns `products` has now: `embedding`, and from 512
 * dimensions `embedding_half` (what a filtered search ranks by), besides the words and attributes.
 * A re-embed drops `embedding`, and the view with it (embedding-space.ts): it defines the view
 * again. The role is granted the view here when it exists (otherwise ensureCatalogueRole does).
 */
export async function defineWordsView(tx: SqlClient): Promise<void> {
  const [state] = await tx.query<{ half: boolean; role: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'products'::regclass
                      AND attname = 'embedding_half' AND NOT attisdropped) AS half,
            EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS role`,
    [CATALOGUE_ROLE],
  );
  await tx.query(`DROP VIEW IF EXISTS ${CATALOGUE_WORDS_VIEW}`);
  await tx.query(
    `CREATE VIEW ${CATALOGUE_WORDS_VIEW} AS
     SELECT catalogue, id, category, search_text, attributes, embedding${state?.half ? ", embedding_half" : ""}
     FROM products WHERE catalogue = current_setting('${CATALOGUE_SETTING}', true)`,
  );
  if (state?.role) await tx.query(`GRANT SELECT ON ${CATALOGUE_WORDS_VIEW} TO ${CATALOGUE_ROLE}`);
}

/**
 * The storage parameter of every catalogue's partition of `products`: a row's values are moved out
 * of it (TOAST) only once it would pass a page (8160 bytes), not PostgreSQL's default of 2 kB.
 *
 * Why: past 2 kB PostgreSQL moves every text or jsonb value of more than a few bytes out of the
 * row, largest first, until the row fits or nothing is left to move. From 512 dimensions the
 * in-row half-precision copy alone passes 2 kB (6 kB at 3072), so a product's name, description,
 * attributes, words and digest were each stored apart, and every row a search read cost a lookup
 * in the TOAST index and table for each: a filtered window of 2,000 candidates took 20,500 buffer
 * reads and 52 ms, and 4,600 and 24 ms kept whole (PostgreSQL 15, 100,000 × 3072). The full
 * `vector` (12 kB at 3072) still goes out of the row, as it must. At the offline model's 384
 * dimensions a row with a long description passed 2 kB too, and it was the `vector` (1.5 kB) that
 * went out, read back by every exact scan.
 */
const WHOLE_ROWS = "toast_tuple_target = 8160";

/** The table holding one catalogue's products (a partition of `products`), from the catalogue's id. */
export function cataloguePartition(catalogueId: number): string {
  if (!Number.isSafeInteger(catalogueId) || catalogueId < 1) throw new Error(`not a catalogue id: ${catalogueId}`);
  return `products_c${catalogueId}`;
}

/**
 * Makes the empty partition of a new catalogue (its primary key on id; the parent's indexes come
 * with it), with the triggers that keep the search vocabulary for the statements that write into
 * it directly (an import's COPY, product-repository.ts): a partition's statements fire its own
 * statement triggers, not the parent's.
 */
export async function createCataloguePartition(tx: SqlClient, catalogueId: number, name: string): Promise<void> {
  const partition = cataloguePartition(catalogueId);
  await tx.query(
    `CREATE TABLE ${partition} PARTITION OF products (PRIMARY KEY (id))
     FOR VALUES IN (${quoteLiteral(name)}) WITH (${WHOLE_ROWS})`,
  );
  await keepSearchVocabulary(tx, partition);
}

/** The statement triggers on `table` (products, or a catalogue's partition) that add its written rows' words to the vocabulary. */
async function keepSearchVocabulary(tx: SqlClient, table: string): Promise<void> {
  for (const operation of ["INSERT", "UPDATE"]) {
    await tx.query(`
      CREATE TRIGGER products_search_vocabulary_${operation.toLowerCase()} AFTER ${operation} ON ${table}
      REFERENCING NEW TABLE AS written_products
      FOR EACH STATEMENT EXECUTE FUNCTION remember_search_vocabulary()`);
  }
}

/**
 * The search vocabulary as CATALOGUE_ROLE may read it: the words of the catalogue CATALOGUE_SETTING
 * names, and no other's (the role may add words, never read the table itself). Like
 * CATALOGUE_WORDS_VIEW, it reads with its owner's rights and carries the condition as a plain one,
 * so the trigram index still serves `%` (pg_trgm's operators are not leakproof).
 */
export const CATALOGUE_VOCABULARY_VIEW = "catalogue_vocabulary";

/**
 * Migration 16, after the partitioning: the search vocabulary (migration 13), the synonyms (14) and
 * the analytics (15) were made with a catalogue column that could only be the default one; now
 * each write names its catalogue (the defaults go), and
 * - the vocabulary's trigger adds each written row's words to its own catalogue's, on `products`
 *   and on each catalogue's partition (the default one's kept migration 13's triggers), read by
 *   the role through CATALOGUE_VOCABULARY_VIEW: a typo is only ever read as a word of the
 *   catalogue searched;
 * - a click or conversion belongs to the catalogue it was reported in (an event so far: its
 *   search's, else the default one), and counts only for a search of that catalogue.
 */
async function relevancePerCatalogue(tx: SqlClient): Promise<void> {
  await tx.query(`
    CREATE OR REPLACE FUNCTION remember_search_vocabulary() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_vocabulary (catalogue, word)
      SELECT DISTINCT catalogue, word FROM written_products, ${VOCABULARY_WORDS_SQL}
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`);
  await keepSearchVocabulary(tx, "products");
  for (const table of ["search_vocabulary", "synonym_sets", "searches"]) {
    await tx.query(`ALTER TABLE ${table} ALTER COLUMN catalogue DROP DEFAULT`);
  }
  await tx.query(
    `CREATE VIEW ${CATALOGUE_VOCABULARY_VIEW} AS SELECT catalogue, word FROM search_vocabulary
     WHERE catalogue = current_setting('${CATALOGUE_SETTING}', true)`,
  );
  await tx.query("ALTER TABLE search_events ADD COLUMN catalogue text");
  await tx.query(
    `UPDATE search_events e SET catalogue = coalesce(
       (SELECT s.catalogue FROM searches s WHERE s.search_id = e.search_id), '${DEFAULT_CATALOGUE_NAME}')`,
  );
  await tx.query("ALTER TABLE search_events ALTER COLUMN catalogue SET NOT NULL");
}

/** A catalogue name as an SQL literal: names are `^[a-z0-9][a-z0-9_-]{0,62}$` (checked again here). */
function quoteLiteral(name: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) throw new Error(`not a catalogue name: ${JSON.stringify(name)}`);
  return `'${name}'`;
}

/**
 * Migration 16. The products table becomes the partition of the default catalogue, its rows, ids
 * and embeddings untouched (no row is rewritten or embedded again: the table is attached as it is,
 * after one scan that checks its rows belong there), under a new `products` partitioned by
 * catalogue, which has the same columns (LIKE: generated ones and storage too) and a catalogue.
 *
 * - PostgreSQL 15 has no identity column on a partitioned table: ids come from the sequence
 *   `products_id_seq`, which carries on from where the identity's left off, so ids stay unique across
 *   catalogues and no deleted product's id comes back.
 * - Each partition has its primary key on id; skus are unique per catalogue (catalogue, sku).
 * - Each catalogue's partition gets its own vector index (vector-index.ts), built when that catalogue
 *   is large enough; an index of the old table is renamed to the default catalogue's.
 * - Row-level security on `products`: CATALOGUE_ROLE sees and writes only rows of the catalogue the
 *   transaction's CATALOGUE_SETTING names (ensureCatalogueRole).
 */
async function partitionProductsByCatalogue(tx: SqlClient): Promise<void> {
  await tx.query(`
    CREATE TABLE catalogues (
      id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  const [created] = await tx.query<{ id: number }>("INSERT INTO catalogues (name) VALUES ($1) RETURNING id", [
    DEFAULT_CATALOGUE_NAME,
  ]);
  const partition = cataloguePartition(Number(created?.id));
  const [next] = await tx.query<{ last_value: number | string; is_called: boolean }>(
    "SELECT last_value, is_called FROM products_id_seq",
  );
  await tx.query(`ALTER TABLE products RENAME TO ${partition}`);
  await tx.query(`ALTER TABLE ${partition} ALTER COLUMN id DROP IDENTITY`);
  await tx.query(`ALTER TABLE ${partition} ADD COLUMN catalogue text NOT NULL DEFAULT '${DEFAULT_CATALOGUE_NAME}'`);
  // The rows keep their value (stored with the column); the parent must not default to any catalogue.
  await tx.query(`ALTER TABLE ${partition} ALTER COLUMN catalogue DROP DEFAULT`);
  await tx.query(`ALTER TABLE ${partition} RENAME CONSTRAINT products_pkey TO ${partition}_pkey`);
  await tx.query(
    `CREATE TABLE products (LIKE ${partition} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE)
     PARTITION BY LIST (catalogue)`,
  );
  await tx.query("CREATE SEQUENCE products_id_seq AS bigint OWNED BY products.id");
  await tx.query("SELECT setval('products_id_seq', $1, $2)", [Number(next?.last_value ?? 1), next?.is_called ?? false]);
  await tx.query("ALTER TABLE products ALTER COLUMN id SET DEFAULT nextval('products_id_seq')");
  await tx.query(`ALTER TABLE products ATTACH PARTITION ${partition} FOR VALUES IN ('${DEFAULT_CATALOGUE_NAME}')`);
  // The parent's indexes: each takes the partition's equivalent one where it has it (renamed first).
  for (const index of ["products_category_id", "products_search_text"]) {
    await tx.query(`ALTER INDEX IF EXISTS ${index} RENAME TO ${partition}_${index.slice("products_".length)}`);
  }
  await tx.query("CREATE INDEX products_category_id ON products (category, id)");
  await tx.query("CREATE INDEX products_search_text ON products USING gin (search_text)");
  await tx.query("CREATE UNIQUE INDEX products_catalogue_sku ON products (catalogue, sku) WHERE sku IS NOT NULL");
  await tx.query("DROP INDEX products_sku");
  const vectorIndexes = await tx.query<{ name: string }>(
    `SELECT indexname AS name FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = $1 AND indexname LIKE 'products\\_embedding\\_%'`,
    [partition],
  );
  for (const { name } of vectorIndexes) {
    await tx.query(`ALTER INDEX ${name} RENAME TO ${partition}_${name.slice("products_".length)}`);
  }
  await tx.query("ALTER TABLE products ENABLE ROW LEVEL SECURITY");
  await tx.query(
    `CREATE VIEW ${CATALOGUE_WORDS_VIEW} AS SELECT catalogue, id, category, search_text FROM products
     WHERE catalogue = current_setting('${CATALOGUE_SETTING}', true)`,
  );
}

/**
 * Makes sure CATALOGUE_ROLE exists, the service's user may become it, it may do what product
 * statements do, and the policy confines it: at every start, changing only what is missing (a
 * database restored by pg_restore into a server without the role lost its grants and policy).
 * Roles belong to the whole server: a server with several databases shares the one role.
 */
async function ensureCatalogueRole(tx: SqlClient): Promise<void> {
  const [me] = await tx.query<{ superuser: boolean; role_exists: boolean }>(
    `SELECT rolsuper AS superuser, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS role_exists
     FROM pg_roles WHERE rolname = current_user`,
    [CATALOGUE_ROLE],
  );
  if (!me?.role_exists) {
    await tx.query(`
      DO $$ BEGIN
        CREATE ROLE ${CATALOGUE_ROLE} NOLOGIN;
      EXCEPTION
        WHEN duplicate_object THEN NULL; -- made meanwhile by the migration of another database
        WHEN insufficient_privilege THEN
          RAISE EXCEPTION 'sku-search needs the role ${CATALOGUE_ROLE}, and % may not create roles', current_user
            USING HINT = 'As a superuser: CREATE ROLE ${CATALOGUE_ROLE} NOLOGIN; GRANT ${CATALOGUE_ROLE} TO ' || current_user || ';';
      END $$`);
  }
  const [state] = await tx.query<Record<string, boolean>>(
    `SELECT pg_has_role(current_user, $1, 'MEMBER') AS member,
            has_schema_privilege($1, current_schema(), 'USAGE') AS schema,
            has_table_privilege($1, 'products', 'SELECT, INSERT, UPDATE, DELETE') AS products,
            has_sequence_privilege($1, 'products_id_seq', 'USAGE') AS sequence,
            has_table_privilege($1, 'catalogues', 'SELECT') AS catalogues,
            has_table_privilege($1, 'embedding_space', 'SELECT') AS space,
            has_table_privilege($1, 'idempotency_keys', 'SELECT, INSERT, UPDATE') AS idempotency,
            has_table_privilege($1, '${CATALOGUE_WORDS_VIEW}', 'SELECT') AS words,
            has_table_privilege($1, 'search_vocabulary', 'INSERT') AS vocabulary,
            has_table_privilege($1, '${CATALOGUE_VOCABULARY_VIEW}', 'SELECT') AS vocabulary_view,
            EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = current_schema() AND tablename = 'products'
                    AND policyname = 'products_of_the_catalogue') AS policy`,
    [CATALOGUE_ROLE],
  );
  const grants: [keyof NonNullable<typeof state>, string][] = [
    ["schema", "USAGE ON SCHEMA %s"],
    ["products", "SELECT, INSERT, UPDATE, DELETE ON products"],
    ["sequence", "USAGE ON SEQUENCE products_id_seq"],
    ["catalogues", "SELECT ON catalogues"],
    ["space", "SELECT ON embedding_space"],
    ["idempotency", "SELECT, INSERT, UPDATE ON idempotency_keys"],
    ["words", `SELECT ON ${CATALOGUE_WORDS_VIEW}`],
    // The vocabulary's trigger adds the words of what the role writes; it reads them through the view.
    ["vocabulary", "INSERT ON search_vocabulary"],
    ["vocabulary_view", `SELECT ON ${CATALOGUE_VOCABULARY_VIEW}`],
  ];
  for (const [privilege, grant] of grants) {
    if (state?.[privilege]) continue;
    const [{ schema } = { schema: "public" }] = await tx.query<{ schema: string }>(
      "SELECT quote_ident(current_schema()) AS schema",
    );
    await tx.query(`GRANT ${grant.replace("%s", schema)} TO ${CATALOGUE_ROLE}`);
  }
  if (!state?.policy) {
    const condition = `catalogue = current_setting('${CATALOGUE_SETTING}', true)`;
    await tx.query(
      `CREATE POLICY products_of_the_catalogue ON products TO ${CATALOGUE_ROLE} USING (${condition}) WITH CHECK (${condition})`,
    );
  }
  // A superuser may become any role; another user must be a member (its CREATEROLE lets it grant).
  if (!me?.superuser && !state?.member) await tx.query(`GRANT ${CATALOGUE_ROLE} TO CURRENT_USER`);
}

/**
 * The words of a product's name and category that the search vocabulary keeps (a FROM item over a
 * row with `name` and `category`): lower case (the `simple` configuration), letters only, 3 to 40 of them.
 */
const VOCABULARY_WORDS_SQL = `unnest(tsvector_to_array(to_tsvector('simple', name || ' ' || category))) AS word
  WHERE word ~ '^[[:alpha:]]{3,40}$'`;

/**
 * The words of a product for lexical search: name (weight A), category (B) and description (C),
 * each stemmed both as English and as Spanish (each without its language's stop words), so that
 * an English or a Spanish catalogue matches either language's queries. The query side is
 * LEXICAL_QUERY_SQL in product-repository.ts, with the same configurations.
 */
export const TEXT_SEARCH_CONFIGS = ["english", "spanish"] as const;
const SEARCH_TEXT_SQL = ["name", "category", "description"]
  .map((field, i) => {
    const vectors = TEXT_SEARCH_CONFIGS.map((config) => `to_tsvector('${config}', ${field})`).join(" || ");
    return `setweight(${vectors}, '${"ABC"[i]}')`;
  })
  .join(" || ");

/** contentDigest (domain/product.ts) as it was at migration 5: SHA-256 hex of name, a newline and description, as UTF-8. */
const CONTENT_DIGEST_SQL = "encode(sha256(convert_to(name || E'\\n' || description, 'UTF8')), 'hex')";

/**
 * The part of the embedded text a row of `products` gets from the attributes its catalogue embeds,
 * in SQL, as domain/attributes.ts embeddedAttributesText writes it: "key: value" for each name of
 * the catalogue's `embedded_attributes` the product has, in that order, joined by ". " (a list's
 * items by ", "; PostgreSQL prints a jsonb number in plain decimals and a boolean as true/false, as
 * the domain does); a value that writes as nothing is left out; NULL when none is there.
 */
const EMBEDDED_ATTRIBUTES_TEXT_SQL = `(
  SELECT string_agg(part.key || ': ' || part.value, '. ' ORDER BY part.position)
  FROM (
    SELECT embedded.key, embedded.position,
      CASE jsonb_typeof(products.attributes -> embedded.key)
        WHEN 'array' THEN (
          SELECT string_agg(item.value, ', ' ORDER BY item.position)
          FROM jsonb_array_elements_text(products.attributes -> embedded.key) WITH ORDINALITY AS item(value, position))
        ELSE products.attributes ->> embedded.key
      END AS value
    FROM unnest((SELECT c.embedded_attributes FROM catalogues c WHERE c.name = products.catalogue))
      WITH ORDINALITY AS embedded(key, position)
  ) part
  WHERE part.value <> '')`;

/**
 * contentDigest (domain/product.ts) of a product's text as it is now, in SQL, over a row of
 * `products` (named so): SHA-256 hex of "name. category. description" (an empty description left
 * out) and the attributes its catalogue embeds (EMBEDDED_ATTRIBUTES_TEXT_SQL), as UTF-8. A stored
 * digest that differs is that of an older text (or of the text as the service embedded it before
 * the category, or those attributes, were part of it): re-embedding gives the product a vector of
 * its current text.
 */
export const EMBEDDED_TEXT_DIGEST_SQL = `encode(sha256(convert_to(concat_ws('. ', products.name, products.category,
  NULLIF(products.description, ''), ${EMBEDDED_ATTRIBUTES_TEXT_SQL}), 'UTF8')), 'hex')`;

/** The version of every migration, in order (what `schema_migrations` holds once all are applied). */
export const MIGRATION_VERSIONS: readonly number[] = MIGRATIONS.map((migration) => migration.version);

/** The migrations this program knows that the database has not recorded (none once it is ready to serve). */
export async function missingMigrations(client: SqlClient): Promise<number[]> {
  const rows = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
  const applied = new Set(rows.map((row) => Number(row.version)));
  return MIGRATION_VERSIONS.filter((version) => !applied.has(version));
}

/** The schema version this program needs (its last migration). */
export const SCHEMA_VERSION = Math.max(...MIGRATION_VERSIONS);

/** A read-only database (a hot standby) whose schema is older than this program needs: it cannot be migrated there. */
export class SchemaBehind extends Error {
  constructor(
    readonly stored: number,
    readonly needed: number,
  ) {
    super(
      `The database's schema is at version ${stored}, but this program needs version ${needed}; the database is a ` +
        "read-only hot standby, where migrations cannot run. Start the service (or any command) on the primary " +
        "first: it migrates the schema, and the standby replays it. Then start this one again.",
    );
    this.name = "SchemaBehind";
  }
}

/**
 * On a read-only database (a hot standby): checks, changing nothing, that every migration is
 * applied (else SchemaBehind) and that the stored embeddings are of `space` (else EmbeddingSpaceMismatch).
 */
export async function checkSchema(client: SqlClient, space: EmbeddingSpace): Promise<void> {
  let applied: number[];
  try {
    applied = (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).map((row) =>
      Number(row.version),
    );
  } catch (error) {
    if ((error as { code?: unknown }).code !== UNDEFINED_TABLE) throw error;
    applied = [];
  }
  if (MIGRATION_VERSIONS.some((version) => !applied.includes(version))) {
    throw new SchemaBehind(Math.max(0, ...applied), SCHEMA_VERSION);
  }
  const [stored] = await client.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
  if (!stored) throw new Error("embedding_space is empty: the schema was altered by hand");
  const found = { model: stored.model, dimension: Number(stored.dimension) };
  if (found.model !== space.model || found.dimension !== space.dimension)
    throw new EmbeddingSpaceMismatch(found, space);
}

const UNDEFINED_TABLE = "42P01";

/**
 * From this many dimensions the products table also keeps `embedding_half`, a half-precision copy
 * of each embedding stored in the row itself, which search scans before re-ranking exactly.
 *
 * Why: PostgreSQL moves any value that makes a row pass ~2 kB out of the row (TOAST). A `vector`
 * over ~500 dimensions is such a value, so an exact scan fetches every vector piece by piece:
 * bench/search.ts measured p95 ≈ 150 ms (PostgreSQL) and ≈ 280 ms (PGlite) at 12,430 products of
 * 3072 dimensions. A 3072-d `halfvec` (6 kB) still fits in an 8 kB page and, with STORAGE MAIN,
 * stays in the row.
 */
export const HALF_PRECISION_COPY_FROM_DIMENSION = 512;

/**
 * Adds `embedding_half` when `dimension` calls for it: generated from `embedding`, so every insert
 * keeps it right, and STORAGE MAIN so it stays in the row. The existing rows are rewritten (setting
 * `embedding` to itself recomputes the copy) so that theirs is stored in the row too.
 */
export async function addHalfPrecisionCopy(tx: SqlClient, dimension: number): Promise<void> {
  if (dimension < HALF_PRECISION_COPY_FROM_DIMENSION) return;
  await tx.query(`ALTER TABLE products ${halfPrecisionColumn(dimension)}`);
  await tx.query("ALTER TABLE products ALTER COLUMN embedding_half SET STORAGE MAIN");
  await tx.query("UPDATE products SET embedding = embedding");
}

/**
 * The column holding each long embedding's binary quantization (`bit(D)`, one bit a dimension: 1
 * where the component is above 0), which the binary-quantized indexes are built on and searches
 * order their candidates by (vector-index.ts).
 *
 * Why a column rather than an index on the expression `binary_quantize(embedding_half)`: PostgreSQL
 * evaluates a query's ORDER BY expression for every row an index scan yields, even when the index
 * gives the order, so each candidate quantized its 3072 half-precision components again, about 6 µs
 * a row: 61 % of a scan yielding 2,000 candidates (a browsing search's window, perf on PostgreSQL 15
 * at 100,000 × 3072). Stored, the expression is a Hamming distance of 384 bytes already in the row.
 */
export const BINARY_QUANTIZED_COLUMN = "embedding_bits";

/**
 * Adds BINARY_QUANTIZED_COLUMN when `dimension` calls for it (as addHalfPrecisionCopy, from 512
 * dimensions): generated from `embedding` (a generated column cannot read another), STORAGE MAIN
 * in the same statement, so that the one rewrite of the table that computes it keeps it in the row.
 */
export async function addBinaryQuantizedCopy(tx: SqlClient, dimension: number): Promise<void> {
  if (dimension < HALF_PRECISION_COPY_FROM_DIMENSION) return;
  await tx.query(`ALTER TABLE products ${binaryQuantizedColumn(dimension)}`);
}

/**
 * Both in-row copies of a long embedding, the half-precision one (addHalfPrecisionCopy's) and the
 * bits (addBinaryQuantizedCopy's), in one statement: one rewrite of the table, each copy stored in
 * the row by it. What a re-embed to another dimension adds after dropping the old ones with the old
 * `embedding` (embedding-space.ts): added one after the other, with the half-precision copy's
 * storage set only after its rewrite, they took three rewrites, each holding every search back.
 */
export async function addInRowCopies(tx: SqlClient, dimension: number): Promise<void> {
  if (dimension < HALF_PRECISION_COPY_FROM_DIMENSION) return;
  await tx.query(`
    ALTER TABLE products ${halfPrecisionColumn(dimension)}, ALTER COLUMN embedding_half SET STORAGE MAIN,
      ${binaryQuantizedColumn(dimension)}`);
}

/** The ALTER TABLE clause adding `embedding_half`, generated from `embedding`. */
function halfPrecisionColumn(dimension: number): string {
  return `ADD COLUMN embedding_half halfvec(${dimension}) GENERATED ALWAYS AS (embedding::halfvec(${dimension})) STORED`;
}

/** The ALTER TABLE clauses adding BINARY_QUANTIZED_COLUMN, kept in the row. */
function binaryQuantizedColumn(dimension: number): string {
  return `ADD COLUMN ${BINARY_QUANTIZED_COLUMN} bit(${dimension})
      GENERATED ALWAYS AS (binary_quantize(embedding)::bit(${dimension})) STORED,
    ALTER COLUMN ${BINARY_QUANTIZED_COLUMN} SET STORAGE MAIN`;
}

/** A zero vector has no direction: cosine is undefined for it and pgvector does not index it. */
export const NOT_ZERO_CHECK = "CONSTRAINT products_embedding_not_zero CHECK (vector_norm(embedding) > 0)";

/**
 * Makes the database ready for the configured embedder: the pgvector extension, then every pending
 * migration, all in one transaction under an advisory lock, so replicas starting together wait for
 * each other and exactly one applies each migration. Throws EmbeddingSpaceMismatch when the stored
 * embeddings come from another model or dimension.
 */
export async function prepareDatabase(
  client: SqlClient,
  space: EmbeddingSpace,
  { numberIndexes = [] }: { numberIndexes?: readonly string[] } = {},
): Promise<void> {
  const stored = await applyMigrations(client, space);
  if (stored.model !== space.model || stored.dimension !== space.dimension) {
    throw new EmbeddingSpaceMismatch(stored, space);
  }
  await indexNumberAttributes(client, numberIndexes);
}

/**
 * Makes the index of each number attribute in `keys` (INDEXED_NUMBER_ATTRIBUTES) that has none yet,
 * on `products` (and so on every catalogue's partition), on the expression range filters write
 * (attributeNumberSql), as migration 19 made `price`'s; then ANALYZE, whose statistics of the
 * expression the planner estimates ranges from. An index is only ever added here: an attribute
 * left out of the setting keeps its index (drop it with `DROP INDEX`), so that instances started
 * with different settings never undo each other's. The build holds the schema's lock and blocks
 * product writes while it runs (about a second per 100,000 products).
 */
async function indexNumberAttributes(client: SqlClient, keys: readonly string[]): Promise<void> {
  const wanted = keys.filter((key) => !(INDEXED_NUMBER_ATTRIBUTES as readonly string[]).includes(key));
  if (wanted.length === 0) return;
  await client.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
    let built = 0;
    for (const key of wanted) {
      const name = numberIndexName(key);
      const [found] = await tx.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [name]);
      if (found?.present) continue;
      await tx.query(`CREATE INDEX ${name} ON products (${attributeNumberSql(key)})`);
      built++;
    }
    if (built > 0) await tx.query("ANALYZE products");
  });
}

/**
 * Of `keys` (INDEXED_NUMBER_ATTRIBUTES), those whose index the database holds: what a search may
 * trust the planner's estimate of. An instance on a standby, or started with a key the primary's
 * instances never indexed, leaves the others to the sampled estimate (product-repository.ts).
 */
export async function indexedNumberAttributes(client: SqlClient, keys: readonly string[]): Promise<string[]> {
  if (keys.length === 0) return [];
  const rows = await client.query<{ key: string }>(
    "SELECT key FROM unnest($1::text[], $2::text[]) AS wanted(key, name) WHERE to_regclass(name) IS NOT NULL",
    [[...keys], keys.map(numberIndexName)],
  );
  return rows.map((row) => row.key);
}

/** The name of a number attribute's index: `products_attribute_<key>`, shortened with a digest past PostgreSQL's 63 bytes. */
export function numberIndexName(key: string): string {
  const name = `products_attribute_${key}`;
  if (name.length <= 63) return name;
  const digest = new Bun.CryptoHasher("sha256").update(key).digest("hex").slice(0, 8);
  return `${name.slice(0, 54)}_${digest}`;
}

/**
 * Runs pending migrations and returns the embedding space the database records (`space` sets the
 * dimension of a new database's embeddings; an existing one keeps its own). `through`: stop after
 * that version (a test of a migration starts from the schema before it, with its data).
 */
export async function applyMigrations(
  client: SqlClient,
  space: EmbeddingSpace,
  { through }: { through?: number } = {},
): Promise<EmbeddingSpace> {
  assertDimension(space.dimension);
  return client.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`);
    await tx.query("CREATE EXTENSION IF NOT EXISTS vector");
    await assertExtensionsInReach(tx);
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const applied = await tx.query<{ version: number }>("SELECT version FROM schema_migrations");
    const done = new Set(applied.map((row) => row.version));
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version) || (through !== undefined && migration.version > through)) continue;
      await migration.apply(tx, space);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
    }
    if (through === undefined) await ensureCatalogueRole(tx);
    const [row] = await tx.query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space");
    if (!row) throw new Error("embedding_space is empty: the schema was altered by hand");
    return { model: row.model, dimension: row.dimension };
  });
}

/**
 * ExtensionOutOfReach for the first of the extensions the schema needs that is installed outside the
 * search_path (one not installed yet is made by its migration, in the search_path's first schema).
 */
async function assertExtensionsInReach(tx: SqlClient): Promise<void> {
  const [outside] = await tx.query<{ extension: string; schema: string; path: string }>(
    `SELECT e.extname AS extension, n.nspname AS schema, current_setting('search_path') AS path
     FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname IN ('vector', 'pg_trgm') AND n.nspname <> ALL (current_schemas(true))
     ORDER BY e.extname DESC LIMIT 1`,
  );
  if (outside) throw new ExtensionOutOfReach(outside.extension, outside.schema, outside.path);
}

function assertDimension(dimension: number): void {
  if (!Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
    throw new Error(`embedding dimension must be an integer from 1 to ${MAX_DIMENSION}, got ${dimension}`);
  }
}
