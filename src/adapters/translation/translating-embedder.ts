import type { Vector } from "../../domain/vector.ts";
import { LruCache } from "../../lib/lru-cache.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import type { Translation, Translator } from "../../ports/translator.ts";

export interface TranslatingEmbedderOptions {
  /** Receives a warning when translation fails (the texts are then embedded as they are). */
  log?: (event: Record<string, unknown>) => void;
  /** Translations of this many recent queries kept in memory, so a repeated query is not translated again (default 0). */
  queryMemory?: number;
}

/**
 * An embedder that hands its embedder English: every text the translator reads as Spanish is
 * translated first, queries and documents alike (the stored product keeps its own text; only the
 * vector comes from the translation). It answers in the embedder's own vector space (`model`,
 * `dimension`), so its vectors and the embedder's stay comparable.
 *
 * Translation never fails an embedding: when the translator cannot answer (missing, timed out,
 * crashed), the texts of that call are embedded as they are and a `translation_failed` warning is
 * logged. Put it in front of a query cache, so that the cache keys on the text actually embedded.
 */
export class TranslatingEmbedder implements Embedder {
  readonly model: string;
  readonly dimension: number;
  private readonly remembered: LruCache<string, string>;

  constructor(
    private readonly embedder: Embedder,
    private readonly translator: Translator,
    private readonly options: TranslatingEmbedderOptions = {},
  ) {
    this.model = embedder.model;
    this.dimension = embedder.dimension;
    this.remembered = new LruCache(options.queryMemory ?? 0);
  }

  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    return this.embedder.embed(await this.english(texts, purpose, signal), purpose, signal);
  }

  private async english(
    texts: readonly string[],
    purpose: EmbeddingPurpose,
    signal: AbortSignal | undefined,
  ): Promise<readonly string[]> {
    const english = texts.map((text) => (purpose === "query" ? this.remembered.get(text) : undefined));
    const missing = english.flatMap((text, i) => (text === undefined ? [i] : []));
    if (missing.length === 0) return english as string[];
    const started = performance.now();
    try {
      const translations = await this.translator.toEnglish(
        missing.map((i) => texts[i] as string),
        signal,
      );
      if (translations.length !== missing.length) {
        throw new Error(`${translations.length} translations for ${missing.length} texts`);
      }
      missing.forEach((textIndex, n) => {
        const translation = (translations[n] as Translation).text;
        english[textIndex] = translation;
        if (purpose === "query") this.remembered.set(texts[textIndex] as string, translation);
      });
    } catch (error) {
      signal?.throwIfAborted();
      this.options.log?.({
        event: "translation_failed",
        translator: this.translator.name,
        purpose,
        texts: missing.length,
        ms: Math.round(performance.now() - started),
        error,
      });
      // Embedded as they are, and not remembered: the next time may translate them.
      for (const i of missing) english[i] = texts[i];
    }
    return english as string[];
  }
}
