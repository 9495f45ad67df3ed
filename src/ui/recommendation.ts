/**
 * The recommendation's text as the page shows it: plain text with its citations (`[#12]`, the one
 * form the service keeps, and only for products it returned) turned into links to those products,
 * and the label `[PROVIDER - model]` the finished text starts with shown apart from the text.
 */

export type Segment = { kind: "text"; text: string } | { kind: "citation"; id: number };

const CITATION = /\[#(\d{1,15})\]/g;

/** The text cut into plain pieces and citations, in order. */
export function segmentsOf(text: string): Segment[] {
  const segments: Segment[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    if (match.index > last) segments.push({ kind: "text", text: text.slice(last, match.index) });
    segments.push({ kind: "citation", id: Number(match[1]) });
    last = match.index + match[0].length;
  }
  if (last < text.length) segments.push({ kind: "text", text: text.slice(last) });
  return segments;
}

/** The ids cited in the text, each once, in the order they first appear. */
export function citedIds(text: string): number[] {
  return [...new Set(segmentsOf(text).flatMap((segment) => (segment.kind === "citation" ? [segment.id] : [])))];
}

export interface Writer {
  provider: string | null;
  model: string | null;
  /** Which link of the service's chain of writers wrote it: 0 the first; more when earlier ones failed. */
  position: number | null;
}

/** The finished recommendation without its leading `[PROVIDER - model]` label, and that label for display. */
export function splitLabel(recommendation: string, writer: Writer): { text: string; label: string | null } {
  if (writer.provider === null) return { text: recommendation, label: null };
  const label = writer.model === null ? writer.provider : `${writer.provider} · ${writer.model}`;
  const prefix = `[${writer.provider} - ${writer.model}]`;
  const text = recommendation.startsWith(prefix) ? recommendation.slice(prefix.length).trimStart() : recommendation;
  return { text, label: (writer.position ?? 0) > 0 ? `${label} (de reserva)` : label };
}
