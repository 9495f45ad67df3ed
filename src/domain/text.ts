/**
 * Rules every stored or searched text follows. Text is trimmed of whitespace and of invisible
 * format characters (zero-width spaces, joiners, BOM) at both ends; a text made only of such
 * characters counts as empty. PostgreSQL's text type cannot hold U+0000, and a lone UTF-16
 * surrogate cannot be encoded as UTF-8 (it would be stored as U+FFFD), so both are refused as bad
 * input here rather than failing or being altered later.
 */

const INVISIBLE_EDGES = /^[\s\p{Cf}]+|[\s\p{Cf}]+$/gu;
const VISIBLE_CHARACTER = /[^\s\p{Cf}\p{Cc}]/u;

/** The text without whitespace and invisible format characters at either end. */
export function trimText(text: string): string {
  return text.replace(INVISIBLE_EDGES, "");
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
