import type { SynonymSet, SynonymStore } from "../ports/synonym-store.ts";
import { InvalidInput } from "./errors.ts";
import { cleanText, textProblem, trimText } from "./text.ts";

/** Limits of a catalogue's synonyms: they are read at every hybrid or lexical search, and kept in memory. */
export const SYNONYM_LIMITS = { sets: 1000, termsPerSet: 20, termLength: 100 } as const;

/**
 * Lower case, accents and tildes dropped, runs of spaces one space: how a synonym term and a
 * query's words are compared ("Móvil" is "movil").
 */
export function comparable(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase().replace(/\s+/gu, " ").trim();
}

/**
 * The sets as given, checked: a list of up to SYNONYM_LIMITS.sets sets, each a list of 2 to
 * SYNONYM_LIMITS.termsPerSet words or phrases (trimmed, invisible characters removed) of which at
 * least two differ once case and accents are ignored; a term repeated in a set is kept once.
 * InvalidInput naming the first set (from 0) and term that break the rules.
 */
export function checkSynonymSets(input: readonly (readonly string[])[]): SynonymSet[] {
  if (input.length > SYNONYM_LIMITS.sets) {
    throw new InvalidInput(`Se admiten como máximo ${SYNONYM_LIMITS.sets} grupos de sinónimos`);
  }
  return input.map((set, index) => {
    const terms: string[] = [];
    const seen = new Set<string>();
    for (const raw of set) {
      const term = trimText(cleanText(raw, "line")).replace(/\s+/gu, " ");
      const problem = textProblem(term, { maxLength: SYNONYM_LIMITS.termLength });
      if (problem) throw new InvalidInput(`El grupo de sinónimos ${index}: cada término ${problem}`);
      if (seen.has(comparable(term))) continue;
      seen.add(comparable(term));
      terms.push(term);
    }
    if (terms.length < 2 || terms.length > SYNONYM_LIMITS.termsPerSet) {
      throw new InvalidInput(
        `El grupo de sinónimos ${index} debe tener entre 2 y ${SYNONYM_LIMITS.termsPerSet} términos distintos`,
      );
    }
    return terms;
  });
}

/**
 * The terms the synonyms add to a query: for every set with a term that appears in one of `texts`
 * (as whole words, case and accents ignored), the set's other terms. A phrase matches only as a
 * whole ("cama de matrimonio", not "cama" alone).
 */
export function synonymsFor(texts: readonly string[], sets: readonly SynonymSet[]): string[] {
  const padded = texts.map((text) => ` ${comparable(text.replace(/[^\p{L}\p{N}]+/gu, " "))} `);
  const added = new Set<string>();
  for (const set of sets) {
    const present = set.filter((term) => {
      const words = comparable(term.replace(/[^\p{L}\p{N}]+/gu, " "));
      return words !== "" && padded.some((text) => text.includes(` ${words} `));
    });
    if (present.length === 0) continue;
    for (const term of set) if (!present.includes(term)) added.add(term);
  }
  return [...added];
}

/**
 * ManageSynonyms: a catalogue's synonyms, read and replaced as a whole. They are applied at search
 * time (the lexical side of hybrid and lexical searches): a change takes effect without embedding anything.
 */
export class ManageSynonyms {
  constructor(private readonly store: SynonymStore) {}

  get(catalogue: string): Promise<SynonymSet[]> {
    return this.store.get(catalogue);
  }

  /** Replaces the catalogue's synonyms with the checked sets, and returns them as stored. */
  async replace(catalogue: string, sets: readonly (readonly string[])[]): Promise<SynonymSet[]> {
    const checked = checkSynonymSets(sets);
    await this.store.replace(catalogue, checked);
    return checked;
  }
}
