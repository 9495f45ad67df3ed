import type {
  VectorIndex,
  VectorIndexAvailability,
  VectorIndexBuildProgress,
  VectorIndexes,
  VectorIndexStatus,
} from "../../ports/vector-index.ts";
import { BINARY_QUANTIZED_COLUMN, cataloguePartition, HALF_PRECISION_COPY_FROM_DIMENSION } from "./schema.ts";
import type { SqlClient } from "./sql-client.ts";

/**
 * The approximate nearest-neighbour index of one catalogue's embeddings (pgvector, on the
 * catalogue's partition of `products`: schema.ts) on PostgreSQL and PGlite: the primitives of the
 * VectorIndex port; SqlVectorIndexes gives each catalogue's. When it is built is decided by the domain's
 * MaintainVectorIndex; this adapter says which index fits the stored dimension and the catalogue's
 * size, whether a build here may be automatic, builds one build at a time, and tells search which
 * index to use (IndexInUse).
 *
 * Which index (its kind):
 * - under HALF_PRECISION_COPY_FROM_DIMENSION dimensions (the offline model's 384): `vector`, HNSW
 *   on `embedding` itself (`vector_cosine_ops`, m 16, ef_construction 64);
 * - from there up to 4,000 dimensions (the providers' 3072), VECTOR_INDEX_KIND, all three on the
 *   in-row copies of each embedding (schema.ts):
 *   - `ivf-bq` (the default): IVFFlat on its binary quantization, the stored `embedding_bits`
 *     (`bit(D)`, BINARY_QUANTIZED_COLUMN) with `bit_hamming_ops`, one list per 250 products, 3 × √n
 *     past 562,500 (ivfLists). One bit a dimension: 384 bytes an element at 3072, where a `halfvec` fills an
 *     8 kB page. A search reads the lists nearest the query (VECTOR_IVF_PROBES of them) and
 *     re-ranks the VECTOR_RERANK_DEPTH nearest by Hamming distance by their half-precision cosine
 *     (product-repository.ts). A write costs little more than without it (an HNSW graph made every
 *     insert 5 to 10 times as dear: thousands of buffer lookups to find its neighbours), and it
 *     builds in seconds (k-means on a sample, then one pass). Its lists are fixed at the build: once
 *     the catalogue has doubled or halved since, the index is `outdated` and the policy builds it
 *     again (beside the old one, under a new name);
 *   - `hnsw-bq`: HNSW (m 16, ef_construction 64) on the same bits, re-ranked alike: searches
 *     about as fast, writes far slower;
 *   - `halfvec`: HNSW on `embedding_half` (`halfvec_cosine_ops`, ef_construction 128): fast while
 *     the whole graph fits in shared_buffers (to about 100,000 × 3072 in 1 GB), far slower to build
 *     and to write into; in PGlite only on the operator's demand;
 * - past 4,000 dimensions: none (pgvector indexes no longer vectors); search stays exact.
 * bench/scale.ts measured the kinds, their settings and their writes; README "Vector index".
 *
 * Each catalogue's partition has its own index, of the kind and lists its own size calls for, built
 * by the policy when that catalogue is large enough; a small catalogue is scanned exactly.
 *
 * On a PostgreSQL server it is built CONCURRENTLY (reads and writes go on) under an advisory lock,
 * so only one process builds each catalogue's, with VECTOR_INDEX_BUILD_MEMORY of maintenance_work_mem and
 * VECTOR_INDEX_BUILD_WORKERS parallel workers; pg_stat_progress_create_index shows how far it is.
 * PGlite is one backend: queries wait for the build. A new index (another kind, or more lists) is
 * built beside the old one; the old is dropped once every process's searches have seen the new
 * (IndexInUse re-reads the catalog every few seconds): searches never lose their index.
 */

export interface VectorSearchSettings {
  /** hnsw.ef_search: the candidate list of an HNSW scan; larger is slower and finds more true neighbours. */
  efSearch: number;
  /**
   * ivfflat.probes: the lists an IVFFlat scan reads; more is slower and finds more true neighbours.
   * `auto`: probesFor the index's lists.
   */
  probes: number | "auto";
  /** A filter matching at most this many products is answered by an exact scan of them. */
  filterExactMaxRows: number;
  /**
   * A larger filter whose products lie far from the query (its neighbourhood holds too few of them:
   * product-repository.ts) is answered by an exact scan of them up to this many products, past it by
   * the index scan filtered as it goes (faster, but it misses most of the nearest).
   */
  filterFarExactMaxRows: number;
  /**
   * Candidates taken from a binary-quantized index and re-ranked by their half-precision cosine
   * (VECTOR_RERANK_DEPTH): more finds more true neighbours, slower.
   */
  rerankDepth: number;
  /** The most products matching a lexical query that a hybrid or lexical search ranks (LEXICAL_RANK_MAX_ROWS). */
  lexicalRankMaxRows?: number;
  /**
   * Number attributes besides `price` with an index of their own (INDEXED_NUMBER_ATTRIBUTES,
   * prepareDatabase): a range on one is estimated by the planner from its statistics.
   */
  indexedNumberAttributes?: readonly string[];
}

/** What VECTOR_INDEX_KIND may say: the kind of index from 512 dimensions. */
export const VECTOR_INDEX_KIND_SETTINGS = ["ivf-bq", "hnsw-bq", "halfvec"] as const;
export type VectorIndexKindSetting = (typeof VECTOR_INDEX_KIND_SETTINGS)[number];
export type VectorIndexKind = "vector" | VectorIndexKindSetting;

/** Whether searches with an index of this kind re-rank its candidates (a binary-quantized one). */
export function reranked(kind: VectorIndexKind | undefined): boolean {
  return kind === "ivf-bq" || kind === "hnsw-bq";
}

/** pgvector's largest indexable `halfvec`. */
const MAX_INDEXED_DIMENSION = 4_000;
/**
 * The advisory lock whoever builds holds, with the catalogue's table's oid: one build per
 * catalogue (and schema) across every replica. Any constant that every replica shares.
 */
const BUILD_LOCK = (table: string) => `831042773, '${table}'::regclass::oid::integer`;
/** What follows a catalogue's table's name in its vector indexes' names (`products_c1_embedding_ivf_100`). */
const NAME_INFIX = "_embedding_";

export interface IndexTarget {
  kind: VectorIndexKind;
  method: "hnsw" | "ivfflat";
  /** The indexed column or expression, as searches must write it for the planner to use the index. */
  expression: string;
  operatorClass: string;
  /** Bytes a value takes in a build's memory (an HNSW element adds its neighbour lists). */
  valueBytes: number;
  /** HNSW's build-time candidate list: larger builds slower and finds true neighbours at a smaller ef_search. */
  efConstruction?: number;
}

/**
 * Memory of an HNSW graph element beyond its value, measured with pgvector 0.8 (m 16) from the
 * notice a build gives when its graph outgrows maintenance_work_mem: 1,164 bytes an element on
 * 3072 bits (a 392-byte value), 6,938 on a 3072-d halfvec (6,152), 2,317 on a 384-d vector (1,544).
 */
const GRAPH_BYTES_PER_ELEMENT = 780;
const HNSW_M = 16;

/**
 * The index built for `dimension` under VECTOR_INDEX_KIND `setting`, or undefined when none can be.
 * ef_construction: at 100,000 × 3072 (one load, ef_search 100) a halfvec graph built with 64 kept
 * recall@10 0.974 (0.999 on another build of the same data), with 128 it kept 1.000, for a build 1.7
 * times as long; the binary graph keeps 64 (its candidates are re-ranked, and its build must stay
 * within minutes at 1,000,000); the offline model's 384-d vectors keep 0.99 with 64.
 */
export function indexTarget(dimension: number, setting: VectorIndexKindSetting = "ivf-bq"): IndexTarget | undefined {
  if (dimension > MAX_INDEXED_DIMENSION) return undefined;
  if (dimension < HALF_PRECISION_COPY_FROM_DIMENSION) {
    const [expression, operatorClass] = ["embedding", "vector_cosine_ops"];
    return {
      kind: "vector",
      method: "hnsw",
      expression,
      operatorClass,
      valueBytes: 8 + 4 * dimension,
      efConstruction: 64,
    };
  }
  if (setting === "halfvec") {
    const [expression, operatorClass] = ["embedding_half", "halfvec_cosine_ops"];
    return {
      kind: "halfvec",
      method: "hnsw",
      expression,
      operatorClass,
      valueBytes: 8 + 2 * dimension,
      efConstruction: 128,
    };
  }
  const bits = {
    expression: BINARY_QUANTIZED_COLUMN,
    operatorClass: "bit_hamming_ops",
    valueBytes: 8 + dimension / 8,
  };
  return setting === "hnsw-bq"
    ? { kind: "hnsw-bq", method: "hnsw", ...bits, efConstruction: 64 }
    : { kind: "ivf-bq", method: "ivfflat", ...bits };
}

/** The fewest lists an IVFFlat search reads (probesFor), and the most lists an index has (ivfLists). */
const MIN_PROBES = 10;
const MAX_IVF_LISTS = 3500;

/**
 * The lists an IVFFlat search reads when VECTOR_IVF_PROBES is `auto`: 0.7 × √lists, at least 10 (14
 * at 100,000 products, 400 lists; 39 at 1,000,000, 3,000 lists). A fixed number does not fit every
 * size, and a fixed share does not either: the share of lists a search needs falls as they grow. On
 * clustered 3072-d vectors (bench/scale.ts's, re-rank 40, recall@10 against the exact half-precision
 * ranking, bench/lists-probes.ts): 400 lists at 110,000 kept 0.980 with 12 probes and 0.990 with 15;
 * 2,000 lists at 1,010,000 kept 0.979 with 21 and 0.991 with 30; 3,000 kept 0.984 with 30 and
 * 0.991 with 40. A small catalogue's search costs little whatever it reads, and reads at least 10
 * lists: 7 of the 40 lists of 10,000 (PGlite) kept 0.981, 10 kept 0.986.
 */
export function probesFor(lists: number): number {
  return Math.max(MIN_PROBES, Math.ceil(0.7 * Math.sqrt(lists)));
}

/**
 * The lists of an IVFFlat index over `rows` products: one per 250 up to 562,500 rows (2,250 lists),
 * 3 × √rows past it (3,000 at 1,000,000), at most 3,500 (pgvector's k-means then needs 3.2 GB, under
 * buildMemoryFor's 4 GB). A search's cost is mostly the rows of the lists it reads (0.25 to 0.4 µs
 * each), and smaller lists hold a query's nearest products in fewer rows: at 110,000 × 3072
 * (bench/lists-probes.ts, PostgreSQL 15, load 1.4 to 2.2), recall@10 0.99 took 3.5 to 4.2 ms p50
 * with 100 lists (pgvector's advice, a list per 1,000 rows) and 2.4 ms with 400; at 1,010,000 (load
 * 1.7 to 2.3), 0.991 took 8.9 ms with 1,000 lists, 6.7 ms with 2,000 and 6.6 ms with 3,000 (0.984:
 * 7.0, 5.8 and 5.0 ms). The price is the build's k-means, which grows with the square of the lists:
 * at 1,010,000, 36 s and 333 MB with 1,000 lists, 92 s and 1.1 GB with 2,000, 171 s and 2.3 GB with 3,000.
 */
export function ivfLists(rows: number): number {
  return Math.max(1, Math.round(Math.min(rows / 250, 3 * Math.sqrt(rows), MAX_IVF_LISTS)));
}

/**
 * The name of an index of a catalogue's table: each kind its own, an IVFFlat one with its lists (a
 * new one is built beside the old): `products_c1_embedding_ivf_100`, `…_embedding_bq`, `…_embedding_hnsw`.
 */
export function indexName(table: string, target: IndexTarget, rows: number): string {
  if (target.kind === "ivf-bq") return `${table}${NAME_INFIX}ivf_${ivfLists(rows)}`;
  return `${table}${NAME_INFIX}${target.kind === "hnsw-bq" ? "bq" : "hnsw"}`;
}

/** What an index's name says after its table's: its kind, and an IVFFlat one's lists. */
const NAME_SUFFIX = /_embedding_(bq|hnsw|ivf_([0-9]+))$/;

/** The kind of one of this adapter's indexes, from its name (vector and halfvec share one: a dimension has one of them). */
export function kindOfName(name: string, dimension: number): VectorIndexKind | undefined {
  const suffix = NAME_SUFFIX.exec(name)?.[1];
  if (suffix === "bq") return "hnsw-bq";
  if (suffix?.startsWith("ivf_")) return "ivf-bq";
  if (suffix === "hnsw") return dimension < HALF_PRECISION_COPY_FROM_DIMENSION ? "vector" : "halfvec";
  return undefined;
}

/** The IVFFlat lists an index's name records. */
function listsOfName(name: string): number {
  return Number(NAME_SUFFIX.exec(name)?.[2]);
}

/**
 * maintenance_work_mem for building `target` over `rows` products when VECTOR_INDEX_BUILD_MEMORY is
 * `auto`, with a tenth to spare (products written during the build, the estimate's error), from
 * 64 MB to 4 GB. HNSW: the whole graph; one that outgrows it goes on building on disk, many times
 * slower (1,000,000 × 3072 `hnsw-bq`: 1,230 MB, where 1 GB spills at about 920,000 products;
 * `halfvec` would need 7.3 GB). IVFFlat: its k-means, which refuses to start without room for its
 * sample (50 rows a list), a float per sample and list and per pair of lists (Elkan's bounds), and
 * its centres, with a quarter to spare: 2,268 MB for the 3,000 lists of 1,000,000 products (pgvector
 * asked for 227 MB for 1,000 lists). `lists`: an IVFFlat index's, when not those ivfLists gives `rows`.
 */
export function buildMemoryFor(target: IndexTarget, rows: number, lists = ivfLists(rows)): string {
  const megabytes = (bytes: number) => Math.ceil(bytes / 2 ** 20);
  if (target.method === "ivfflat") {
    const samples = Math.min(rows, 50 * lists);
    const bytes = samples * (target.valueBytes + 16 + 4 * lists) + 4 * lists * (lists + target.valueBytes);
    return `${Math.min(4096, Math.max(64, megabytes(1.25 * bytes)))}MB`;
  }
  return `${Math.min(4096, Math.max(64, megabytes(1.1 * rows * (target.valueBytes + GRAPH_BYTES_PER_ELEMENT))))}MB`;
}

/**
 * Session settings every connection that searches must have (set when the connection opens): the
 * index scans' ef_search and probes, and iterative scans (pgvector 0.8), so that an index scan
 * keeps going until the query's LIMIT is reached, past ef_search or probes and past rows a filter drops.
 */
export function vectorSessionSettings(
  settings: Pick<VectorSearchSettings, "efSearch" | "probes">,
): Record<string, string> {
  return {
    "hnsw.ef_search": String(settings.efSearch),
    "hnsw.iterative_scan": "relaxed_order",
    // `auto`: each search sets it for the index's lists (product-repository.ts).
    ...(settings.probes === "auto" ? {} : { "ivfflat.probes": String(settings.probes) }),
    "ivfflat.iterative_scan": "relaxed_order",
  };
}

interface IndexRow {
  name: string;
  valid: boolean;
  bytes: number | string;
}

/** This adapter's indexes on a catalogue's table, with whether each is valid and its size, newest first. */
async function readIndexes(db: SqlClient, table: string): Promise<IndexRow[]> {
  return db.query<IndexRow>(
    `SELECT c.relname AS name, i.indisvalid AS valid, pg_relation_size(i.indexrelid) AS bytes
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = '${table}'::regclass AND starts_with(c.relname, $1)
     ORDER BY c.oid DESC`,
    [`${table}${NAME_INFIX}`],
  );
}

/** A catalogue's table, as this adapter names it in SQL (checked: it is interpolated). */
function checkedTable(table: string): string {
  if (!/^products_c[1-9][0-9]*$/.test(table)) throw new Error(`not a catalogue's table: ${table}`);
  return table;
}

/**
 * Which index searches use, as the repository needs to know it: a binary-quantized index needs its
 * own query (its candidates are re-ranked), the others are used by the planner for the plain one.
 * Read from the catalog at most every `maxAgeMs` (another process may build, switch or drop), so it
 * costs a search nothing; this process's own builds and drops tell it at once (`forget`).
 */
export class IndexInUse {
  private known: (SearchIndex & { at: number }) | undefined;
  private reading: Promise<SearchIndex> | undefined;
  private readonly table: string;

  constructor(
    private readonly db: SqlClient,
    private readonly dimension: number,
    private readonly target: IndexTarget | undefined,
    /** The catalogue's table whose index this is. */
    table: string,
    /** How long a reading is trusted; a switch waits twice this before dropping the old index. */
    readonly maxAgeMs = 2_000,
  ) {
    this.table = checkedTable(table);
  }

  /** The kind of the valid index searches should use (the target's when there are two), or undefined. */
  async kind(): Promise<VectorIndexKind | undefined> {
    return (await this.index()).kind;
  }

  /**
   * That index's kind, and its lists when it is an IVFFlat one. `db`: where to read it when it is
   * due, the search's own transaction when it asks from inside one (on PGlite, one connection, a
   * read on another client would wait for that transaction to end, which waits for the read).
   */
  async index(db: SqlClient = this.db): Promise<SearchIndex> {
    const known = this.known;
    if (known !== undefined && performance.now() - known.at < this.maxAgeMs) return known;
    this.reading ??= this.read(db).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  forget(): void {
    this.known = undefined;
  }

  private async read(db: SqlClient): Promise<SearchIndex> {
    let found: SearchIndex = { kind: undefined, lists: undefined };
    if (this.target !== undefined) {
      const valid = (await readIndexes(db, this.table))
        .filter((index) => index.valid)
        .map((index) => ({ kind: kindOfName(index.name, this.dimension), name: index.name }));
      const chosen = valid.find((index) => index.kind === this.target?.kind) ?? valid[0];
      if (chosen) {
        found = { kind: chosen.kind, lists: chosen.kind === "ivf-bq" ? listsOfName(chosen.name) : undefined };
      }
    }
    this.known = { ...found, at: performance.now() };
    return found;
  }
}

/** The index searches use: its kind, and an IVFFlat one's lists. */
export interface SearchIndex {
  kind: VectorIndexKind | undefined;
  lists: number | undefined;
}

/**
 * Which index each catalogue's searches use: an IndexInUse per catalogue's table, one per process,
 * shared by the repository (which reads it) and the catalogue's SqlVectorIndex (whose builds and
 * drops tell it at once).
 */
export class IndexesInUse {
  private readonly tables = new Map<string, IndexInUse>();

  constructor(
    private readonly db: SqlClient,
    private readonly dimension: number,
    private readonly target: IndexTarget | undefined,
    /** IndexInUse's maxAgeMs. */
    private readonly maxAgeMs?: number,
  ) {}

  /** The IndexInUse of a catalogue's table (cataloguePartition). */
  of(table: string): IndexInUse {
    let inUse = this.tables.get(table);
    if (!inUse) {
      inUse = new IndexInUse(this.db, this.dimension, this.target, table, this.maxAgeMs);
      this.tables.set(table, inUse);
    }
    return inUse;
  }
}

export interface SqlVectorIndexOptions {
  /** The table indexed: a catalogue's partition of `products` (cataloguePartition). */
  table: string;
  /** True for a PostgreSQL server (build CONCURRENTLY, under an advisory lock); false for PGlite. */
  server: boolean;
  /** False behind a transaction pooler, where a session's lock cannot be held (default: true on a server). */
  advisoryLock?: boolean;
  /** VECTOR_INDEX_KIND: the kind built from 512 dimensions (default ivf-bq). */
  kind?: VectorIndexKindSetting;
  /**
   * A connection for the build, without a statement time limit (a build takes minutes at 1,000,000
   * products), handing the server's notices to `onNotice`; closed after it. Unset: `db` itself,
   * which on a server must then be one connection, not a pool (the lock is the session's).
   */
  openBuilder?: (onNotice: (message: string) => void) => SqlClient;
  /**
   * Memory for the build (maintenance_work_mem), e.g. "1GB", or `auto` (buildMemoryFor the
   * catalogue): HNSW builds far faster when its graph fits. Unset: the database's own setting.
   */
  buildMemory?: string;
  /** max_parallel_maintenance_workers of a build on a server (the leader works too). */
  buildWorkers?: number;
  /** Tells searches which index to use; one per process and catalogue, shared with the repository. */
  inUse?: IndexInUse;
  /**
   * `vector_index_build_started`, `vector_index_built`, `vector_index_build_spilled` (an HNSW graph
   * outgrew buildMemory: the build goes on, many times slower) and `vector_index_dropped` events.
   */
  log?: (event: Record<string, unknown>) => void;
}

/** What is there now, against what a build would make. */
interface Inspection {
  /** The index of the target kind searches use (the newest valid one, else the newest). */
  current: IndexRow | undefined;
  /** Indexes a build replaces: of other kinds, older ones of the target kind. */
  stale: IndexRow[];
  /** An IVFFlat index whose lists no longer fit the catalogue (it doubled or halved since the build). */
  misfit: boolean;
  estimatedRows: number;
}

/** The VectorIndex port over PostgreSQL or PGlite (one SQL, `server` tells them apart), for one catalogue. */
export class SqlVectorIndex implements VectorIndex {
  readonly target: IndexTarget | undefined;
  readonly inUse: IndexInUse;
  private readonly availability: VectorIndexAvailability;
  private building: Promise<boolean> | null = null;
  private readonly table: string;

  constructor(
    private readonly db: SqlClient,
    private readonly dimension: number,
    private readonly options: SqlVectorIndexOptions,
  ) {
    this.table = checkedTable(options.table);
    this.target = indexTarget(dimension, options.kind);
    this.inUse = options.inUse ?? new IndexInUse(db, dimension, this.target, this.table);
    this.availability =
      this.target === undefined
        ? "none"
        : !options.server && this.target.kind === "halfvec"
          ? "on-demand"
          : "automatic";
  }

  async status(): Promise<VectorIndexStatus> {
    const { current, stale, misfit, estimatedRows } = await this.inspect(this.db);
    return {
      kind: this.target?.kind,
      column: this.target?.expression.replace(/^\((.*)\)$/, "$1"),
      availability: this.availability,
      present: current !== undefined,
      valid: current?.valid ?? false,
      outdated: stale.length > 0 || misfit,
      bytes: Number(current?.bytes ?? 0),
      estimatedRows,
      progress: await this.progress(),
    };
  }

  build(): Promise<boolean> {
    this.building ??= this.buildNow().finally(() => {
      this.building = null;
    });
    return this.building;
  }

  async drop(): Promise<boolean> {
    const dropped = (await readIndexes(this.db, this.table)).map((index) => index.name);
    for (const name of dropped) await this.dropIndex(this.db, name);
    this.inUse.forget();
    return dropped.length > 0;
  }

  /** Rows inserted, updated and deleted in the catalogue since the statistics began (any process's). */
  async writeCount(): Promise<number> {
    const [row] = await this.db.query<{ writes: number | string | null }>(
      `SELECT n_tup_ins + n_tup_upd + n_tup_del AS writes FROM pg_stat_user_tables WHERE relid = '${this.table}'::regclass`,
    );
    return Number(row?.writes ?? 0);
  }

  async hasAtLeast(n: number): Promise<boolean> {
    const [row] = await this.db.query<{ n: number | string }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM ${this.table} LIMIT $1) AS enough`,
      [n],
    );
    return Number(row?.n ?? 0) >= n;
  }

  private async inspect(db: SqlClient): Promise<Inspection> {
    const indexes = await readIndexes(db, this.table);
    const [table] = await db.query<{ rows: number | string }>(
      `SELECT greatest(reltuples, 0)::bigint AS rows FROM pg_class WHERE oid = '${this.table}'::regclass`,
    );
    const estimatedRows = Number(table?.rows ?? 0);
    const ofKind = indexes.filter((index) => kindOfName(index.name, this.dimension) === this.target?.kind);
    const current = ofKind.find((index) => index.valid) ?? ofKind[0];
    const wanted = ivfLists(estimatedRows);
    const lists = current && this.target?.kind === "ivf-bq" ? listsOfName(current.name) : undefined;
    return {
      current,
      stale: indexes.filter((index) => index !== current),
      misfit: lists !== undefined && (lists < wanted / 2 || lists > wanted * 2),
      estimatedRows,
    };
  }

  /**
   * A build of an index on products under way on a server (PostgreSQL reports its backends'
   * CREATE INDEX in pg_stat_progress_create_index; PGlite's one backend is busy building). pgvector
   * reports the table's blocks read and the rows put in the index, without a total of rows.
   */
  private async progress(): Promise<VectorIndexBuildProgress | undefined> {
    if (!this.options.server) return undefined;
    const [row] = await this.db.query<{
      phase: string;
      tuples_done: number | string;
      tuples_total: number | string;
      blocks_done: number | string;
      blocks_total: number | string;
    }>(
      `SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total
       FROM pg_stat_progress_create_index WHERE relid = '${this.table}'::regclass LIMIT 1`,
    );
    if (!row) return undefined;
    const tuplesDone = Number(row.tuples_done);
    const tuplesTotal = Number(row.tuples_total);
    const [done, total] =
      tuplesTotal > 0 ? [tuplesDone, tuplesTotal] : [Number(row.blocks_done), Number(row.blocks_total)];
    return { phase: row.phase, fraction: total > 0 ? Math.min(1, done / total) : 0, tuplesDone };
  }

  private async dropIndex(db: SqlClient, name: string): Promise<void> {
    await db.query(`DROP INDEX ${this.options.server ? "CONCURRENTLY " : ""}IF EXISTS ${name}`);
    this.options.log?.({ event: "vector_index_dropped", index: name });
  }

  private async buildNow(): Promise<boolean> {
    const target = this.target;
    if (target === undefined) return false;
    const { server, log } = this.options;
    const builder =
      this.options.openBuilder?.((message) => {
        // pgvector's notice when the graph no longer fits in maintenance_work_mem: the build goes on
        // on disk, several times slower. The operator should raise VECTOR_INDEX_BUILD_MEMORY.
        if (/maintenance_work_mem/.test(message)) log?.({ event: "vector_index_build_spilled", message });
      }) ?? this.db;
    const started = performance.now();
    try {
      const locking = server && this.options.advisoryLock !== false;
      if (locking) {
        const [lock] = await builder.query<{ locked: boolean }>(
          `SELECT pg_try_advisory_lock(${BUILD_LOCK(this.table)}) AS locked`,
        );
        if (!lock?.locked) return false;
      }
      try {
        const { current, stale, misfit } = await this.inspect(builder);
        if (current?.valid && stale.length === 0 && !misfit) return false;
        if (!current?.valid || misfit) {
          // A failed concurrent build leaves an invalid index that is maintained but never used.
          if (current && !current.valid) await this.dropIndex(builder, current.name);
          await this.buildIndex(builder, target, started);
        }
        await this.dropOutdated(builder);
        return true;
      } finally {
        if (locking) await builder.query(`SELECT pg_advisory_unlock(${BUILD_LOCK(this.table)})`);
      }
    } finally {
      if (builder !== this.db) await builder.close();
    }
  }

  private async buildIndex(builder: SqlClient, target: IndexTarget, started: number): Promise<void> {
    const { server, log } = this.options;
    // A fresh count for the lists and the memory (ANALYZE samples: about a second at 1,000,000).
    await builder.query(`ANALYZE ${this.table}`);
    const { estimatedRows: rows } = await this.inspect(builder);
    const name = indexName(this.table, target, rows);
    const memory = this.options.buildMemory === "auto" ? buildMemoryFor(target, rows) : this.options.buildMemory;
    log?.({ event: "vector_index_build_started", table: this.table, kind: target.kind, index: name, rows, memory });
    if (memory !== undefined) await builder.query("SELECT set_config('maintenance_work_mem', $1, false)", [memory]);
    if (server && this.options.buildWorkers !== undefined) {
      await builder.query("SELECT set_config('max_parallel_maintenance_workers', $1, false)", [
        String(this.options.buildWorkers),
      ]);
    }
    const options =
      target.method === "ivfflat"
        ? `lists = ${ivfLists(rows)}`
        : `m = ${HNSW_M}, ef_construction = ${target.efConstruction}`;
    await builder.query(
      `CREATE INDEX ${server ? "CONCURRENTLY " : ""}${name} ON ${this.table}
       USING ${target.method} (${target.expression} ${target.operatorClass}) WITH (${options})`,
    );
    await builder.query(`ANALYZE ${this.table}`);
    this.inUse.forget();
    const [built] = (await readIndexes(builder, this.table)).filter((index) => index.name === name);
    log?.({
      event: "vector_index_built",
      kind: target.kind,
      index: name,
      seconds: Math.round((performance.now() - started) / 100) / 10,
      bytes: Number(built?.bytes ?? 0),
    });
  }

  /**
   * Drops every index but the newest valid one of the target kind, once every process's searches
   * have had time to see it (IndexInUse re-reads every maxAgeMs): a search planned for an index
   * while it is dropped would scan the whole table.
   */
  private async dropOutdated(builder: SqlClient): Promise<void> {
    const { stale } = await this.inspect(builder);
    if (stale.length === 0) return;
    if (this.options.server) await Bun.sleep(2 * this.inUse.maxAgeMs);
    for (const index of stale) await this.dropIndex(builder, index.name);
    this.inUse.forget();
  }
}

/**
 * Every catalogue's index (VectorIndexes): one SqlVectorIndex per catalogue's partition, kept, so
 * that each knows its own build under way, and each sharing its catalogue's IndexInUse with the
 * repository (`inUse`). `options` as SqlVectorIndex's, but for the table and its IndexInUse.
 */
export class SqlVectorIndexes implements VectorIndexes {
  private readonly known = new Map<string, SqlVectorIndex>();

  constructor(
    private readonly db: SqlClient,
    private readonly dimension: number,
    private readonly options: Omit<SqlVectorIndexOptions, "table" | "inUse"> & { inUse?: IndexesInUse },
  ) {}

  async catalogues(): Promise<string[]> {
    const rows = await this.db.query<{ id: number; name: string }>("SELECT id, name FROM catalogues ORDER BY name");
    // Forget the indexes of catalogues removed since.
    const tables = new Set(rows.map((row) => cataloguePartition(Number(row.id))));
    for (const table of this.known.keys()) if (!tables.has(table)) this.known.delete(table);
    return rows.map((row) => row.name);
  }

  async of(catalogue: string): Promise<SqlVectorIndex | undefined> {
    const [row] = await this.db.query<{ id: number }>("SELECT id FROM catalogues WHERE name = $1", [catalogue]);
    if (!row) return undefined;
    const table = cataloguePartition(Number(row.id));
    let index = this.known.get(table);
    if (!index) {
      const { inUse, ...options } = this.options;
      index = new SqlVectorIndex(this.db, this.dimension, { ...options, table, inUse: inUse?.of(table) });
      this.known.set(table, index);
    }
    return index;
  }
}
