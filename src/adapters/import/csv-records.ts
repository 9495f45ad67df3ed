/**
 * CSV records read from a byte stream one at a time, each at most a given size. csv-parse reads
 * the fields of a record, but cannot bound one and go on: past its `max_record_size` it stops the
 * whole file (with `skip_records_with_error` it drops the rest of the chunk and never recovers: tried
 * with 7.0.3). So the records are cut here, by RFC 4180's rule (a record ends at a line break
 * outside quotes; a field that begins with a quote runs to the quote that closes it, `""` being a
 * quote inside it), and only their fields are left to csv-parse.
 */
import { parse as parseCsv } from "csv-parse/sync";
import type { CsvDelimiter } from "../../domain/csv-columns.ts";
import { ItemBuffer, isSpace, type Piece } from "../../lib/item-bytes.ts";

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Where the splitter is in a record: at the start of a field, in an unquoted field, in a quoted one,
 * or just after a quote inside a quoted field (which either closes it or, doubled, is a quote).
 */
type FieldState = "start" | "unquoted" | "quoted" | "quoteInQuoted";

/**
 * Cuts a CSV byte stream into records. Blank lines and the spaces before a record are skipped
 * before anything is held (the fields are trimmed later anyway): a file of nothing but line breaks
 * costs a scan and no memory. A record longer than `maxBytes` is given as `null`, its bytes dropped.
 */
export class CsvRecordSplitter {
  private readonly current: ItemBuffer;
  private readonly delimiter: number;
  private inRecord = false;
  private state: FieldState = "start";

  constructor(maxBytes: number, delimiter: CsvDelimiter = ",") {
    this.current = new ItemBuffer(maxBytes);
    this.delimiter = delimiter.charCodeAt(0);
  }

  *push(chunk: Uint8Array): Generator<Piece> {
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (!this.inRecord) {
        if (isSpace(byte)) continue;
        this.inRecord = true;
        this.state = "start";
        start = i;
      }
      if (this.state === "quoted") {
        if (byte === QUOTE) this.state = "quoteInQuoted";
        continue;
      }
      if (byte === QUOTE && (this.state === "start" || this.state === "quoteInQuoted")) {
        this.state = "quoted";
      } else if (byte === this.delimiter) {
        this.state = "start";
      } else if (byte === LF || byte === CR) {
        this.current.add(chunk.subarray(start, i));
        this.inRecord = false;
        yield this.current.take();
      } else {
        // A quote inside an unquoted field, or text after a closing quote: csv-parse says so for this record.
        this.state = "unquoted";
      }
    }
    if (this.inRecord) this.current.add(chunk.subarray(start));
  }

  /** The last record, when the stream does not end with a line break (or ends inside quotes). */
  end(): Piece[] {
    if (!this.inRecord) return [];
    this.inRecord = false;
    return [this.current.take()];
  }
}

/** Why a record's fields could not be read (Spanish: a client sees it). */
export const CSV_RECORD_PROBLEM = {
  quotes: "La fila CSV tiene una comilla mal colocada o sin cerrar",
  other: "La fila no es CSV válido",
} as const;

type RecordFields = { fields: string[] } | { problem: string };

/**
 * The fields of each record (as CsvRecordSplitter gives them, decoded), or why they cannot be read.
 * The records are read by one call of csv-parse, which costs about 30 µs of setup per call here
 * against 4 µs per record of parsing; only when that call fails is each read alone, to say which.
 */
export function csvFields(records: readonly string[], delimiter: CsvDelimiter = ","): RecordFields[] {
  if (records.length > 1) {
    try {
      // One row per record: none is blank, and none has a line break outside quotes.
      const rows = parseCsv(records.join("\n"), { relax_column_count: true, delimiter }) as string[][];
      if (rows.length === records.length) return rows.map((fields) => ({ fields }));
    } catch {
      // one of them is not CSV: read below one by one
    }
  }
  return records.map((record) => recordFields(record, delimiter));
}

function recordFields(record: string, delimiter: CsvDelimiter): RecordFields {
  try {
    const rows = parseCsv(record, { relax_column_count: true, delimiter }) as string[][];
    return { fields: rows[0] ?? [] };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const quotes = typeof code === "string" && code.includes("QUOTE");
    return { problem: quotes ? CSV_RECORD_PROBLEM.quotes : CSV_RECORD_PROBLEM.other };
  }
}
