/**
 * Rules every stored or searched text follows. Text is trimmed of whitespace and of invisible
 * format characters (zero-width spaces, joiners, BOM) at both ends; a text made only of such
 * characters counts as empty. A product's fields also lose the invisible characters inside them
 * (cleanText). PostgreSQL's text type cannot hold U+0000, and a lone UTF-16
 * surrogate cannot be encoded as UTF-8 (it would be stored as U+FFFD), so both are refused as bad
 * input here rather than failing or being altered later.
 */

const INVISIBLE_EDGES = /^[\s\p{Cf}]+|[\s\p{Cf}]+$/gu;
const VISIBLE_CHARACTER = /[^\s\p{Cf}\p{Cc}]/u;

/** The text without whitespace and invisible format characters at either end. */
export function trimText(text: string): string {
  return text.replace(INVISIBLE_EDGES, "");
}

/**
 * What a text may hold inside it, not only at its ends (the rule of the product fields):
 * - `line` (a product's name and category): control characters (C0, DEL, C1) and format characters
 *   (Unicode's Cf: the bidi marks U+200E, U+200F and U+061C, embeddings and overrides U+202A–U+202E,
 *   isolates U+2066–U+2069, zero-width space U+200B, word joiner and invisible operators
 *   U+2060–U+2064, BOM U+FEFF, soft hyphen U+00AD, the tag characters U+E0000–U+E007F, which can
 *   carry text a reader does not see but a language model reads...) are removed; each run of line
 *   breaks and tabs becomes one space. Kept: ZWNJ and ZWJ (U+200C, U+200D), which shape Persian and
 *   Indic words and join emoji into one (👨‍👩‍👧), and the format characters that are visible
 *   (the Arabic number signs U+0600–U+0605 and their kin, which span the digits after them).
 * - `paragraphs` (a description): the same, but line breaks and tabs stay: CRLF, CR, NEL, U+2028
 *   and U+2029 become LF; any other control character goes.
 * - `code` (a sku): as `line`, and ZWNJ and ZWJ go too: two skus that look the same are the same.
 * U+0000 is not removed but refused (textProblem): it means binary data where text was expected.
 */
export type TextKind = "line" | "paragraphs" | "code";

/** Format characters that are visible (Unicode's prepended concatenation marks): never removed. */
const VISIBLE_FORMAT = "\\u0600-\\u0605\\u06DD\\u070F\\u0890\\u0891\\u08E2\\u{110BD}\\u{110CD}";
const JOINERS = "\\u200C\\u200D";

/** Control and format characters, except U+0000 (refused instead), the visible ones and `kept`. */
const invisibleExcept = (kept: string) => new RegExp(`(?![\\u0000${VISIBLE_FORMAT}${kept}])[\\p{Cc}\\p{Cf}]`, "gu");

const INVISIBLE = {
  line: invisibleExcept(JOINERS),
  paragraphs: invisibleExcept(`${JOINERS}\\t\\n`),
  code: invisibleExcept(""),
} as const satisfies Record<TextKind, RegExp>;
const BREAKS_AND_TABS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;
const LINE_BREAK = /\r\n?|[\u0085\u2028\u2029]/g;

/** The text without the invisible characters its kind may not hold (see TextKind); its ends are left to trimText. */
export function cleanText(text: string, kind: TextKind): string {
  const spaced = kind === "paragraphs" ? text.replace(LINE_BREAK, "\n") : text.replace(BREAKS_AND_TABS, " ");
  return spaced.replace(INVISIBLE[kind], "");
}

/** False when PostgreSQL could not store the text as it is (a NUL, a lone surrogate). */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && text.isWellFormed();
}

export interface TextRules {
  maxLength: number;
  /** True: an empty text is fine (it must still be storable and within maxLength). */
  mayBeEmpty?: boolean;
}

/**
 * Why a text (already trimmed) breaks the rules, as the end of a Spanish sentence about the field
 * ("no puede estar vacío"), or null when it is fine.
 */
export function textProblem(text: string, rules: TextRules): string | null {
  if (!rules.mayBeEmpty && !VISIBLE_CHARACTER.test(text)) return "no puede estar vacío";
  if (!isStorableText(text)) return "contiene un carácter no admitido (U+0000 o un carácter UTF-16 incompleto)";
  if (text.length > rules.maxLength) return `admite como máximo ${rules.maxLength} caracteres`;
  return null;
}
