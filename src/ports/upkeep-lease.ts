/**
 * The right to do the catalogue's upkeep (build the vector index, re-embed) held by one process at a
 * time among every instance on the database: whoever holds it does the work, the others skip their
 * turn. A holder that dies loses it by itself after a while (it is a lease, renewed while held).
 */
export interface UpkeepLease {
  /** Takes the lease (or keeps it, when this process holds it already); false when another holds it. */
  acquire(): Promise<boolean>;
  /** Gives it back (nothing when this process does not hold it). */
  release(): Promise<void>;
}
