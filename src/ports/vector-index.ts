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

export interface VectorIndexStatus {
  /** The column the index is (or would be) built on; undefined when availability is "none". */
  column: string | undefined;
  availability: VectorIndexAvailability;
  present: boolean;
  /** False while a concurrent build runs, or after one failed (then it is built again). */
  valid: boolean;
  /** Bytes on disk. */
  bytes: number;
  /** The planner's estimate of the products. */
  estimatedRows: number;
}

export interface VectorIndex {
  status(): Promise<VectorIndexStatus>;
  /**
   * Builds the index now, replacing an invalid one, whatever the catalogue's size. Resolves false
   * when none can be built here or another process is building it (only one builds at a time).
   */
  build(): Promise<boolean>;
  /** Drops the index; false when there was none. */
  drop(): Promise<boolean>;
  /**
   * A counter of the products inserted, updated and deleted (by any process on the database), only
   * ever growing: two equal readings mean nothing was written in between.
   */
  writeCount(): Promise<number>;
  /** Whether the catalogue holds at least `n` products (reading no more than that). */
  hasAtLeast(n: number): Promise<boolean>;
}
