import { LruCache } from "../../lib/lru-cache.ts";
import type { Translation, TranslationOptions, Translator } from "../../ports/translator.ts";

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

  async toEnglish(
    texts: readonly string[],
    signal?: AbortSignal,
    options?: TranslationOptions,
  ): Promise<Translation[]> {
    // Words kept change the answer: they are part of what is remembered.
    const kept = [...new Set(options?.keepWords ?? [])].sort().join(" ");
    const key = (text: string) => (kept === "" ? text : `${text}\u0000${kept}`);
    const answers = texts.map((text) => this.memory.get(key(text)));
    const missing = answers.flatMap((answer, i) => (answer === undefined ? [i] : []));
    if (missing.length > 0) {
      const fresh = await this.translator.toEnglish(
        missing.map((i) => texts[i] as string),
        signal,
        options,
      );
      missing.forEach((textIndex, n) => {
        const translation = fresh[n];
        if (!translation) return;
        answers[textIndex] = translation;
        this.memory.set(key(texts[textIndex] as string), translation);
      });
    }
    return answers.map((answer, i) => answer ?? { text: texts[i] as string, language: "unknown", translated: false });
  }

  close(): Promise<void> {
    return this.translator.close();
  }
}
