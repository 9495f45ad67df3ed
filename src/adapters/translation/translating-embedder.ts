import type { Vector } from "../../domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import type { Translation, Translator } from "../../ports/translator.ts";

export interface TranslatingEmbedderOptions {
  /** Receives a warning when translation fails (the texts are then embedded as they are). */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * An embedder that hands its embedder English: every text the translator reads as Spanish is
 * translated first (the stored product keeps its own text; only the vector comes from the
 * translation). The service embeds product texts through it; a search translates its query once
 * itself (domain/search-and-recommend.ts), for the embedding and the lexical side together. It answers in the embedder's own vector space (`model`,
 * `dimension`), so its vectors and the embedder's stay comparable.
 *
 * Translation never fails an embedding: when the translator cannot answer (missing, timed out,
 * crashed), the texts of that call are embedded as they are and a `translation_failed` warning is
 * logged.
 */
export class TranslatingEmbedder implements Embedder {
  readonly model: string;
  readonly dimension: number;

  constructor(
    private readonly embedder: Embedder,
    private readonly translator: Translator,
    private readonly options: TranslatingEmbedderOptions = {},
  ) {
    this.model = embedder.model;
    this.dimension = embedder.dimension;
  }

  get callsAtOnce(): number | undefined {
    return this.embedder.callsAtOnce;
  }

  get textsPerCall(): number | undefined {
    return this.embedder.textsPerCall;
  }

  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    return this.embedder.embed(await this.english(texts, purpose, signal), purpose, signal);
  }

  private async english(
    texts: readonly string[],
    purpose: EmbeddingPurpose,
    signal: AbortSignal | undefined,
  ): Promise<readonly string[]> {
    if (texts.length === 0) return texts;
    const started = performance.now();
    try {
      const translations = await this.translator.toEnglish(texts, signal);
      if (translations.length !== texts.length) {
        throw new Error(`${translations.length} translations for ${texts.length} texts`);
      }
      return translations.map((translation: Translation) => translation.text);
    } catch (error) {
      signal?.throwIfAborted();
      this.options.log?.({
        event: "translation_failed",
        translator: this.translator.name,
        purpose,
        texts: texts.length,
        ms: Math.round(performance.now() - started),
        error,
      });
      // Embedded as they are: the next call may translate them.
      return texts;
    }
  }
}
