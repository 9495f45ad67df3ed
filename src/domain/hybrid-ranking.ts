import { InvalidInput } from "./errors.ts";
import type { HybridCandidate } from "./product.ts";

/**
 * How a search ranks: `semantic`, by the cosine alone (the contract's ranking); `hybrid`, by the
 * cosine blended with the lexical match; `lexical`, by the lexical match (the cosine only orders
 * what the words do not). Hybrid and lexical also boost the categories that dominate the nearest
 * products (fuse).
 */
export const SEARCH_MODES = ["semantic", "hybrid", "lexical"] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** How the candidates of a hybrid or lexical search are blended (fuse). */
export interface Fusion {
  /** Weight of the semantic score, 0 to 1 (the rest is the lexical score's): 0 in lexical mode. */
  alpha: number;
  /** Added to a product's blended score, times its category's share of the DOMINANT_CATEGORY_TOP best. */
  categoryBoost: number;
  /**
   * The weight of the semantic score in the blend whose DOMINANT_CATEGORY_TOP best decide which
   * categories dominate; default `alpha` (a lexical search passes the hybrid one: meaning and words together).
   */
  dominanceAlpha?: number;
}

/** The best candidates (by the blend of fuse's dominanceAlpha) whose categories the category boost counts. */
export const DOMINANT_CATEGORY_TOP = 10;

/**
 * Hybrid ranking: a convex blend of the cosine and the lexical score, each first normalised over
 * the query's candidates (min–max), so neither scale dominates: `alpha` · cosine + (1 − `alpha`) ·
 * lexical. `alpha` 1 is the semantic ranking; 0 the lexical one. (Reciprocal rank fusion did worse
 * than the semantic ranking alone on the English dev queries, GUIDE.md; a blend of scores did better.)
 *
 * Then the category boost: each product gains `categoryBoost` times the share of its category among
 * the DOMINANT_CATEGORY_TOP best candidates of the blend (at `dominanceAlpha`). A query's best
 * products mostly agree on what kind of thing it wants even when a few strays from other
 * departments rank high ("covers for my sofa cushions": cushion covers, and a phone cover); the
 * strays fall back. Measured on the dev queries (README): counting the blend's best rather than
 * the cosine's alone kept misspelt queries from boosting the departments their misspelling led to.
 */
export function fuse(candidates: readonly HybridCandidate[], fusion: Fusion): HybridCandidate[] {
  const { alpha, categoryBoost, dominanceAlpha = alpha } = fusion;
  checkAlpha(alpha);
  checkAlpha(dominanceAlpha);
  const cosine = normaliser(candidates.map((candidate) => candidate.score));
  const lexical = normaliser(candidates.map((candidate) => candidate.lexical));
  const blend = (weight: number) => (candidate: HybridCandidate) =>
    weight * cosine(candidate.score) + (1 - weight) * lexical(candidate.lexical);
  const shares =
    categoryBoost === 0 ? new Map<string, number>() : dominantCategories(candidates, blend(dominanceAlpha));
  const fused = blend(alpha);
  return candidates
    .map((candidate) => ({
      ...candidate,
      fusedScore: fused(candidate) + categoryBoost * (shares.get(candidate.category) ?? 0),
    }))
    .sort((a, b) => b.fusedScore - a.fusedScore || b.score - a.score || a.id - b.id);
}

/** Each category's share (0 to 1) of the DOMINANT_CATEGORY_TOP candidates best by `rank`. */
function dominantCategories(
  candidates: readonly HybridCandidate[],
  rank: (candidate: HybridCandidate) => number,
): Map<string, number> {
  const best = candidates
    .map((candidate) => ({ candidate, rank: rank(candidate) }))
    .sort((a, b) => b.rank - a.rank || b.candidate.score - a.candidate.score || a.candidate.id - b.candidate.id)
    .slice(0, DOMINANT_CATEGORY_TOP);
  const shares = new Map<string, number>();
  for (const { candidate } of best)
    shares.set(candidate.category, (shares.get(candidate.category) ?? 0) + 1 / best.length);
  return shares;
}

export function checkAlpha(alpha: number): void {
  if (!Number.isFinite(alpha) || alpha < 0 || alpha > 1) {
    throw new InvalidInput("El campo 'alpha' debe ser un número entre 0 y 1");
  }
}

/** Maps values to [0, 1] by the range they span; when they all tie, each counts 1 if positive, else 0. */
function normaliser(values: readonly number[]): (value: number) => number {
  const min = Math.min(...values);
  const max = Math.max(...values);
  if (!(max > min)) return (value) => (value > 0 ? 1 : 0);
  return (value) => (value - min) / (max - min);
}
