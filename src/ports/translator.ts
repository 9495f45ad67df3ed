/** The language a text was taken to be in: "unknown" when it could not be told (too short, numbers, names). */
export type Language = "es" | "en" | "unknown";

export interface Translation {
  /** English: the translation of a Spanish text, or the text itself. */
  text: string;
  language: Language;
  translated: boolean;
  /**
   * Other English words the dictionary gives for the translated text's words, besides those the
   * translation chose ("reloj": watch chosen, clock another): a search may match them too. Absent
   * when there are none, or the translator cannot tell.
   */
  alternatives?: string[];
  /**
   * The text's words (lower case) that no dictionary of the translator knows, once repaired: most
   * often misspellings, which a search may match by spelling. Absent when there are none, or the
   * translator cannot tell.
   */
  unknownWords?: string[];
  /**
   * The text's words (lower case) taken for misspellings and translated as the word one slip away
   * ("cargadr" as cargador); absent when there are none. A brand typed in lower case can be one
   * ("casio" read as casino): a caller that knows it for a real word asks again, keeping it.
   */
  typoRepairs?: string[];
}

export interface TranslationOptions {
  /** Words (lower case) never taken for misspellings: kept as they are written (names the catalogue holds). */
  keepWords?: readonly string[];
}

/**
 * Brings texts into English, for an embedder that only understands English. Texts it does not
 * take to be Spanish come back as they are.
 */
export interface Translator {
  /** Names the engine in logs, e.g. "apertium spa-eng". */
  readonly name: string;
  /** One answer per text, in order. Rejects when the engine cannot answer (not installed, timed out, crashed). */
  toEnglish(texts: readonly string[], signal?: AbortSignal, options?: TranslationOptions): Promise<Translation[]>;
  /** Stops whatever the translator runs; a later call may start it again. */
  close(): Promise<void>;
}
