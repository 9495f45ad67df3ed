import { InvalidInput } from "./errors.ts";
import type { HybridCandidate } from "./product.ts";

export const SEARCH_MODES = ["semantic", "hybrid"] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/**
 * Hybrid ranking: a convex blend of the cosine and the lexical score, each first normalised over
 * the query's candidates (min–max), so neither scale dominates: `alpha` · cosine + (1 − `alpha`) ·
 * lexical. `alpha` 1 is the semantic ranking; 0 the lexical one. (Reciprocal rank fusion did worse
 * than the semantic ranking alone on the English dev queries, GUIDE.md; a blend of scores did better.)
 */
export function fuse(candidates: readonly HybridCandidate[], alpha: number): HybridCandidate[] {
  checkAlpha(alpha);
  const cosine = normaliser(candidates.map((candidate) => candidate.score));
  const lexical = normaliser(candidates.map((candidate) => candidate.lexical));
  return candidates
    .map((candidate) => ({
      ...candidate,
      fusedScore: alpha * cosine(candidate.score) + (1 - alpha) * lexical(candidate.lexical),
    }))
    .sort((a, b) => b.fusedScore - a.fusedScore || b.score - a.score || a.id - b.id);
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
