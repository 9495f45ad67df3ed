/**
 * A shop's Spanish vocabulary on top of Apertium: the data files under vocabulary/ (product nouns,
 * regional words, phrases, accents), matched in a text by whole words, ignoring case and accents,
 * the longest phrase first; and the pre-edit that hands Apertium a placeholder noun where a
 * vocabulary phrase stood, to put the vocabulary's English back in the translation.
 *
 * Why a placeholder rather than Apertium's own lexical-selection rules: those choose only among the
 * translations its bilingual dictionary lists, and of the ~100 single words the vocabulary fixes
 * only four have the right one there (reloj, licuadora, vela, muñeca); the rest are missing
 * ("cafetera", "zapatillas") or listed with one wrong sense only ("cargador" → carrier). And why a placeholder rather than the
 * English word itself: Apertium would read an English word as Spanish when it is one ("case" →
 * marry, "pan" → bread) and would not order it as a noun; a Spanish noun that Apertium translates
 * to a word no shop query holds ("ornitorrinco" → platypus) keeps the sentence's grammar (articles,
 * adjectives after the noun: "reloj elegante" → "elegant watch") and is found again in the output.
 */
import accentsTsv from "./vocabulary/accents.tsv" with { type: "text" };
import phrasesTsv from "./vocabulary/phrases.tsv" with { type: "text" };
import productsTsv from "./vocabulary/products.tsv" with { type: "text" };
import regionalTsv from "./vocabulary/regional.tsv" with { type: "text" };

/** One form of an entry: its Spanish words (normalised) and what replaces them. */
interface Form {
  words: string[];
  replacement: string;
  plural: boolean;
}

/** A stretch of a text that a vocabulary form matched. */
export interface VocabularyMatch {
  start: number;
  end: number;
  replacement: string;
  plural: boolean;
}

/** Lower case, without accents or tildes: "Sábanas" and "sabanas" are one key. */
export function normaliseWord(word: string): string {
  return word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

const PREPOSITIONS = new Set(["de", "del", "para", "con", "sin", "a", "al", "en", "por"]);

/**
 * The plural of a Spanish word: +s after a vowel, +es after a consonant (the last syllable's accent
 * dropped: "cordón" → "cordones"), z → ces; words already ending in s or x stay. In a phrase, the
 * words before its first preposition ("camino de mesa" → "caminos de mesa", "funda nórdica" →
 * "fundas nórdicas").
 */
export function spanishPlural(text: string): string {
  const words = text.split(" ");
  const until = words.findIndex((word, i) => i > 0 && PREPOSITIONS.has(word));
  return words.map((word, i) => (until === -1 || i < until ? pluralOfWord(word) : word)).join(" ");
}

function pluralOfWord(word: string): string {
  if (/[sx]$/u.test(word)) return word;
  if (/z$/u.test(word)) return `${word.slice(0, -1)}ces`;
  if (/[aeiouáéó]$/u.test(word)) return `${word}s`;
  const unaccented = word.replace(
    /([áéíóú])([ns])$/u,
    (_, vowel: string, end: string) => `${normaliseWord(vowel)}${end}`,
  );
  return `${unaccented}es`;
}

/** The plural of an English noun phrase (its last word): +s, +es after s/x/z/ch/sh, consonant + y → ies. */
export function englishPlural(text: string): string {
  if (/(?:s|x|z|ch|sh)$/u.test(text)) return `${text}es`;
  if (/[^aeiou]y$/u.test(text)) return `${text.slice(0, -1)}ies`;
  return `${text}s`;
}

/**
 * The forms of a vocabulary file: `Spanish<TAB>English` (singular), optionally the plurals as a
 * third and fourth column, where "-" says the entry has no other number. `#` starts a comment.
 * Throws on a malformed line, naming it.
 */
export function parseVocabulary(text: string, source: string): Form[] {
  const forms: Form[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const columns = raw.split("\t").map((column) => column.trim());
    const [spanish, english, spanishPlurals, englishPlurals] = columns;
    if (!spanish || !english || columns.length > 4 || columns.length === 3) {
      throw new Error(`${source}:${index + 1}: expected Spanish<TAB>English[<TAB>plural<TAB>plural]`);
    }
    const words = (phrase: string) => phrase.split(/\s+/u).map(normaliseWord);
    const pluralGiven = spanishPlurals !== undefined;
    forms.push({
      words: words(spanish),
      replacement: english,
      plural: pluralGiven && spanishPlurals === "-" && /s$/u.test(spanish),
    });
    if (spanishPlurals === "-") continue;
    const spanishMany = spanishPlurals ?? spanishPlural(spanish);
    const englishMany = englishPlurals && englishPlurals !== "-" ? englishPlurals : englishPlural(english);
    if (normaliseWord(spanishMany) !== normaliseWord(spanish)) {
      forms.push({ words: words(spanishMany), replacement: englishMany, plural: true });
    }
  }
  return forms;
}

/** Words as the vocabulary reads them: runs of letters and digits, with their offsets. */
function wordsOf(text: string): { word: string; start: number; end: number }[] {
  return [...text.matchAll(/[\p{L}\p{N}]+/gu)].map((match) => ({
    word: normaliseWord(match[0]),
    start: match.index as number,
    end: (match.index as number) + match[0].length,
  }));
}

/** Spanish words and phrases with what replaces them, matched by whole words, the longest first. */
export class ShopVocabulary {
  /** Forms by their first word, longest first. */
  private readonly byFirstWord = new Map<string, Form[]>();

  constructor(forms: readonly Form[]) {
    for (const form of forms) {
      const first = form.words[0] as string;
      const list = this.byFirstWord.get(first) ?? [];
      // A later file's form of the same words wins over an earlier one (phrases over single words need no such rule).
      const same = list.findIndex((other) => other.words.join(" ") === form.words.join(" "));
      if (same >= 0) list.splice(same, 1);
      list.push(form);
      list.sort((a, b) => b.words.length - a.words.length);
      this.byFirstWord.set(first, list);
    }
  }

  /** Whether one of the vocabulary's forms is this single word (any case, any accents). */
  has(word: string): boolean {
    return this.byFirstWord.get(normaliseWord(word))?.some((form) => form.words.length === 1) ?? false;
  }

  /** The stretches of `text` that forms match, left to right, without overlaps; words must be separated by spaces only. */
  matches(text: string): VocabularyMatch[] {
    const words = wordsOf(text);
    const found: VocabularyMatch[] = [];
    for (let i = 0; i < words.length; ) {
      const form = this.byFirstWord.get((words[i] as { word: string }).word)?.find((candidate) =>
        candidate.words.every((word, n) => {
          const at = words[i + n];
          if (at === undefined || at.word !== word) return false;
          return n === 0 || /^\s+$/u.test(text.slice((words[i + n - 1] as { end: number }).end, at.start));
        }),
      );
      if (form === undefined) {
        i++;
        continue;
      }
      const last = words[i + form.words.length - 1] as { end: number };
      found.push({
        start: (words[i] as { start: number }).start,
        end: last.end,
        replacement: form.replacement,
        plural: form.plural,
      });
      i += form.words.length;
    }
    return found;
  }

  /** `text` with every match replaced by its replacement (for Spanish → Spanish lists, such as accents). */
  replace(text: string): string {
    let out = text;
    for (const match of this.matches(text).reverse()) {
      out = `${out.slice(0, match.start)}${match.replacement}${out.slice(match.end)}`;
    }
    return out;
  }
}

/** Spanish nouns Apertium translates to a word no shop text holds, used to stand for a vocabulary phrase. */
const PLACEHOLDERS = [
  { singular: "ornitorrinco", plural: "ornitorrincos", feminine: false, english: /\bplatypus(?:es)?\b/iu },
  { singular: "tejón", plural: "tejones", feminine: false, english: /\bbadgers?\b/iu },
  { singular: "erizo", plural: "erizos", feminine: false, english: /\bhedgehogs?\b/iu },
  { singular: "castor", plural: "castores", feminine: false, english: /\bbeavers?\b/iu },
  { singular: "nutria", plural: "nutrias", feminine: true, english: /\botters?\b/iu },
  { singular: "comadreja", plural: "comadrejas", feminine: true, english: /\bweasels?\b/iu },
  { singular: "morsa", plural: "morsas", feminine: true, english: /\bwalrus(?:es)?\b/iu },
] as const;

type Placeholder = (typeof PLACEHOLDERS)[number];

/** Whether an English word is a placeholder noun's translation ("platypus"): it never stands for itself. */
export function isPlaceholderEnglish(word: string): boolean {
  return PLACEHOLDERS.some((placeholder) => placeholder.english.test(word));
}

/** A Spanish text with placeholders for the vocabulary's phrases, and how to put their English back. */
export interface PreEdited {
  text: string;
  /** The translation with each placeholder's English replaced by the vocabulary's English. */
  restore(translation: string): string;
}

/**
 * Replaces each vocabulary phrase of `text` (up to one per placeholder, and only placeholders that
 * the text does not already hold) by a placeholder noun of the same number and, by its ending,
 * gender, so that the adjectives and articles around it still agree.
 */
export function preEdit(text: string, vocabulary: ShopVocabulary): PreEdited {
  const matches = vocabulary.matches(text);
  if (matches.length === 0) return { text, restore: (translation) => translation };
  const lower = normaliseWord(text);
  const free = PLACEHOLDERS.filter(
    (placeholder) => !lower.includes(normaliseWord(placeholder.singular)) && !placeholder.english.test(text),
  );
  const used: { placeholder: Placeholder; english: string; match: VocabularyMatch }[] = [];
  for (const match of matches) {
    const words = text.slice(match.start, match.end).split(/\s+/u);
    const feminine = /as?$/u.test(normaliseWord(words[0] as string));
    const at = free.findIndex((placeholder) => placeholder.feminine === feminine);
    const placeholder = free.splice(Math.max(at, 0), 1)[0];
    if (placeholder === undefined) break; // out of placeholders: Apertium translates the rest as it would
    used.push({ placeholder, english: match.replacement, match });
  }
  let edited = text;
  for (const { placeholder, match } of [...used].reverse()) {
    const noun = match.plural ? placeholder.plural : placeholder.singular;
    edited = `${edited.slice(0, match.start)}${noun}${edited.slice(match.end)}`;
  }
  return {
    text: edited,
    restore(translation) {
      let out = translation;
      for (const { placeholder, english } of used) {
        let replaced = false;
        out = out.replace(placeholder.english, (found) => {
          replaced = true;
          return /^\p{Lu}/u.test(found) && /^\p{Ll}/u.test(english)
            ? english[0]?.toUpperCase() + english.slice(1)
            : english;
        });
        // "an otter" stood for "a candle".
        if (!/^[aeiou]/iu.test(english)) out = out.replace(new RegExp(`\\b(a)n (${english})`, "iu"), "$1 $2");
        // Apertium keeps a noun it knows; should one ever go missing, its meaning is not lost.
        if (!replaced) out = `${out} ${english}`;
      }
      return out;
    },
  };
}

/** The vocabulary of product nouns, regional words and phrases (Spanish → English). */
export const SHOP_VOCABULARY = new ShopVocabulary([
  ...parseVocabulary(productsTsv, "products.tsv"),
  ...parseVocabulary(regionalTsv, "regional.tsv"),
  ...parseVocabulary(phrasesTsv, "phrases.tsv"),
]);

/** Accentless Spanish words Apertium would read as other words ("mama" → breast), with the word meant (Spanish → Spanish). */
export const ACCENT_FIXES = new ShopVocabulary(parseVocabulary(accentsTsv, "accents.tsv"));
