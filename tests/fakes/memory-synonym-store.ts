import type { SynonymSet, SynonymStore } from "../../src/ports/synonym-store.ts";

/** Synonyms in memory, per catalogue, as the SQL store keeps them (synonym-store.ts). */
export class MemorySynonymStore implements SynonymStore {
  private readonly sets = new Map<string, SynonymSet[]>();

  async get(catalogue: string): Promise<SynonymSet[]> {
    return (this.sets.get(catalogue) ?? []).map((set) => [...set]);
  }

  async replace(catalogue: string, sets: readonly SynonymSet[]): Promise<void> {
    this.sets.set(
      catalogue,
      sets.map((set) => [...set]),
    );
  }
}
