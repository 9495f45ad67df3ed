import { MAX_JSON_DEPTH } from "../../../lib/json/json-depth.ts";
import { type JsonItem, jsonItems, MalformedItems } from "../../../lib/json/json-items.ts";
import { HttpProblem, payloadTooLarge, unsupportedMediaType } from "../core/errors.ts";

export interface BulkLimits {
  maxBytes: number;
  maxItems: number;
}

/** The media types a bulk import takes: a JSON array, or JSON Lines under any of its names. */
export const BULK_MEDIA_TYPES = {
  array: ["application/json"],
  lines: ["application/x-ndjson", "application/jsonl", "application/x-jsonlines"],
} as const;

export const tooManyItems = (maxItems: number) =>
  new HttpProblem(413, `Una importación admite como máximo ${maxItems} productos por petición`);

export const noItems = () => new HttpProblem(422, "El cuerpo debe contener al menos un producto");

/** Items parsed between two yields to the event loop: a large body never holds it for long. */
const ITEMS_PER_TURN = 200;

/**
 * The items of a bulk request: a JSON array (`application/json`) or JSON Lines
 * (`application/x-ndjson`), read as a stream, at most `maxBytes` bytes (413) and `maxItems` items
 * (413 too). An item that is not valid JSON (possible in JSON Lines only) is kept as a problem, for
 * the import to report at its position; a broken array is 400.
 */
export async function readBulkItems(request: Request, limits: BulkLimits): Promise<JsonItem[]> {
  const mediaType = (request.headers.get("content-type")?.split(";")[0] ?? "").trim().toLowerCase();
  const format = (BULK_MEDIA_TYPES.lines as readonly string[]).includes(mediaType)
    ? "lines"
    : (BULK_MEDIA_TYPES.array as readonly string[]).includes(mediaType)
      ? "array"
      : undefined;
  if (!format) throw unsupportedMediaType([...BULK_MEDIA_TYPES.array, ...BULK_MEDIA_TYPES.lines]);
  if (!request.body) throw new HttpProblem(422, "El cuerpo debe contener los productos a importar");

  const items: JsonItem[] = [];
  try {
    const source = jsonItems(bounded(request.body, limits.maxBytes), format, {
      maxDepth: MAX_JSON_DEPTH,
      maxItemBytes: limits.maxBytes,
    });
    for await (const item of source) {
      items.push(item);
      if (items.length > limits.maxItems) {
        throw tooManyItems(limits.maxItems);
      }
      if (items.length % ITEMS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    if (error instanceof MalformedItems) throw new HttpProblem(400, error.message);
    throw error;
  }
  if (items.length === 0) throw noItems();
  return items;
}

/** The stream's chunks, failing with 413 once more than `maxBytes` bytes have come. */
async function* bounded(stream: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.byteLength;
    if (size > maxBytes) throw payloadTooLarge(maxBytes);
    yield chunk;
  }
}
