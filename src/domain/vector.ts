/** An embedding: a dense vector of finite numbers, never all zeros. */
export type Vector = number[];

/**
 * Why a vector cannot be used, or null when it can. A zero vector has no direction (cosine is
 * undefined and pgvector does not index it), so it is rejected like a wrong length or a NaN.
 */
export function vectorProblem(vector: ArrayLike<number>, dimension: number): string | null {
  if (vector.length !== dimension) return `expected ${dimension} dimensions, got ${vector.length}`;
  let nonZero = false;
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i] as number;
    if (!Number.isFinite(value)) return `component ${i} is not a finite number`;
    if (value !== 0) nonZero = true;
  }
  return nonZero ? null : "the vector is all zeros";
}
