/**
 * Untrusted text as one plain line: invisible format characters (bidi overrides, zero-width) removed,
 * any whitespace or control run turned into one space, the guillemets we quote with replaced, `[#`
 * (how recommendations cite products, `[#12]`) split so that no product text passes for a
 * citation, and the result cut at a word boundary to at most `max` characters (code points, so
 * no emoji is split).
 */
export function plain(text: string, max: number): string {
  const line = text
    .replace(/\p{Cf}/gu, "")
    .replace(/[\s\p{Cc}\p{Z}]+/gu, " ")
    .replace(/[«»]/g, '"')
    .replaceAll("[#", "[ #")
    .trim();
  const chars = Array.from(line);
  if (chars.length <= max) return line;
  const cut = chars.slice(0, max - 1).join("");
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,.;:]+$/u, "")}…`;
}
