/** A set of words or phrases a catalogue's shoppers use for the same thing ("celular", "móvil", "smartphone"). */
export type SynonymSet = readonly string[];

/** Where each catalogue's synonyms are kept. */
export interface SynonymStore {
  /**
   * The catalogue's sets, in the order they were given; none when it has none. What another process
   * stored may be seen a moment late (the adapter says how long).
   */
  get(catalogue: string): Promise<SynonymSet[]>;
  /** Replaces every set of the catalogue with these (none: the catalogue has no synonyms any more). */
  replace(catalogue: string, sets: readonly SynonymSet[]): Promise<void>;
}
