/**
 * Importing a file from the page: it is read in the browser (JSON Lines, a JSON array, or CSV with
 * a header row naming name, description, category, optionally sku, and attributes, separated by
 * commas or semicolons, as `sku-search import` reads them: domain/csv-columns.ts), then sent to
 * POST /products/bulk in batches, reporting progress after each one (a batch the service turns
 * into a job is followed to its end).
 */
import {
  CSV_CELL_TYPES,
  CSV_PRODUCT_COLUMNS,
  type CsvDelimiter,
  type CsvHeaderProblem,
  csvDelimiter,
  csvHeader,
  csvProduct,
} from "../domain/csv-columns.ts";
import { type Api, ApiError } from "./api.ts";

/** One product of the file, with where it is (for the report); `problem` when it could not even be read. */
export interface FileItem {
  /** "línea 12" (JSON Lines, CSV) or "elemento 3" (JSON array). */
  where: string;
  value?: unknown;
  problem?: string;
}

/** The file cannot be imported at all (a wrong CSV header, a broken JSON array). */
export class UnreadableFile extends Error {
  override readonly name = "UnreadableFile";
}

/**
 * A file's bytes as text, UTF-8 only (a byte order mark dropped): a file in another encoding (a
 * spreadsheet's Windows-1252 CSV) cannot be imported, rather than have its accents stored as U+FFFD;
 * the message names the first line that is not UTF-8.
 */
export function importText(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    const strict = new TextDecoder("utf-8", { fatal: true });
    let line = 1;
    let start = 0;
    for (let i = 0; i <= bytes.length; i++) {
      if (i < bytes.length && bytes[i] !== 0x0a) continue;
      try {
        strict.decode(bytes.subarray(start, i));
      } catch {
        break;
      }
      line++;
      start = i + 1;
    }
    throw new UnreadableFile(
      `El archivo no está en UTF-8 (la línea ${line} no lo es): guárdelo como «CSV UTF-8» o en UTF-8 e impórtelo de nuevo.`,
    );
  }
}

/** The items of a file, its format told by its name (.csv, .jsonl, .ndjson, .json) or else by its first character. */
export function readImportFile(name: string, text: string): FileItem[] {
  const body = text.replace(/^\uFEFF/, "");
  const lower = name.toLowerCase();
  const first = body.trimStart()[0];
  if (lower.endsWith(".csv")) return csvItems(body);
  if (lower.endsWith(".jsonl") || lower.endsWith(".ndjson")) return jsonLinesItems(body);
  if (first === "[") return jsonArrayItems(body);
  if (first === "{") return jsonLinesItems(body);
  return csvItems(body);
}

function jsonLinesItems(text: string): FileItem[] {
  const items: FileItem[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    const where = `línea ${i + 1}`;
    try {
      items.push({ where, value: JSON.parse(line) });
    } catch {
      items.push({ where, problem: "No es JSON válido" });
    }
  });
  return items;
}

function jsonArrayItems(text: string): FileItem[] {
  let values: unknown;
  try {
    values = JSON.parse(text);
  } catch {
    throw new UnreadableFile("El archivo empieza por «[» pero no es un array JSON válido.");
  }
  if (!Array.isArray(values)) throw new UnreadableFile("El archivo no es un array JSON.");
  return values.map((value, i) => ({ where: `elemento ${i + 1}`, value }));
}

function csvItems(text: string): FileItem[] {
  const delimiter = csvDelimiter(text);
  const [header, ...records] = csvRecords(text, delimiter).filter((record) =>
    record.cells.some((cell) => cell.trim() !== ""),
  );
  if (!header) throw new UnreadableFile("El archivo está vacío.");
  const read = csvHeader(header.cells);
  if ("problem" in read) throw new UnreadableFile(headerProblem(read.problem));
  return records.map(({ line, cells }) => {
    const product = csvProduct(read.columns, cells);
    const where = `línea ${line}`;
    return "problem" in product ? { where, problem: product.problem } : { where, value: product.value };
  });
}

function headerProblem(problem: CsvHeaderProblem): string {
  switch (problem.kind) {
    case "name":
      return (
        `La cabecera CSV tiene una columna que no es ${CSV_PRODUCT_COLUMNS.join(", ")} ni el nombre de un atributo ` +
        `(minúsculas, cifras y «_», empezando por una letra): «${problem.column}».`
      );
    case "type":
      return (
        `La columna «${problem.column}» de la cabecera CSV no nombra un tipo de atributo ` +
        `(${CSV_CELL_TYPES.join(", ")}, tras dos puntos: price:number); las de producto no llevan tipo.`
      );
    case "repeated":
      return `La cabecera CSV repite la columna «${problem.column}».`;
    case "missing":
      return `A la cabecera CSV le falta: ${problem.columns.join(", ")}.`;
  }
}

/**
 * RFC 4180 records: fields separated by commas (or `delimiter`), quoted with `"` (`""` inside is a
 * quote; quotes may hold line breaks).
 */
export function csvRecords(text: string, delimiter: CsvDelimiter = ","): { line: number; cells: string[] }[] {
  const records: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = "";
  let quoted = false;
  let line = 1;
  let start = 1;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (char === '"') {
        quoted = false;
      } else {
        if (char === "\n") line++;
        cell += char;
      }
    } else if (char === '"' && cell === "") {
      quoted = true;
    } else if (char === delimiter) {
      cells.push(cell);
      cell = "";
    } else if (char === "\n" || char === "\r") {
      if (char === "\r" && text[i + 1] === "\n") i++;
      cells.push(cell);
      records.push({ line: start, cells });
      cells = [];
      cell = "";
      line++;
      start = line;
    } else {
      cell += char;
    }
  }
  if (cell !== "" || cells.length > 0) {
    cells.push(cell);
    records.push({ line: start, cells });
  }
  return records;
}

export interface ImportCounts {
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

export interface ImportProgress {
  /** Items with an outcome so far (those that could not be read included). */
  done: number;
  total: number;
  counts: ImportCounts;
  /** Every failure so far, with where it is in the file. */
  failures: { where: string; detail: string }[];
  /** Set while waiting out a rate limit, in seconds. */
  waitingSeconds?: number;
}

/** What POST /products/bulk answers when it is done in time, and what its job reports once finished. */
export interface BulkReport {
  items: { index: number; status: keyof ImportCounts; detail?: string }[];
  counts: ImportCounts;
}

/** GET /jobs/{id}: an import that went on as a job (POST /products/bulk answered 202). */
interface JobPage extends BulkReport {
  status: "enqueued" | "processing" | "succeeded" | "failed";
  next_cursor: string | null;
}

/** How often a job is looked at while it runs. */
const JOB_POLL_MS = 1_000;

/**
 * Sends one batch to POST /products/bulk and gives its report: the answer itself (200), or, when
 * the service made it a job (202, Location: /jobs/{id}), the job's report once it has finished,
 * looked at every second (every page of it).
 */
export async function sendBatch(
  api: Pick<Api, "request">,
  values: unknown[],
  signal: AbortSignal,
  sleep: (ms: number, signal: AbortSignal) => Promise<void> = abortableSleep,
  /** Where: POST /products/bulk, or a catalogue's (the one the import began in, whatever is picked since). */
  path = "/products/bulk",
): Promise<BulkReport> {
  const response = await api.request(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(values),
    signal,
  });
  if (response.status !== 202) return (await response.json()) as BulkReport;
  const location = response.headers.get("location") ?? `/jobs/${((await response.json()) as { id: number }).id}`;
  const read = async (cursor: string | null) =>
    (await (
      await api.request(`${location}${cursor === null ? "" : `?cursor=${cursor}`}`, { signal })
    ).json()) as JobPage;
  for (;;) {
    await sleep(JOB_POLL_MS, signal);
    let page = await read(null);
    if (page.status !== "succeeded" && page.status !== "failed") continue;
    const { counts } = page;
    const items = [...page.items];
    while (page.next_cursor !== null) {
      page = await read(page.next_cursor);
      items.push(...page.items);
    }
    return {
      items,
      counts: { created: counts.created, updated: counts.updated, unchanged: counts.unchanged, failed: counts.failed },
    };
  }
}

export interface ImportOptions {
  /** Sends one batch to POST /products/bulk. */
  send: (values: unknown[], signal: AbortSignal) => Promise<BulkReport>;
  /** Items per request (halved when the service answers 413). */
  batchSize: number;
  onProgress: (progress: ImportProgress) => void;
  signal: AbortSignal;
  /** Waits out a 429 (tests pass a fake). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Most times one batch is retried after a 429 before the import gives up. */
const MAX_RATE_LIMIT_WAITS = 5;

/**
 * Sends the items in batches, in order, reporting after each. A batch the service finds too large
 * (413) is split in halves; a rate limit (429) is waited out (Retry-After) and retried. Any other
 * error stops the import (the batches before it are stored) and is thrown.
 */
export async function importItems(items: readonly FileItem[], options: ImportOptions): Promise<ImportProgress> {
  const sleep = options.sleep ?? abortableSleep;
  const progress: ImportProgress = {
    done: 0,
    total: items.length,
    counts: { created: 0, updated: 0, unchanged: 0, failed: 0 },
    failures: [],
  };
  const report = () =>
    options.onProgress({ ...progress, counts: { ...progress.counts }, failures: [...progress.failures] });
  report();
  let size = Math.max(1, options.batchSize);
  let next = 0;
  let waits = 0;
  while (next < items.length) {
    options.signal.throwIfAborted();
    const batch = items.slice(next, next + size);
    const readable = batch.filter((item) => item.problem === undefined);
    let answer: BulkReport;
    try {
      answer =
        readable.length > 0
          ? await options.send(
              readable.map((item) => item.value),
              options.signal,
            )
          : emptyReport;
    } catch (error) {
      if (error instanceof ApiError && error.status === 413 && size > 1) {
        size = Math.ceil(size / 2);
        continue;
      }
      if (error instanceof ApiError && error.status === 429 && waits < MAX_RATE_LIMIT_WAITS) {
        waits++;
        const seconds = error.retryAfterSeconds ?? 1;
        options.onProgress({ ...progress, waitingSeconds: seconds });
        await sleep(seconds * 1000, options.signal);
        continue;
      }
      throw error;
    }
    waits = 0;
    const outcomes = new Map(answer.items.map((outcome) => [outcome.index, outcome]));
    let sent = 0;
    for (const item of batch) {
      const outcome =
        item.problem === undefined ? outcomes.get(sent++) : { status: "failed" as const, detail: item.problem };
      if (!outcome) continue;
      progress.counts[outcome.status]++;
      if (outcome.status === "failed") progress.failures.push({ where: item.where, detail: outcome.detail ?? "" });
    }
    next += batch.length;
    progress.done = next;
    report();
  }
  return progress;
}

const emptyReport: BulkReport = { items: [], counts: { created: 0, updated: 0, unchanged: 0, failed: 0 } };

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
