/**
 * The products of an import file, read as a stream (a 1 GB file is never loaded whole): JSON Lines,
 * a JSON array, or CSV with a header row (name, description, category, optionally sku, and any other
 * columns: attributes, typed as domain/csv-columns.ts says), each
 * possibly gzip-compressed. A JSON Lines file whose first line is a catalogue export's header
 * (catalogue-export.ts) is an export: the header is not an item, and says what the embeddings are.
 */
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import {
  CSV_CELL_TYPES,
  CSV_PRODUCT_COLUMNS,
  type CsvColumn,
  type CsvDelimiter,
  csvDelimiter,
  csvHeader,
  csvProduct,
} from "../../domain/csv-columns.ts";
import type { ExportHeader } from "../../domain/export-catalogue.ts";
import { decodeUtf8, firstNonSpace, ITEM_BYTES_PROBLEM, type Piece, withoutBom } from "../../lib/item-bytes.ts";
import { MAX_JSON_DEPTH } from "../../lib/json/json-depth.ts";
import { type JsonItem, type JsonItemsFormat, jsonItems, MalformedItems } from "../../lib/json/json-items.ts";
import { EXPORT_FORMAT_KEY, EXPORT_FORMAT_VERSION } from "./catalogue-export.ts";
import { CsvRecordSplitter, csvFields } from "./csv-records.ts";

export const FILE_FORMATS = ["jsonl", "json", "csv"] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];

/** Largest item read, in bytes: far above any valid product, so only garbage is cut. */
const MAX_ITEM_BYTES = 1024 * 1024;

/** The file cannot be read as an import at all (a bad CSV header, a broken array...). */
export class UnreadableImport extends Error {
  override readonly name = "UnreadableImport";
}

export interface FileSource {
  format: FileFormat;
  gzip: boolean;
  /**
   * The size of the content: the file's, or for gzip the uncompressed size its trailer records
   * (modulo 4 GiB, as gzip keeps it: past that, progress stops at 100 % early).
   */
  bytesTotal: number;
  /**
   * Bytes of the content the items read so far came from (within PROGRESS_SLICE_BYTES): the
   * import's progress. Not what the file reader has read ahead, which can be all of a small file.
   */
  bytesDone(): number;
  items: AsyncGenerator<JsonItem>;
  /** The header of a catalogue export (its first line); absent for any other file. */
  exportHeader?: ExportHeader;
}

/** The readers are handed the content in pieces of at most this size, so progress moves item by item. */
const PROGRESS_SLICE_BYTES = 16 * 1024;

/**
 * Opens `path` for import; the format comes from `format`, else from the name, else from the first
 * bytes. Its first item is read now, so that a file unreadable from its start (a CSV header naming
 * no product field, a JSON array that is not one) is refused here, before the import begins.
 */
export async function openImportFile(path: string, format?: FileFormat): Promise<FileSource> {
  const file = Bun.file(path);
  if (!(await file.exists())) throw new UnreadableImport(`no such file: ${path}`);
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const content = (): AsyncIterable<Uint8Array> =>
    gzip ? Readable.from(file.stream()).pipe(createGunzip()) : file.stream();
  const chosen = format ?? (await formatOf(path, content));
  const position = { bytes: 0 };
  const reader =
    chosen === "csv"
      ? csvItems(sliced(content(), position))
      : jsonFileItems(sliced(content(), position), chosen === "json" ? "array" : "lines");
  const first = await reader.next();
  const exportHeader = chosen === "jsonl" && !first.done ? exportHeaderOf(first.value) : undefined;
  const items = (async function* () {
    if (first.done) return;
    if (exportHeader === undefined) yield first.value;
    yield* reader;
  })();
  const bytesTotal = gzip ? await gzipContentSize(file) : file.size;
  return {
    format: chosen,
    gzip,
    bytesTotal,
    bytesDone: () => position.bytes,
    items,
    ...(exportHeader ? { exportHeader } : {}),
  };
}

/**
 * The export header `item` is, or undefined when it is not one (an ordinary first product). A
 * header this program cannot read makes the file unreadable: its embeddings must not be guessed at.
 */
function exportHeaderOf(item: JsonItem): ExportHeader | undefined {
  if (!("value" in item) || item.value === null || typeof item.value !== "object") return undefined;
  const header = item.value as Record<string, unknown>;
  if (!Object.hasOwn(header, EXPORT_FORMAT_KEY)) return undefined;
  const version = header[EXPORT_FORMAT_KEY];
  if (version !== EXPORT_FORMAT_VERSION) {
    throw new UnreadableImport(
      `export header: format version ${JSON.stringify(version)} is not one this program reads (${EXPORT_FORMAT_VERSION})`,
    );
  }
  const { model, dimension, embeddings, exported_at: exportedAt, embedded_attributes: embedded = [] } = header;
  const date = typeof exportedAt === "string" ? new Date(exportedAt) : undefined;
  if (
    typeof model !== "string" ||
    model === "" ||
    typeof dimension !== "number" ||
    !Number.isInteger(dimension) ||
    dimension < 1 ||
    typeof embeddings !== "boolean" ||
    date === undefined ||
    Number.isNaN(date.getTime()) ||
    !Array.isArray(embedded) ||
    !embedded.every((key) => typeof key === "string")
  ) {
    throw new UnreadableImport(
      "export header: it must name the model (text), dimension (a whole number), embeddings (true or false), exported_at (a date) and, if any, embedded_attributes (a list of texts)",
    );
  }
  return { model, dimension, embeddings, exportedAt: date, embeddedAttributes: embedded as string[] };
}

/**
 * `chunks` in pieces of at most PROGRESS_SLICE_BYTES, counted into `position` as the parser takes
 * each: the readers read no further ahead than the piece their items come from.
 */
async function* sliced(chunks: AsyncIterable<Uint8Array>, position: { bytes: number }): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    for (let start = 0; start < chunk.byteLength; start += PROGRESS_SLICE_BYTES) {
      const slice = chunk.subarray(start, start + PROGRESS_SLICE_BYTES);
      position.bytes += slice.byteLength;
      yield slice;
    }
  }
}

/** JSON items of the file; a JSON array that is not one makes the whole file unreadable. */
async function* jsonFileItems(bytes: AsyncIterable<Uint8Array>, format: JsonItemsFormat): AsyncGenerator<JsonItem> {
  try {
    yield* jsonItems(bytes, format, { maxDepth: MAX_JSON_DEPTH, maxItemBytes: MAX_ITEM_BYTES });
  } catch (error) {
    if (error instanceof MalformedItems) throw new UnreadableImport(`JSON: ${error.message}`);
    throw error;
  }
}

/** The uncompressed size a gzip file's trailer records (ISIZE: its last 4 bytes, little-endian). */
async function gzipContentSize(file: ReturnType<typeof Bun.file>): Promise<number> {
  if (file.size < 18) return 0; // no room for a header and a trailer: gunzip will say what is wrong
  return new DataView(await file.slice(file.size - 4).arrayBuffer()).getUint32(0, true);
}

/** The format named by the file's extension (under .gz), or guessed from its first character. */
async function formatOf(path: string, bytes: () => AsyncIterable<Uint8Array>): Promise<FileFormat> {
  const name = path.toLowerCase().replace(/\.gz$/, "");
  if (name.endsWith(".csv")) return "csv";
  if (name.endsWith(".jsonl") || name.endsWith(".ndjson")) return "jsonl";
  let first: number | undefined;
  let atStart = true;
  for await (const chunk of bytes()) {
    const bom = atStart && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
    atStart = false;
    const position = firstNonSpace(chunk, bom);
    if (position < chunk.length) {
      first = chunk[position];
      break;
    }
  }
  if (first === 0x5b) return "json";
  if (first === 0x7b || name.endsWith(".json")) return "jsonl";
  return "csv";
}

/**
 * CSV records as items: a header row naming the columns, then one product per row, their fields
 * separated by commas or semicolons (csvDelimiter, told by the header line in the first piece of
 * content). A record too long, not UTF-8 or with misplaced quotes is an item that failed, and the
 * next record is read.
 */
async function* csvItems(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<JsonItem> {
  let delimiter: CsvDelimiter = ",";
  let splitter: CsvRecordSplitter | undefined;
  let columns: CsvColumn[] | undefined;
  let index = 0;
  /** The items of the records cut from one piece of the content (their fields read together). */
  const itemsOf = (pieces: Piece[]): JsonItem[] => {
    if (columns === undefined && pieces.length > 0) columns = headerOf(pieces.shift() as Piece, delimiter);
    const texts = pieces.map((piece) => (piece === null ? null : decodeUtf8(piece)));
    const records = csvFields(
      texts.filter((text) => text !== null),
      delimiter,
    );
    let read = 0;
    return pieces.map((piece, i): JsonItem => {
      const at = index++;
      if (piece === null) return { index: at, problem: ITEM_BYTES_PROBLEM.tooLong(MAX_ITEM_BYTES) };
      if (texts[i] === null) return { index: at, problem: ITEM_BYTES_PROBLEM.notUtf8 };
      const record = records[read++] as (typeof records)[number];
      if ("problem" in record) return { index: at, problem: record.problem };
      const product = csvProduct(columns as CsvColumn[], record.fields);
      return "problem" in product ? { index: at, problem: product.problem } : { index: at, value: product.value };
    });
  };
  for await (const chunk of withoutBom(bytes)) {
    if (!splitter) {
      delimiter = csvDelimiter(new TextDecoder().decode(chunk));
      splitter = new CsvRecordSplitter(MAX_ITEM_BYTES, delimiter);
    }
    yield* itemsOf([...splitter.push(chunk)]);
  }
  if (splitter) yield* itemsOf(splitter.end());
}

/** The columns the header record names, or UnreadableImport saying what is wrong with it. */
function headerOf(piece: Piece, delimiter: CsvDelimiter): CsvColumn[] {
  if (piece === null) throw new UnreadableImport(`CSV header: longer than ${MAX_ITEM_BYTES} bytes`);
  const text = decodeUtf8(piece);
  if (text === null) throw new UnreadableImport("CSV header: not valid UTF-8 (the file must be UTF-8)");
  const [header] = csvFields([text], delimiter) as [ReturnType<typeof csvFields>[number]];
  if ("problem" in header) throw new UnreadableImport("CSV header: a misplaced or unclosed quote");
  const read = csvHeader(header.fields);
  if ("columns" in read) return read.columns;
  const { problem } = read;
  switch (problem.kind) {
    case "name":
      throw new UnreadableImport(
        `CSV header: column '${problem.column}' is neither one of ${CSV_PRODUCT_COLUMNS.join(", ")} ` +
          "nor an attribute's name (lower case letters, digits and '_', starting with a letter)",
      );
    case "type":
      throw new UnreadableImport(
        `CSV header: column '${problem.column}' names no type an attribute's cells can have ` +
          `(${CSV_CELL_TYPES.join(", ")}, after a colon: price:number); a product field's column takes none`,
      );
    case "repeated":
      throw new UnreadableImport(`CSV header: column '${problem.column}' appears twice`);
    case "missing":
      throw new UnreadableImport(`CSV header: missing column ${problem.columns.join(", ")}`);
  }
}
