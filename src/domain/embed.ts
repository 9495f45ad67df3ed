import type { Embedder, EmbeddingPurpose } from "../ports/embedder.ts";
import { EmbeddingUnavailable } from "./errors.ts";
import { type Vector, vectorProblem } from "./vector.ts";

/** Embeds one text and checks the vector; any failure becomes EmbeddingUnavailable. */
export async function embedOne(embedder: Embedder, text: string, purpose: EmbeddingPurpose): Promise<Vector> {
  let vectors: Vector[];
  try {
    vectors = await embedder.embed([text], purpose);
  } catch (error) {
    if (error instanceof EmbeddingUnavailable) throw error;
    throw new EmbeddingUnavailable(undefined, { cause: error });
  }
  const vector = vectors[0];
  const problem = vector ? vectorProblem(vector, embedder.dimension) : "the embedder returned no vector";
  if (problem || !vector) {
    throw new EmbeddingUnavailable(undefined, {
      cause: new Error(`unusable embedding from ${embedder.model}: ${problem}`),
    });
  }
  return vector;
}
