import { expect, test } from "bun:test";
import { RememberingTranslator } from "../../../src/adapters/translation/remembering-translator.ts";
import type { Translation, TranslationOptions, Translator } from "../../../src/ports/translator.ts";

/** Answers each text with what it was asked and the words it was told to keep; counts the texts it translated. */
class EchoTranslator implements Translator {
  readonly name = "echo";
  readonly asked: string[] = [];

  async toEnglish(
    texts: readonly string[],
    _signal?: AbortSignal,
    options?: TranslationOptions,
  ): Promise<Translation[]> {
    this.asked.push(...texts);
    const kept = (options?.keepWords ?? []).join(",");
    return texts.map((text) => ({ text: `${text} [${kept}]`, language: "es", translated: true }));
  }

  async close(): Promise<void> {}
}

test("a text translated within the last entries is answered from memory; only the others reach the translator", async () => {
  const inner = new EchoTranslator();
  const remembering = new RememberingTranslator(inner, 10);
  await remembering.toEnglish(["reloj", "taza"]);
  const answers = await remembering.toEnglish(["taza", "funda", "reloj"]);
  expect(answers.map((answer) => answer.text)).toEqual(["taza []", "funda []", "reloj []"]);
  expect(inner.asked).toEqual(["reloj", "taza", "funda"]);
});

test("the words kept are part of what is remembered: the same text keeping a word is another translation", async () => {
  const inner = new EchoTranslator();
  const remembering = new RememberingTranslator(inner, 10);
  expect((await remembering.toEnglish(["reloj casio"]))[0]?.text).toBe("reloj casio []");
  expect((await remembering.toEnglish(["reloj casio"], undefined, { keepWords: ["casio"] }))[0]?.text).toBe(
    "reloj casio [casio]",
  );
  // Each remembered under its own key; the order of the words kept does not matter.
  expect((await remembering.toEnglish(["reloj casio"]))[0]?.text).toBe("reloj casio []");
  await remembering.toEnglish(["a b"], undefined, { keepWords: ["b", "a"] });
  await remembering.toEnglish(["a b"], undefined, { keepWords: ["a", "b"] });
  expect(inner.asked).toEqual(["reloj casio", "reloj casio", "a b"]);
});
