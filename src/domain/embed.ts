import type { Embedder, EmbeddingPurpose } from "../ports/embedder.ts";
import { DomainError, EmbeddingUnavailable } from "./errors.ts";
import { type Vector, vectorProblem } from "./vector.ts";

/**
 * Embeds the texts and checks every vector (one per text, right length, finite, not zero): any
 * failure or unusable answer becomes EmbeddingUnavailable, so nothing unusable is ever stored; a
 * domain error passes as it is (EmbeddingSpaceChanged: an embedder the catalogue has moved away from).
 * Once `signal` aborts, its reason is thrown instead (the caller stopped waiting).
 */
export async function embedMany(
  embedder: Embedder,
  texts: readonly string[],
  purpose: EmbeddingPurpose,
  signal?: AbortSignal,
): Promise<Vector[]> {
  let vectors: Vector[];
  try {
    signal?.throwIfAborted();
    vectors = await embedder.embed(texts, purpose, signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (error instanceof DomainError) throw error;
    throw new EmbeddingUnavailable(undefined, { cause: error });
  }
  const unusable = (reason: string) =>
    new EmbeddingUnavailable(undefined, { cause: new Error(`unusable embedding from ${embedder.model}: ${reason}`) });
  if (vectors.length !== texts.length) throw unusable(`${vectors.length} vectors for ${texts.length} texts`);
  for (const [i, vector] of vectors.entries()) {
    const problem = vectorProblem(vector, embedder.dimension);
    if (problem) throw unusable(`text ${i}: ${problem}`);
  }
  return vectors;
}

export async function embedOne(
  embedder: Embedder,
  text: string,
  purpose: EmbeddingPurpose,
  signal?: AbortSignal,
): Promise<Vector> {
  const [vector] = await embedMany(embedder, [text], purpose, signal);
  return vector as Vector;
}
