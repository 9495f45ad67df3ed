import type { Vector } from "../../src/domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../src/ports/embedder.ts";

/**
 * Deterministic bag-of-words embedder: each lower-cased word adds 1 to a component picked by
 * hashing it, so texts sharing words point in similar directions. `mode` makes it fail or
 * return a zero vector, the two ways a real provider lets us down.
 */
export class FakeEmbedder implements Embedder {
  mode: "ok" | "fail" | "zero" = "ok";
  /** Milliseconds each call waits before answering, like a slow provider (an abort ends the wait). */
  delayMs = 0;
  /** Every text embedded, in order. */
  readonly calls: { text: string; purpose: EmbeddingPurpose }[] = [];
  /** The signal of every call, in order. */
  readonly signals: (AbortSignal | undefined)[] = [];

  /** `model`: another name makes another embedding space (a re-embed's target) of the same vectors. */
  constructor(
    readonly dimension = 256,
    readonly model = "fake-bag-of-words",
  ) {}

  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    for (const text of texts) this.calls.push({ text, purpose });
    this.signals.push(signal);
    if (this.delayMs > 0) await abortableSleep(this.delayMs, signal);
    if (this.mode === "fail") throw new Error("fake embedder: provider down");
    return texts.map((text) =>
      this.mode === "zero" ? new Array(this.dimension).fill(0) : bagOfWords(text, this.dimension),
    );
  }
}

/** The fake embedding of a text: texts sharing words point in similar directions (fake provider servers use it too). */
export function bagOfWords(text: string, dimension: number): Vector {
  const vector: Vector = new Array(dimension).fill(0);
  for (const word of text.toLowerCase().match(/\p{L}+|\p{N}+/gu) ?? []) {
    const index = fnv1a(word) % dimension;
    vector[index] = (vector[index] ?? 0) + 1;
  }
  return vector;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) {
    hash ^= char.codePointAt(0) ?? 0;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
