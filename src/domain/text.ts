/**
 * Text that can be stored: PostgreSQL's text type cannot hold U+0000, so a NUL is refused as bad
 * input here rather than failing later in the database.
 */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000");
}
