/**
 * Items of a JSON array or of JSON Lines (NDJSON), read from a byte stream one item at a time: a
 * large import is never parsed as one value, so neither the memory it takes nor the time the
 * event loop is held grows with its size. Each item is checked for nesting and for valid UTF-8
 * before it is parsed.
 */
import {
  decodeUtf8,
  firstNonSpace,
  ITEM_BYTES_PROBLEM,
  ItemBuffer,
  isSpace,
  type Piece,
  withoutBom,
} from "../item-bytes.ts";
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  jsonDepthExceeds,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from "./json-depth.ts";

export type JsonItemsFormat = "array" | "lines";

/** One item: its value, or why it could not be read (Spanish). */
export type JsonItem = { index: number; value: unknown } | { index: number; problem: string };

/** The stream as a whole is not what its format says (an array that is not an array...). */
export class MalformedItems extends Error {
  override readonly name = "MalformedItems";
}

/** MalformedItems' messages (Spanish: a client sees them). */
export const MALFORMED_ARRAY = {
  notArray: "El cuerpo debe ser un array JSON de productos",
  trailingText: "Hay texto después del final del array JSON",
  emptyElement: "El array JSON tiene un elemento vacío",
  incomplete: "El array JSON no está completo",
} as const;

export interface JsonItemsOptions {
  /** Deepest nesting an item may have. */
  maxDepth: number;
  /** Largest item, in bytes (a longer one is reported as a problem, not read whole). */
  maxItemBytes: number;
}

const NEWLINE = 0x0a;
const COMMA = 0x2c;

/** Reads `stream` as `format`, yielding every item in order; throws MalformedItems for a broken array. */
export async function* jsonItems(
  stream: AsyncIterable<Uint8Array>,
  format: JsonItemsFormat,
  options: JsonItemsOptions,
): AsyncGenerator<JsonItem> {
  const splitter = format === "lines" ? new LineSplitter(options) : new ArraySplitter(options);
  let index = 0;
  for await (const chunk of withoutBom(stream)) {
    for (const piece of splitter.push(chunk)) yield itemAt(index++, piece, options);
  }
  for (const piece of splitter.end()) yield itemAt(index++, piece, options);
}

function itemAt(index: number, piece: Piece, options: JsonItemsOptions): JsonItem {
  if (piece === null) return { index, problem: ITEM_BYTES_PROBLEM.tooLong(options.maxItemBytes) };
  if (jsonDepthExceeds(piece, options.maxDepth)) {
    return { index, problem: `El elemento tiene demasiados niveles de anidamiento (como máximo ${options.maxDepth})` };
  }
  const text = decodeUtf8(piece);
  if (text === null) return { index, problem: ITEM_BYTES_PROBLEM.notUtf8 };
  try {
    return { index, value: JSON.parse(text) };
  } catch {
    return { index, problem: "El elemento no es un JSON válido" };
  }
}

/**
 * JSON Lines: one item per line. Blank lines, and the spaces before an item on its line, are
 * skipped before anything is buffered: a file of nothing but newlines (a gzip "bomb" of them)
 * costs a scan of its bytes and no memory.
 */
class LineSplitter {
  private readonly current: ItemBuffer;

  constructor(options: JsonItemsOptions) {
    this.current = new ItemBuffer(options.maxItemBytes);
  }

  *push(chunk: Uint8Array): Generator<Piece> {
    let start = 0;
    while (start < chunk.length) {
      if (this.current.empty) start = firstNonSpace(chunk, start);
      if (start === chunk.length) return;
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) {
        this.current.add(chunk.subarray(start));
        return;
      }
      this.current.add(chunk.subarray(start, newline));
      start = newline + 1;
      yield this.current.take();
    }
  }

  end(): Piece[] {
    return this.current.empty ? [] : [this.current.take()];
  }
}

/**
 * A top-level JSON array: its elements, found by tracking strings and nesting, byte by byte. The
 * whitespace before an element is skipped, not held (the spaces after one, before its comma, are
 * part of it).
 */
class ArraySplitter {
  private readonly current: ItemBuffer;
  /** before: nothing but spaces yet; inside: within the array; after: past its closing bracket. */
  private state: "before" | "inside" | "after" = "before";
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** An element has started since the last separator. */
  private started = false;
  /** A comma was the last separator (so `]` right after it is an error). */
  private afterComma = false;

  constructor(options: JsonItemsOptions) {
    this.current = new ItemBuffer(options.maxItemBytes);
  }

  *push(chunk: Uint8Array): Generator<Piece> {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.state === "before") {
        if (isSpace(byte)) continue;
        if (byte !== OPEN_BRACKET) throw new MalformedItems(MALFORMED_ARRAY.notArray);
        this.state = "inside";
        start = i + 1;
        continue;
      }
      if (this.state === "after") {
        if (!isSpace(byte)) throw new MalformedItems(MALFORMED_ARRAY.trailingText);
        continue;
      }
      if (!this.started && isSpace(byte)) {
        start = i + 1; // whitespace before an element is never held
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (byte === QUOTE) {
        this.inString = true;
        this.started = true;
      } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
        this.depth++;
        this.started = true;
      } else if ((byte === CLOSE_BRACKET || byte === CLOSE_BRACE) && this.depth > 0) {
        this.depth--;
      } else if (this.depth === 0 && (byte === COMMA || byte === CLOSE_BRACKET)) {
        this.current.add(chunk.subarray(start, i));
        start = i + 1;
        const closing = byte === CLOSE_BRACKET;
        if (this.started) {
          this.started = false;
          yield this.current.take();
        } else if (!closing || this.afterComma) {
          // `[]` is an empty array; `[,` or `[1,,2]` or `[1,]` are not JSON.
          throw new MalformedItems(MALFORMED_ARRAY.emptyElement);
        }
        this.afterComma = !closing;
        if (closing) this.state = "after";
      } else if (!isSpace(byte)) {
        this.started = true;
      }
    }
    if (this.state === "inside") this.current.add(chunk.subarray(start));
  }

  end(): Piece[] {
    if (this.state !== "after") throw new MalformedItems(MALFORMED_ARRAY.incomplete);
    return [];
  }
}
