/** What one embedding request may carry. */
export interface BatchLimits {
  maxInputs: number;
  /** Estimated tokens per request (see estimateTokens). */
  maxTokens: number;
}

/**
 * A deliberately high token estimate without the provider's tokenizer: one token per 3 bytes of
 * UTF-8 (English runs about 4 characters per token; most other scripts need more bytes per token).
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / 3);
}

/** The texts split, in order, into consecutive batches within the limits (a text alone is always one batch). */
export function batchTexts(texts: readonly string[], limits: BatchLimits): string[][] {
  const batches: string[][] = [];
  let current: string[] = [];
  let tokens = 0;
  for (const text of texts) {
    const cost = estimateTokens(text);
    if (current.length > 0 && (current.length >= limits.maxInputs || tokens + cost > limits.maxTokens)) {
      batches.push(current);
      current = [];
      tokens = 0;
    }
    current.push(text);
    tokens += cost;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** `task` over every item with at most `concurrency` running at once; results in input order. Rejects on the first failure. */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !failed) {
      const index = next++;
      try {
        results[index] = await task(items[index] as T);
      } catch (error) {
        failed = true; // no new task starts; the ones running finish
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** Embeds `texts` in batches within `limits`, `concurrency` requests at a time, one vector per text in order. */
export async function embedInBatches(
  texts: readonly string[],
  options: BatchLimits & { concurrency: number },
  embedBatch: (batch: string[]) => Promise<number[][]>,
): Promise<number[][]> {
  const batches = batchTexts(texts, options);
  const vectors = await mapConcurrently(batches, options.concurrency, async (batch) => {
    const answer = await embedBatch(batch);
    if (answer.length !== batch.length) {
      throw new Error(`the provider returned ${answer.length} vectors for ${batch.length} texts`);
    }
    return answer;
  });
  return vectors.flat();
}
