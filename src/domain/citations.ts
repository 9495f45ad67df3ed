import type { GenerationEvent, Recommendation } from "../ports/generator.ts";

/**
 * Citations: a recommendation cites each product it names by id, right after the name, in the one
 * form the prompt asks for, `[#12]`. Only ids of the products returned to the client count: a
 * valid marker stays in the text (in that canonical form) and its id is reported; any other marker
 * is removed from the text.
 *
 * What counts as a marker: `[#` then, before any line break or `[` and within 64 characters, a
 * closing `]`. Its content is a list of ids, `[#12]` or leniently `[#12, #13]` (each valid id is
 * written back as its own `[#12][#13]`); a marker with anything else inside (`[#abc]`, `[#]`) is
 * malformed and removed. A `[#` never closed that way is plain text.
 * Removing a marker also removes the spaces before it (or, at the start of a line, after it), so
 * "la cafetera [#99]." becomes "la cafetera.". The text is trimmed.
 */

/** How a recommendation cites product `id`. */
export function citationMarker(id: number): string {
  return `[#${id}]`;
}

export interface CheckedCitations {
  /** The text with its valid markers kept and every other one removed, trimmed. */
  text: string;
  /** The valid ids cited, each once, in the order they are first cited. */
  citedIds: number[];
}

/** Checks every citation of `text` against the ids of the products returned. */
export function checkCitations(text: string, validIds: Iterable<number>): CheckedCitations {
  const filter = new CitationFilter(validIds);
  const checked = filter.push(text) + filter.end();
  return { text: checked, citedIds: filter.citedIds };
}

/** Longest content between `[#` and `]` that can still be a marker. */
const MAX_MARKER_CONTENT = 64;
/** Ids beyond 15 digits could not be told apart as numbers. */
const ID_ITEM = /^#?\s*(\d{1,15})$/;
const LINE_BREAK = /[\n\r\u2028\u2029]/;
/** The next character that needs a decision: whitespace or a possible marker. */
const SPECIAL = /[\s[]/g;

type MarkerScan =
  /** Not enough text yet to tell. */
  | { kind: "incomplete" }
  /** The `[` is plain text. */
  | { kind: "text" }
  /** A marker ending before `end`; `ids` null when malformed. */
  | { kind: "marker"; end: number; ids: number[] | null };

/**
 * checkCitations for a text that arrives in pieces: `push` each piece and send what it returns,
 * then send what `end` returns. What is sent, joined, is exactly checkCitations of the whole text,
 * however it was cut: a piece that ends inside a possible marker (`[`, `[#1`) or in whitespace is
 * held back until the rest tells what it is.
 */
export class CitationFilter {
  private readonly valid: ReadonlySet<number>;
  private readonly cited: number[] = [];
  /** Input not decided yet: empty, or a possible marker starting with `[`. */
  private pending = "";
  /** Whitespace after the last text sent: sent before the next text, dropped at the end. */
  private heldSpace = "";
  /** Some text was sent (whitespace before it is dropped). */
  private started = false;
  /** A removed marker began a line: the spaces after it are dropped as well. */
  private skipSpaces = false;

  constructor(validIds: Iterable<number>) {
    this.valid = new Set(validIds);
  }

  /** The valid ids cited so far, each once, in the order they were first cited. */
  get citedIds(): number[] {
    return [...this.cited];
  }

  /** The next piece of the text; returns what can be sent now. */
  push(piece: string): string {
    this.pending += piece;
    return this.drain(false);
  }

  /** The text is over: returns the rest (a `[#` left open is plain text; trailing whitespace goes). */
  end(): string {
    const rest = this.drain(true);
    this.heldSpace = "";
    return rest;
  }

  private drain(final: boolean): string {
    const input = this.pending;
    let out = "";
    let i = 0;
    while (i < input.length) {
      SPECIAL.lastIndex = i;
      const next = SPECIAL.exec(input);
      const stop = next ? next.index : input.length;
      if (stop > i) {
        out += this.text(input.slice(i, stop));
        i = stop;
        continue;
      }
      const char = input[i] as string;
      if (char !== "[") {
        this.space(char);
        i++;
        continue;
      }
      const scan = scanMarker(input, i, final);
      if (scan.kind === "incomplete") break;
      if (scan.kind === "text") {
        out += this.text("[");
        i++;
      } else {
        out += this.marker(scan.ids);
        i = scan.end;
      }
    }
    this.pending = input.slice(i);
    return out;
  }

  private text(run: string): string {
    const out = this.heldSpace + run;
    this.heldSpace = "";
    this.started = true;
    this.skipSpaces = false;
    return out;
  }

  private space(char: string): void {
    if (!this.started) return;
    if (LINE_BREAK.test(char)) this.skipSpaces = false;
    else if (this.skipSpaces) return;
    this.heldSpace += char;
  }

  private marker(ids: number[] | null): string {
    const kept = [...new Set(ids ?? [])].filter((id) => this.valid.has(id));
    if (kept.length > 0) {
      for (const id of kept) if (!this.cited.includes(id)) this.cited.push(id);
      return this.text(kept.map(citationMarker).join(""));
    }
    // Removed, with the spaces before it; at the start of the text or of a line, the spaces after it.
    this.heldSpace = this.heldSpace.replace(/[^\S\n\r\u2028\u2029]+$/u, "");
    this.skipSpaces = !this.started || this.heldSpace !== "";
    return "";
  }
}

/** What `input` holds at `start` (a `[`): plain text, a marker, or not known yet. */
function scanMarker(input: string, start: number, final: boolean): MarkerScan {
  const contentStart = start + 2;
  if (input.length <= start + 1) return final ? { kind: "text" } : { kind: "incomplete" };
  if (input[start + 1] !== "#") return { kind: "text" };
  for (let j = contentStart; j < input.length; j++) {
    const char = input[j] as string;
    if (char === "]") return { kind: "marker", end: j + 1, ids: parseIds(input.slice(contentStart, j)) };
    if (j - contentStart >= MAX_MARKER_CONTENT || char === "[" || LINE_BREAK.test(char)) return { kind: "text" };
  }
  return final ? { kind: "text" } : { kind: "incomplete" };
}

/** "12" or "12, #13" as ids; null when anything else is inside. */
function parseIds(content: string): number[] | null {
  const ids: number[] = [];
  for (const item of content.split(",")) {
    const match = ID_ITEM.exec(item.trim());
    if (!match) return null;
    ids.push(Number(match[1]));
  }
  return ids;
}

/** A GenerationEvent whose text has been through the citation check. */
export type CheckedGenerationEvent =
  | { type: "delta"; text: string }
  | { type: "reset" }
  | { type: "done"; recommendation: Recommendation; position: number; citedIds: number[] };

/**
 * A generator's stream with its citations checked against `validIds` (the ids of the products
 * returned): deltas pass through a CitationFilter (a reset starts a new one), and `done` carries
 * the text exactly as streamed since the last reset, plus the valid ids cited. A reset is passed
 * on only when something had been sent since the previous one.
 */
export async function* withCheckedCitations(
  events: AsyncIterable<GenerationEvent>,
  validIds: Iterable<number>,
): AsyncGenerator<CheckedGenerationEvent> {
  const ids = [...validIds];
  let filter = new CitationFilter(ids);
  let sent = "";
  for await (const event of events) {
    if (event.type === "delta") {
      const text = filter.push(event.text);
      if (text === "") continue;
      sent += text;
      yield { type: "delta", text };
    } else if (event.type === "reset") {
      filter = new CitationFilter(ids);
      if (sent === "") continue;
      sent = "";
      yield { type: "reset" };
    } else {
      const rest = filter.end();
      if (rest !== "") {
        sent += rest;
        yield { type: "delta", text: rest };
      }
      const { recommendation, position } = event;
      yield { type: "done", recommendation: { ...recommendation, text: sent }, position, citedIds: filter.citedIds };
      return;
    }
  }
}
