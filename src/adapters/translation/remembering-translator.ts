import { LruCache } from "../../lib/lru-cache.ts";
import type { Translation, Translator } from "../../ports/translator.ts";

/** A translator that remembers the translations of the last `entries` texts, so a repeated query costs nothing. */
export class RememberingTranslator implements Translator {
  readonly name: string;
  private readonly memory: LruCache<string, Translation>;

  constructor(
    private readonly translator: Translator,
    entries: number,
  ) {
    this.name = translator.name;
    this.memory = new LruCache(entries);
  }

  async toEnglish(texts: readonly string[], signal?: AbortSignal): Promise<Translation[]> {
    const answers = texts.map((text) => this.memory.get(text));
    const missing = answers.flatMap((answer, i) => (answer === undefined ? [i] : []));
    if (missing.length > 0) {
      const fresh = await this.translator.toEnglish(
        missing.map((i) => texts[i] as string),
        signal,
      );
      missing.forEach((textIndex, n) => {
        const translation = fresh[n];
        if (!translation) return;
        answers[textIndex] = translation;
        this.memory.set(texts[textIndex] as string, translation);
      });
    }
    return answers.map((answer, i) => answer ?? { text: texts[i] as string, language: "unknown", translated: false });
  }

  close(): Promise<void> {
    return this.translator.close();
  }
}
