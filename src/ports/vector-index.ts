/**
 * The approximate nearest-neighbour index of the products' embeddings, as the use case that keeps
 * it fit (domain/maintain-vector-index.ts) sees it: what it is now, and the primitives to build or
 * drop it. When to build is the use case's decision, not the adapter's.
 */

/** Whether an index can exist for the stored embeddings, and whether the policy may build it unasked. */
export type VectorIndexAvailability =
  /** No index can be built for this dimension (pgvector indexes at most 4,000): search stays exact. */
  | "none"
  /** Built only when the operator asks (`index build`): a build here would hold every query for minutes. */
  | "on-demand"
  /** The policy may build it when the catalogue is large enough. */
  | "automatic";

/** A build under way (any process's), as far as the database reports it. */
export interface VectorIndexBuildProgress {
  /** The database's name of the step, e.g. "building index: loading tuples". */
  phase: string;
  /** From 0 to 1: the share of the table read so far (or of the rows, where the database counts them). */
  fraction: number;
  /** The products put in the index so far. */
  tuplesDone: number;
}

export interface VectorIndexStatus {
  /** The kind of index a build makes (e.g. "bq", "halfvec", "vector"); undefined when availability is "none". */
  kind: string | undefined;
  /** The column (or expression) it is built on; undefined when availability is "none". */
  column: string | undefined;
  availability: VectorIndexAvailability;
  /** Whether an index of `kind` exists (valid or not). */
  present: boolean;
  /** False while a concurrent build runs, or after one failed (then it is built again). */
  valid: boolean;
  /**
   * An index of another kind is still there (the setting changed, or a switch was cut short): a
   * build makes `kind` and then drops it; until then searches use the one that is valid.
   */
  outdated: boolean;
  /** Bytes on disk of the `kind` index. */
  bytes: number;
  /** The planner's estimate of the products. */
  estimatedRows: number;
  /** A build under way, where the database reports it (PostgreSQL's pg_stat_progress_create_index). */
  progress: VectorIndexBuildProgress | undefined;
}

export interface VectorIndex {
  status(): Promise<VectorIndexStatus>;
  /**
   * Builds the index of the status's `kind` now, replacing an invalid one and then dropping one of
   * another kind, whatever the catalogue's size. Resolves false when none can be built here, it is
   * already there, or another process is building it (only one builds at a time).
   */
  build(): Promise<boolean>;
  /** Drops the index (of any kind); false when there was none. */
  drop(): Promise<boolean>;
  /**
   * A counter of the products inserted, updated and deleted (by any process on the database), only
   * ever growing: two equal readings mean nothing was written in between.
   */
  writeCount(): Promise<number>;
  /** Whether the catalogue holds at least `n` products (reading no more than that). */
  hasAtLeast(n: number): Promise<boolean>;
}

/**
 * Every catalogue's vector index: each catalogue's products are indexed apart (a partition with an
 * index of its own), so each is built when that catalogue is large enough, and a small catalogue's
 * search is an exact scan of its own products alone.
 */
export interface VectorIndexes {
  /** The catalogues, by name. */
  catalogues(): Promise<string[]>;
  /** The index of `catalogue`'s products; undefined when there is no such catalogue. */
  of(catalogue: string): Promise<VectorIndex | undefined>;
}
