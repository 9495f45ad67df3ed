/**
 * The products of an import file, read as a stream (a 1 GB file is never loaded whole): JSON Lines,
 * a JSON array, or CSV with a header row (name, description, category and optionally sku), each
 * possibly gzip-compressed.
 */
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { parse as parseCsv } from "csv-parse";
import { MAX_JSON_DEPTH } from "../http/body.ts";
import { type JsonItem, jsonItems } from "./json-items.ts";

export const FILE_FORMATS = ["jsonl", "json", "csv"] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];

/** The columns a CSV header may name. */
const CSV_COLUMNS = ["name", "description", "category", "sku"] as const;
const REQUIRED_CSV_COLUMNS = ["name", "description", "category"];

/** Largest item read, in bytes: far above any valid product, so only garbage is cut. */
const MAX_ITEM_BYTES = 1024 * 1024;

/** The file cannot be read as an import at all (a bad CSV header, a broken array...). */
export class UnreadableImport extends Error {
  override readonly name = "UnreadableImport";
}

export interface FileSource {
  format: FileFormat;
  gzip: boolean;
  /** The file's size on disk (compressed, when it is). */
  bytesTotal: number;
  /** Bytes of the file read so far (compressed, when it is): the import's progress. */
  bytesRead(): number;
  items: AsyncGenerator<JsonItem>;
}

/** Opens `path` for import; the format comes from `format`, else from the name, else from the first bytes. */
export async function openImportFile(path: string, format?: FileFormat): Promise<FileSource> {
  const file = Bun.file(path);
  if (!(await file.exists())) throw new UnreadableImport(`no such file: ${path}`);
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  let read = 0;
  const counted = async function* (): AsyncGenerator<Uint8Array> {
    for await (const chunk of file.stream()) {
      read += chunk.byteLength;
      yield chunk;
    }
  };
  const bytes = (): AsyncIterable<Uint8Array> => (gzip ? Readable.from(counted()).pipe(createGunzip()) : counted());
  const chosen = format ?? (await formatOf(path, bytes));
  read = 0; // the look at the first bytes is not progress
  const items =
    chosen === "csv"
      ? csvItems(bytes())
      : jsonItems(bytes(), chosen === "json" ? "array" : "lines", {
          maxDepth: MAX_JSON_DEPTH,
          maxItemBytes: MAX_ITEM_BYTES,
        });
  return { format: chosen, gzip, bytesTotal: file.size, bytesRead: () => read, items };
}

/** The format named by the file's extension (under .gz), or guessed from its first character. */
async function formatOf(path: string, bytes: () => AsyncIterable<Uint8Array>): Promise<FileFormat> {
  const name = path.toLowerCase().replace(/\.gz$/, "");
  if (name.endsWith(".csv")) return "csv";
  if (name.endsWith(".jsonl") || name.endsWith(".ndjson")) return "jsonl";
  let first: number | undefined;
  for await (const chunk of bytes()) {
    first = chunk.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09 && byte !== 0xef);
    if (first !== undefined) break;
  }
  if (first === 0x5b) return "json";
  if (first === 0x7b || name.endsWith(".json")) return "jsonl";
  return "csv";
}

/** CSV records as items: a header row naming the columns, then one product per row. */
async function* csvItems(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<JsonItem> {
  const parser = Readable.from(bytes).pipe(
    parseCsv({
      bom: true,
      columns: (header: string[]) => checkHeader(header),
      skip_empty_lines: true,
      relax_column_count: true,
      max_record_size: MAX_ITEM_BYTES,
    }),
  );
  let index = 0;
  try {
    for await (const record of parser as AsyncIterable<Record<string, string | undefined>>) {
      const value: Record<string, string | null> = {};
      for (const column of CSV_COLUMNS) {
        const cell = record[column];
        if (cell !== undefined) value[column] = column === "sku" && cell.trim() === "" ? null : cell;
      }
      yield { index: index++, value };
    }
  } catch (error) {
    if (error instanceof UnreadableImport) throw error;
    throw new UnreadableImport(`CSV: ${(error as Error).message}`);
  }
}

function checkHeader(header: string[]): string[] {
  const columns = header.map((column) => column.trim().toLowerCase());
  const unknown = columns.filter((column) => !(CSV_COLUMNS as readonly string[]).includes(column));
  if (unknown.length > 0) {
    throw new UnreadableImport(
      `CSV header: unknown column ${unknown.map((column) => `'${column}'`).join(", ")} (the columns are ${CSV_COLUMNS.join(", ")})`,
    );
  }
  const missing = REQUIRED_CSV_COLUMNS.filter((column) => !columns.includes(column));
  if (missing.length > 0) throw new UnreadableImport(`CSV header: missing column ${missing.join(", ")}`);
  return columns;
}
