import type { SynonymSet, SynonymStore } from "../../ports/synonym-store.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresSynonymStoreOptions {
  /** How long a catalogue's sets read from the database are used before they are read again, in ms (default 2,000). */
  maxAgeMs?: number;
  /** Milliseconds on some clock (default performance.now): tests move it. */
  now?: () => number;
}

/**
 * Synonyms in the `synonym_sets` table, one row per set, per catalogue. Every hybrid or lexical
 * search asks for its catalogue's sets: they are kept in memory and read again once older than
 * `maxAgeMs`, so a search costs no round trip for them. A replacement made by this process is
 * seen by it at once; one made by another instance, within `maxAgeMs`.
 */
export class PostgresSynonymStore implements SynonymStore {
  private readonly remembered = new Map<string, { sets: SynonymSet[]; at: number }>();
  private readonly pools: ReadWriteClients;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(db: SqlClient | ReadWriteClients, options: PostgresSynonymStoreOptions = {}) {
    this.pools = poolsOf(db);
    this.maxAgeMs = options.maxAgeMs ?? 2_000;
    this.now = options.now ?? (() => performance.now());
  }

  async get(catalogue: string): Promise<SynonymSet[]> {
    const remembered = this.remembered.get(catalogue);
    if (remembered && this.now() - remembered.at < this.maxAgeMs) return remembered.sets;
    const rows = await this.pools.reads.query<{ terms: string[] }>(
      "SELECT terms FROM synonym_sets WHERE catalogue = $1 ORDER BY position",
      [catalogue],
    );
    const sets = rows.map((row) => row.terms);
    this.remembered.set(catalogue, { sets, at: this.now() });
    return sets;
  }

  async replace(catalogue: string, sets: readonly SynonymSet[]): Promise<void> {
    await this.pools.writes.transaction(async (tx) => {
      await tx.query("DELETE FROM synonym_sets WHERE catalogue = $1", [catalogue]);
      if (sets.length === 0) return;
      // One statement for every set: the sets travel as one JSON array of arrays.
      await tx.query(
        `INSERT INTO synonym_sets (catalogue, position, terms)
         SELECT $1, set.position - 1, ARRAY(SELECT jsonb_array_elements_text(set.terms))
         FROM jsonb_array_elements($2::text::jsonb) WITH ORDINALITY AS set(terms, position)`,
        [catalogue, JSON.stringify(sets)],
      );
    });
    await this.pools.wrote();
    this.remembered.set(catalogue, { sets: sets.map((set) => [...set]), at: this.now() });
  }
}
