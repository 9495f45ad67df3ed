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

/** How many calls `embedder` serves at once faster than one after another (Embedder.callsAtOnce; absent: 1). */
export function callsAtOnce(embedder: Embedder): number {
  return Math.max(1, Math.floor(embedder.callsAtOnce ?? 1));
}

/** Texts a batch holds: `requested`, else what a call of `embedder` is best given (Embedder.textsPerCall; absent: 64). */
export function batchSizeFor(embedder: Embedder, requested?: number): number {
  return Math.max(1, Math.floor(requested ?? embedder.textsPerCall ?? 64));
}

/**
 * Works through `batches` (read lazily, in order) with their embeddings (or whatever `embed` makes
 * of them) made `ahead` batches at a time (the embedder's callsAtOnce: a remote provider's calls
 * wait on the network) while the ones before are used: `use` gets each batch with its vectors, in
 * order, one at a time. The first failure (a read, an embedding, a use) is thrown once the batches
 * before it are used, and nothing after it is; the embeddings already asked for end unused.
 */
export async function embedAhead<B, E = Vector[]>(
  batches: AsyncIterable<B>,
  ahead: number,
  embed: (batch: B) => Promise<E>,
  use: (batch: B, vectors: E) => Promise<void>,
): Promise<void> {
  const iterator = batches[Symbol.asyncIterator]();
  const embedding: { batch: B; vectors: Promise<E> }[] = [];
  const most = Math.max(1, Math.floor(ahead));
  let exhausted = false;
  const readAhead = async () => {
    while (!exhausted && embedding.length < most) {
      const next = await iterator.next();
      if (next.done) {
        exhausted = true;
        return;
      }
      const vectors = embed(next.value);
      vectors.catch(() => {}); // thrown when its turn comes
      embedding.push({ batch: next.value, vectors });
    }
  };
  try {
    await readAhead();
    for (let current = embedding.shift(); current; current = embedding.shift()) {
      const vectors = await current.vectors;
      await readAhead();
      await use(current.batch, vectors);
    }
  } finally {
    await iterator.return?.();
  }
}
