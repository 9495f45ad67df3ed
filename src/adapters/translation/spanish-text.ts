/**
 * The text work around Apertium that needs no process: its stream format (escaping, reading
 * analyses and translations back), telling Spanish from English by what each language's analyser
 * knows, and the general repairs of casual Spanish (chat abbreviations, missing accents, a dropped
 * letter) whose candidates the Spanish analyser then checks.
 */
import type { Language } from "../../ports/translator.ts";
import { spanishPlural } from "./shop-vocabulary.ts";

/** Characters Apertium's stream format reserves; a backslash makes them plain text. */
const RESERVED = /[[\]^$/\\@<>{}]/g;

/** The text as Apertium input: reserved characters escaped, NUL (its segment end) removed. */
export function escapeForApertium(text: string): string {
  return text.replaceAll("\u0000", " ").replace(RESERVED, (char) => `\\${char}`);
}

/**
 * A translation as plain text: escapes undone, and Apertium's marks in front of words it could not
 * analyse (`*`), translate (`@`) or generate (`#`) removed. A mark is an unescaped `*`, `@` or `#`
 * that starts a word (no letter or digit before it, something after it); the input's own `@` comes
 * back escaped, so it stays.
 */
export function readTranslation(output: string): string {
  let text = "";
  let previous = "";
  for (let i = 0; i < output.length; i++) {
    const char = output[i] as string;
    if (char === "\\" && i + 1 < output.length) {
      previous = output[++i] as string;
      text += previous;
      continue;
    }
    const next = output[i + 1] ?? "";
    const isMark =
      (char === "*" || char === "@" || char === "#") && !/[\p{L}\p{N}]/u.test(previous) && /\S/u.test(next);
    if (!isMark) text += char;
    previous = char;
  }
  // A word Apertium drops ("se") leaves its spaces behind.
  return text.replace(/[ \t]{2,}/gu, " ").trim();
}

/** One unit of an analyser's output, `^surface/analysis/...$`: a word (or a multiword) and whether it knows it. */
export interface AnalysedUnit {
  surface: string;
  known: boolean;
}

/** The units of `lt-proc` output, in order (punctuation and numbers included). */
export function readAnalysis(output: string): AnalysedUnit[] {
  const units: AnalysedUnit[] = [];
  // ^surface/analysis/...$: an unknown word's only "analysis" is *surface.
  for (const match of output.matchAll(/\^((?:\\.|[^\\/$])*)(?:\/((?:\\.|[^\\$])*))?\$/gu)) {
    const analyses = match[2];
    units.push({
      surface: (match[1] as string).replace(/\\(.)/gu, "$1"),
      known: analyses !== undefined && analyses !== "" && !analyses.startsWith("*"),
    });
  }
  return units;
}

/** What the two analysers, and the repairs, know of one word of a text. */
export interface WordKnowledge {
  /** The Spanish analyser knows it, or the shop vocabulary does, or a repair found the word meant. */
  spanish: boolean;
  english: boolean;
  /** Spanish through a repair (an accent put back, a diminutive undone) or the shop vocabulary. */
  repaired: boolean;
}

/**
 * Each word of the analysed text (lower case, in order) with what each analyser knows of it; a
 * multiword unit ("la de") counts for each of its words. `spanishAlso` names the words known to be
 * Spanish otherwise (the vocabulary, repairs).
 */
export function knowledgeOfWords(
  spanish: readonly AnalysedUnit[],
  english: readonly AnalysedUnit[],
  spanishAlso: (word: string) => boolean = () => false,
): WordKnowledge[] {
  const known = (units: readonly AnalysedUnit[]) => {
    const words = new Map<string, boolean>();
    for (const unit of units) {
      for (const word of unit.surface.toLowerCase().split(/\s+/u))
        words.set(word, (words.get(word) ?? false) || unit.known);
    }
    return words;
  };
  const inSpanish = known(spanish);
  const inEnglish = known(english);
  return spanish
    .flatMap((unit) => unit.surface.toLowerCase().split(/\s+/u))
    .filter((word) => /\p{L}/u.test(word))
    .map((word) => {
      const also = spanishAlso(word);
      return { spanish: (inSpanish.get(word) ?? false) || also, english: inEnglish.get(word) ?? false, repaired: also };
    });
}

/**
 * The words of the analysed text (lower case, letters only, without repeats) that neither analyser
 * knows, nor `alsoKnown` (the vocabulary, the repairs): misspellings, most often, or names.
 */
export function unknownWords(
  spanish: readonly AnalysedUnit[],
  english: readonly AnalysedUnit[],
  alsoKnown: (word: string) => boolean,
): string[] {
  const wordsOf = (unit: AnalysedUnit) => unit.surface.toLowerCase().split(/\s+/u);
  const known = new Set([...spanish, ...english].filter((unit) => unit.known).flatMap(wordsOf));
  const unknown = spanish
    .flatMap(wordsOf)
    .filter((word) => /^\p{L}+$/u.test(word) && !known.has(word) && !alsoKnown(word));
  return [...new Set(unknown)];
}

/**
 * The language of a text from what is known of its words, counting only the words some language
 * knows (names, brands and model numbers tell nothing: "reloj casio" is Spanish): Spanish when more
 * than half of those are Spanish and more than are English, English the other way round. A tie
 * goes to Spanish when a word is Spanish once repaired or through the shop vocabulary ("cafe" is
 * café; "jersey" a sweater); otherwise, and when no word is known, unknown.
 */
export function decideLanguage(words: readonly WordKnowledge[]): Language {
  const counted = words.filter((word) => word.spanish || word.english);
  if (counted.length === 0) return "unknown";
  const es = counted.filter((word) => word.spanish).length / counted.length;
  const en = counted.filter((word) => word.english).length / counted.length;
  if (es > 0.5 && es > en) return "es";
  if (en > 0.5 && en > es) return "en";
  if (es === en && counted.some((word) => word.repaired)) return "es";
  return "unknown";
}

/**
 * Common Spanish chat and SMS abbreviations (as in general lists of them), written out. Applied to
 * whole words only, and to the translation of a text only once it reads as Spanish.
 */
export const CHAT_ABBREVIATIONS: Readonly<Record<string, string>> = {
  q: "que",
  k: "que",
  ke: "que",
  qe: "que",
  xq: "porque",
  pq: "porque",
  porq: "porque",
  xk: "porque",
  x: "por",
  pa: "para",
  xa: "para",
  pal: "para el",
  d: "de",
  dl: "del",
  tb: "también",
  tmb: "también",
  tbn: "también",
  tmp: "tampoco",
  cdo: "cuando",
  dnd: "donde",
  bn: "bien",
  nd: "nada",
  msj: "mensaje",
  mñn: "mañana",
  xfa: "por favor",
  xfavor: "por favor",
  porfa: "por favor",
  pf: "por favor",
  xo: "pero",
  sq: "es que",
  finde: "fin de semana",
  cel: "celular",
  compu: "computadora",
};

/** The text with every chat abbreviation written out (case of the rest kept). */
export function expandAbbreviations(text: string): string {
  return text.replace(
    /(?<![\p{L}\p{N}])\p{L}+(?![\p{L}\p{N}])/gu,
    (word) => CHAT_ABBREVIATIONS[word.toLowerCase()] ?? word,
  );
}

const DIACRITICS: Readonly<Record<string, readonly string[]>> = {
  a: ["á"],
  e: ["é"],
  i: ["í"],
  o: ["ó"],
  u: ["ú", "ü"],
  n: ["ñ"],
};

/** The word with one letter given the accent (or tilde) casual typing leaves out: "bateria" → "batería", …. */
export function accentVariants(word: string): string[] {
  const variants: string[] = [];
  for (const [i, char] of [...word].entries()) {
    for (const accented of DIACRITICS[char] ?? []) variants.push(replaceAt(word, i, 1, accented));
  }
  return variants;
}

const SPANISH_LETTERS = [..."abcdefghijklmnopqrstuvwxyzáéíóúñü"];

/**
 * The word with one letter put back where casual typing drops one ("cargadr" → "cargador"); never
 * in front of the word, which changes a word more than a slip does. Other slips (a wrong, an extra
 * or a swapped letter) are not tried: the analyser does not know every real word ("jabones"), and
 * those edits turn too many real words into other real words ("jamones").
 */
export function omissionVariants(word: string): string[] {
  const length = [...word].length;
  const variants = new Set<string>();
  for (let i = 1; i <= length; i++) {
    for (const letter of SPANISH_LETTERS) variants.add(replaceAt(word, i, 0, letter));
  }
  return [...variants];
}

/**
 * The words one slip of the keyboard away from `word`, for a word no dictionary knows ("mocasijes"
 * → "mocasines", "cuchara" from "cuhcara"): one letter put back (as omissionVariants), one letter
 * replaced by another, one letter too many dropped, two neighbouring letters swapped. Which one is
 * a word is for the Spanish analyser (or the shop vocabulary) to say.
 */
export function typoVariants(word: string): string[] {
  const letters = [...word];
  const variants = new Set(omissionVariants(word));
  for (let i = 0; i < letters.length; i++) {
    for (const letter of SPANISH_LETTERS) if (letter !== letters[i]) variants.add(replaceAt(word, i, 1, letter));
    if (letters.length > 3) variants.add(replaceAt(word, i, 1, ""));
    if (i + 1 < letters.length && letters[i] !== letters[i + 1]) {
      variants.add(replaceAt(word, i, 2, `${letters[i + 1]}${letters[i]}`));
    }
  }
  variants.delete(word);
  return [...variants];
}

/** Diminutive endings, the longest first, with the endings the word may have had instead, most likely first. */
const DIMINUTIVES: readonly (readonly [string, readonly string[]])[] = [
  ["ecito", ["e", ""]],
  ["ecita", ["e", ""]],
  ["cito", ["", "e"]],
  ["cita", ["", "e"]],
  ["ito", ["o", "", "e"]],
  ["ita", ["a", "", "e"]],
  ["illo", ["o", "", "e"]],
  ["illa", ["a", "", "e"]],
];

/**
 * The words a diminutive may come from, most likely first ("relojito" → "reloj", "tacita" →
 * "taza", "bolsitos" → "bolsos", "cafecito" → "café"), spelling changes undone (c → z, qu → c,
 * gu → g) and a missing accent tried; none when the word has no diminutive ending. Which one is a
 * word is for the Spanish analyser (or the shop vocabulary) to say.
 */
export function diminutiveBases(word: string): string[] {
  const plural = word.endsWith("s");
  const singular = plural ? word.slice(0, -1) : word;
  const bases: string[] = [];
  for (const [suffix, endings] of DIMINUTIVES) {
    if (!singular.endsWith(suffix) || singular.length - suffix.length < 2) continue;
    const stem = singular.slice(0, -suffix.length);
    const stems = [stem];
    if (stem.endsWith("qu")) stems.push(`${stem.slice(0, -2)}c`);
    else if (stem.endsWith("gu")) stems.push(`${stem.slice(0, -2)}g`);
    else if (stem.endsWith("c")) stems.push(`${stem.slice(0, -1)}z`);
    for (const base of stems.flatMap((s) => endings.map((ending) => `${s}${ending}`))) {
      for (const form of [base, ...accentVariants(base)]) bases.push(plural ? spanishPlural(form) : form);
    }
  }
  return [...new Set(bases)].filter((base) => base !== word && [...base].length >= 2);
}

/** `word` with `count` letters (code points) from `index` replaced by `insert`. */
function replaceAt(word: string, index: number, count: number, insert: string): string {
  const letters = [...word];
  letters.splice(index, count, insert);
  return letters.join("");
}

/** `text` with each whole-word occurrence of a key of `replacements` (compared lower-cased) replaced. */
export function replaceWords(text: string, replacements: ReadonlyMap<string, string>): string {
  if (replacements.size === 0) return text;
  return text.replace(
    /(?<![\p{L}\p{N}])\p{L}+(?![\p{L}\p{N}])/gu,
    (word) => replacements.get(word.toLowerCase()) ?? word,
  );
}

/**
 * Parts of speech whose other translations a search may match too: nouns (proper nouns too) and
 * adjectives. Not verbs ("lleve": carry, take, wear; on the dev queries they took hybrid nDCG@10
 * from 0.764 to 0.763), nor articles, prepositions or pronouns, whose alternatives match everything.
 */
const CONTENT_WORD = /^<(?:n|np|adj)>/u;

/**
 * The English lemmas the bilingual dictionary (`lt-proc -b`, after the tagger) gives for each
 * content word of its output, `^lemma<tags>/one<tags>/other<tags>$`: every translation of the
 * reading the tagger chose, lower case, in order of appearance, without repeats. Unknown words
 * (`*word`) and words the dictionary lacks (`@word`) give none.
 */
export function readBilingualAlternatives(output: string): string[] {
  const lemmas = new Set<string>();
  for (const match of output.matchAll(/\^((?:\\.|[^\\$])*)\$/gu)) {
    const [source = "", ...translations] = (match[1] as string).split(/(?<!\\)\//u);
    const tags = source.slice(source.search(/(?<!\\)</u));
    if (source.startsWith("*") || !CONTENT_WORD.test(tags)) continue;
    for (const translation of translations) {
      if (translation.startsWith("@") || translation.startsWith("*")) continue;
      const lemma = translation
        .replace(/<[^>]*>/gu, "")
        .replaceAll("#", "")
        .replace(/\\(.)/gu, "$1")
        .trim()
        .toLowerCase();
      if (/\p{L}/u.test(lemma)) lemmas.add(lemma);
    }
  }
  return [...lemmas];
}
