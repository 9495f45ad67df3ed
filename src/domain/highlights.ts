/**
 * Highlights: a result's name and description with the words the search matched marked
 * (`<mark>…</mark>`), HTML-escaped apart from the marks, so a page may show them as they are.
 */

/** A result's highlighted name and description snippet. */
export interface Highlights {
  name: string;
  description: string;
}

/** Longest description snippet, in characters (a longer description is cut around its first match). */
export const SNIPPET_LENGTH = 200;

/** Words too common to mark, in Spanish and English (the query's own are not worth showing). */
const STOP_WORDS = new Set(
  "de del la las el los un una unos unas y o para por con sin en que se al lo su sus the a an and or for of with to in on my".split(
    " ",
  ),
);

/** Lower case, without diacritics: "Órbita" and "orbita" are the same word here. */
function folded(word: string): string {
  return word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

/**
 * The words to mark: those of the query's texts (the query, its English) and of their expansions
 * (the dictionary's other translations, the catalogue's synonyms), folded, without stop words.
 */
export function wordsToMark(texts: readonly string[]): string[] {
  const words = texts.flatMap((text) => text.match(/[\p{L}\p{N}]+/gu) ?? []).map(folded);
  return [...new Set(words.filter((word) => word.length >= 2 && !STOP_WORDS.has(word)))];
}

/**
 * Whether a word of the text stands for a word to mark: the same, or of the same stem as far as a
 * prefix tells (a word of 5 letters or more and one sharing all but its last two: "zapatillas"
 * marks "zapatilla", "cushions" marks "cushion").
 */
function matches(token: string, words: readonly string[]): boolean {
  const word = folded(token);
  return words.some((wanted) => {
    if (word === wanted) return true;
    if (wanted.length < 5 || word.length < 5) return false;
    const stem = Math.max(4, Math.min(wanted.length, word.length) - 2);
    return word.slice(0, stem) === wanted.slice(0, stem);
  });
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escaped(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] as string);
}

/** The text, HTML-escaped, with every word that stands for one of `words` in `<mark>`. */
export function marked(text: string, words: readonly string[]): string {
  let out = "";
  let last = 0;
  for (const match of text.matchAll(/[\p{L}\p{N}]+/gu)) {
    const at = match.index;
    if (!matches(match[0], words)) continue;
    out += `${escaped(text.slice(last, at))}<mark>${escaped(match[0])}</mark>`;
    last = at + match[0].length;
  }
  return out + escaped(text.slice(last));
}

/**
 * The product's highlights: the name whole, the description whole up to SNIPPET_LENGTH characters,
 * else a snippet of that length from a little before its first marked word, `…` where it was cut.
 */
export function highlightsOf(product: { name: string; description: string }, words: readonly string[]): Highlights {
  return { name: marked(product.name, words), description: marked(snippetOf(product.description, words), words) };
}

function snippetOf(description: string, words: readonly string[]): string {
  if (description.length <= SNIPPET_LENGTH) return description;
  const first = [...description.matchAll(/[\p{L}\p{N}]+/gu)].find((match) => matches(match[0], words));
  const start = Math.max(0, Math.min((first?.index ?? 0) - 40, description.length - SNIPPET_LENGTH));
  const end = start + SNIPPET_LENGTH;
  return `${start > 0 ? "…" : ""}${description.slice(start, end)}${end < description.length ? "…" : ""}`;
}
