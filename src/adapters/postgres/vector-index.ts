import type { VectorIndex, VectorIndexAvailability, VectorIndexStatus } from "../../ports/vector-index.ts";
import { HALF_PRECISION_COPY_FROM_DIMENSION } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

/**
 * The approximate nearest-neighbour index of the products' embeddings (pgvector HNSW) on PostgreSQL
 * and PGlite: the primitives of the VectorIndex port. When it is built is decided by the domain's
 * MaintainVectorIndex; this adapter says which index fits the stored dimension, whether a build
 * here may be automatic, and builds one build at a time.
 *
 * Which index: HNSW (m 16, ef_construction by indexTarget) on the column search already scans, so one query
 * shape serves with and without it and the planner picks the index when it exists:
 * - under HALF_PRECISION_COPY_FROM_DIMENSION dimensions (the offline model's 384): `embedding`
 *   itself (`vector_cosine_ops`; pgvector indexes `vector` up to 2,000 dimensions);
 * - from there up to 4,000 dimensions (the spec's 3072): the in-row half-precision copy
 *   `embedding_half` (`halfvec_cosine_ops`);
 * - past 4,000 dimensions: none (pgvector indexes no longer vectors); search stays exact.
 * Search re-ranks the index's candidates by the exact cosine of the full vectors, so the scores in
 * the answers are exact (product-repository.ts). bench/index.ts measured the choices (HNSW against
 * binary quantization, ef_search, re-rank depth, filtered plans); README "Vector index" has figures.
 *
 * On a PostgreSQL server it is built CONCURRENTLY (reads and writes go on) under an advisory lock,
 * so only one process builds. PGlite is one backend: queries wait for the build (≈ 12 s at
 * 12,430 × 384), so there the half-precision index (about 300 s at 10,000 × 3072 in WASM,
 * GUIDE.md) is built only on the operator's demand ("on-demand").
 */

export interface VectorSearchSettings {
  /** hnsw.ef_search: the candidate list of an index scan; larger is slower and finds more true neighbours. */
  efSearch: number;
  /** A category filter matching at most this many products is answered by an exact scan of them. */
  filterExactMaxRows: number;
}

export const INDEX_NAME = "products_embedding_hnsw";
/** pgvector's largest indexable `halfvec`. */
const MAX_INDEXED_DIMENSION = 4_000;
const HNSW_M = 16;
/** Any constant shared by every replica: whoever holds it builds the index. */
const BUILD_LOCK_KEY = 8_310_427_734_116;

interface IndexTarget {
  column: string;
  operatorClass: string;
  /** The graph's build-time candidate list: larger builds slower and finds true neighbours at a smaller ef_search. */
  efConstruction: number;
}

/**
 * The column, operator class and ef_construction the index is built with for `dimension`, or
 * undefined when none can be. At 100,000 × 3072 (bench/scale.ts, one load, ef_search 100), a graph
 * built with ef_construction 64 kept recall@10 0.974 (0.999 on an earlier load of the same data:
 * its quality varies from build to build), with 128 it kept 1.000, for a build 1.7 times as long;
 * the offline model's 384-d vectors keep 0.99 with 64, and PGlite's build blocks queries, so 64 there.
 */
export function indexTarget(dimension: number): IndexTarget | undefined {
  if (dimension > MAX_INDEXED_DIMENSION) return undefined;
  return dimension >= HALF_PRECISION_COPY_FROM_DIMENSION
    ? { column: "embedding_half", operatorClass: "halfvec_cosine_ops", efConstruction: 128 }
    : { column: "embedding", operatorClass: "vector_cosine_ops", efConstruction: 64 };
}

/**
 * Session settings every connection that searches must have (set when the connection opens):
 * the index scan's ef_search, and iterative scans (pgvector 0.8), so that an index scan keeps
 * going until the query's LIMIT is reached, past ef_search and past rows a filter drops.
 */
export function vectorSessionSettings(settings: Pick<VectorSearchSettings, "efSearch">): Record<string, string> {
  return { "hnsw.ef_search": String(settings.efSearch), "hnsw.iterative_scan": "relaxed_order" };
}

export interface SqlVectorIndexOptions {
  /** True for a PostgreSQL server (build CONCURRENTLY, under an advisory lock); false for PGlite. */
  server: boolean;
  /** False behind a transaction pooler, where a session's lock cannot be held (default: true on a server). */
  advisoryLock?: boolean;
  /**
   * A connection for the build, without a statement time limit (a build takes minutes at 100,000
   * products); closed after it. Unset: `db` itself.
   */
  openBuilder?: () => SqlClient;
  /** Memory for the build (maintenance_work_mem), e.g. "1GB": HNSW builds far faster when its graph fits. */
  buildMemory?: string;
  /** `vector_index_build_started` and `vector_index_built` events. */
  log?: (event: Record<string, unknown>) => void;
}

/** The VectorIndex port over PostgreSQL or PGlite (one SQL, `server` tells them apart). */
export class SqlVectorIndex implements VectorIndex {
  private readonly target: IndexTarget | undefined;
  private readonly availability: VectorIndexAvailability;
  private building: Promise<boolean> | null = null;

  constructor(
    private readonly db: SqlClient,
    dimension: number,
    private readonly options: SqlVectorIndexOptions,
  ) {
    this.target = indexTarget(dimension);
    this.availability =
      this.target === undefined
        ? "none"
        : !options.server && this.target.column === "embedding_half"
          ? "on-demand"
          : "automatic";
  }

  async status(): Promise<VectorIndexStatus> {
    const [index] = await this.db.query<{ valid: boolean; bytes: number | string }>(
      `SELECT i.indisvalid AS valid, pg_relation_size(i.indexrelid) AS bytes
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
      [INDEX_NAME],
    );
    const [table] = await this.db.query<{ rows: number | string }>(
      "SELECT greatest(reltuples, 0)::bigint AS rows FROM pg_class WHERE oid = 'products'::regclass",
    );
    return {
      column: this.target?.column,
      availability: this.availability,
      present: index !== undefined,
      valid: index?.valid ?? false,
      bytes: Number(index?.bytes ?? 0),
      estimatedRows: Number(table?.rows ?? 0),
    };
  }

  build(): Promise<boolean> {
    this.building ??= this.buildNow().finally(() => {
      this.building = null;
    });
    return this.building;
  }

  async drop(): Promise<boolean> {
    const dropped = await this.db.query(
      `SELECT 1 FROM pg_class WHERE relname = $1 AND relnamespace = current_schema()::regnamespace`,
      [INDEX_NAME],
    );
    await this.db.query(`DROP INDEX ${this.options.server ? "CONCURRENTLY " : ""}IF EXISTS ${INDEX_NAME}`);
    return dropped.length > 0;
  }

  /** Rows inserted, updated and deleted in products since the statistics began (any process's). */
  async writeCount(): Promise<number> {
    const [row] = await this.db.query<{ writes: number | string | null }>(
      `SELECT n_tup_ins + n_tup_upd + n_tup_del AS writes FROM pg_stat_user_tables WHERE relid = 'products'::regclass`,
    );
    return Number(row?.writes ?? 0);
  }

  async hasAtLeast(n: number): Promise<boolean> {
    const [row] = await this.db.query<{ n: number | string }>(
      "SELECT count(*) AS n FROM (SELECT 1 FROM products LIMIT $1) AS enough",
      [n],
    );
    return Number(row?.n ?? 0) >= n;
  }

  private async buildNow(): Promise<boolean> {
    const target = this.target;
    if (target === undefined) return false;
    const builder = this.options.openBuilder?.() ?? this.db;
    const started = performance.now();
    try {
      const locking = this.options.server && this.options.advisoryLock !== false;
      if (locking) {
        const [lock] = await builder.query<{ locked: boolean }>(
          `SELECT pg_try_advisory_lock(${BUILD_LOCK_KEY}) AS locked`,
        );
        if (!lock?.locked) return false;
      }
      try {
        const { present, valid, estimatedRows } = await this.status();
        if (present && valid) return false;
        // A failed concurrent build leaves an invalid index that is maintained but never used.
        if (present) await builder.query(`DROP INDEX ${this.options.server ? "CONCURRENTLY " : ""}${INDEX_NAME}`);
        this.options.log?.({ event: "vector_index_build_started", column: target.column, rows: estimatedRows });
        if (this.options.buildMemory !== undefined) {
          await builder.query("SELECT set_config('maintenance_work_mem', $1, false)", [this.options.buildMemory]);
        }
        await builder.query(
          `CREATE INDEX ${this.options.server ? "CONCURRENTLY " : ""}${INDEX_NAME} ON products
           USING hnsw (${target.column} ${target.operatorClass}) WITH (m = ${HNSW_M}, ef_construction = ${target.efConstruction})`,
        );
        await builder.query("ANALYZE products");
        const { bytes } = await this.status();
        this.options.log?.({
          event: "vector_index_built",
          column: target.column,
          seconds: Math.round((performance.now() - started) / 100) / 10,
          bytes,
        });
        return true;
      } finally {
        if (locking) await builder.query(`SELECT pg_advisory_unlock(${BUILD_LOCK_KEY})`);
      }
    } finally {
      if (builder !== this.db) await builder.close();
    }
  }
}
