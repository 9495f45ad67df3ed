/**
 * The bytes of one item of a stream read item by item (a JSON Lines line, a JSON array's element, a
 * CSV record): gathered across chunks up to a limit, then decoded. Shared by the JSON and CSV readers,
 * so every format reports the same problems in the same words.
 */

/** Why an item's bytes could not be read (Spanish: a client sees them). */
export const ITEM_BYTES_PROBLEM = {
  tooLong: (maxBytes: number) => `El elemento supera el máximo de ${maxBytes} bytes`,
  notUtf8: "El elemento contiene bytes que no son UTF-8 válido",
} as const;

/** The bytes of one item, or `null` when it was longer than its limit (its bytes are dropped). */
export type Piece = Uint8Array | null;

export function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/** The position of the first byte from `start` on that is not a space, tab or line break (`bytes.length` if none). */
export function firstNonSpace(bytes: Uint8Array, start = 0): number {
  let position = start;
  while (position < bytes.length && isSpace(bytes[position] as number)) position++;
  return position;
}

const UTF8_BOM = [0xef, 0xbb, 0xbf];

/** `stream` without the UTF-8 byte order mark it may begin with (an editor's, or Excel's). */
export async function* withoutBom(stream: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const head: number[] = []; // the first bytes, while they may still be a byte order mark
  let started = false;
  for await (const chunk of stream) {
    if (started) {
      yield chunk;
      continue;
    }
    let i = 0;
    while (i < chunk.length && head.length < 3 && chunk[i] === UTF8_BOM[head.length]) head.push(chunk[i++] as number);
    if (head.length < 3 && i === chunk.length) continue;
    started = true;
    const rest = chunk.subarray(i);
    // Bytes that began like a byte order mark but were none are content, given with what follows.
    const content = head.length > 0 && head.length < 3 ? new Uint8Array([...head, ...rest]) : rest;
    if (content.length > 0) yield content;
  }
  if (!started && head.length > 0) yield new Uint8Array(head);
}

/**
 * UTF-8 only: a byte that is not part of a valid sequence makes the item fail, rather than being
 * read as U+FFFD and stored so without a word (a Latin-1 file would lose every accent silently).
 */
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The item's text, or null when its bytes are not valid UTF-8 (a leading byte order mark is dropped). */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Collects one item's bytes across chunks, dropping them once they pass the limit: an item never
 * holds more than `maxBytes`, whatever the input. The readers add nothing while no item has begun,
 * so blank lines and whitespace between items are never held at all.
 */
export class ItemBuffer {
  private parts: Uint8Array[] = [];
  private size = 0;
  private tooLong = false;

  constructor(private readonly maxBytes: number) {}

  get empty(): boolean {
    return this.size === 0 && !this.tooLong;
  }

  add(bytes: Uint8Array): void {
    if (bytes.length === 0 || this.tooLong) return;
    this.size += bytes.length;
    if (this.size > this.maxBytes) {
      this.tooLong = true;
      this.parts = [];
      return;
    }
    this.parts.push(bytes);
  }

  take(): Piece {
    const piece = this.tooLong ? null : concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    this.tooLong = false;
    return piece;
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return bytes;
}
