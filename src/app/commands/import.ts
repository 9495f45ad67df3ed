/**
 * `import FILE`: a catalogue file into the database, through the same use case as POST
 * /products/bulk, in batches as the file is read. On a terminal a progress bar (items, rate, ETA);
 * otherwise one JSON progress line every few seconds. Ctrl-C stops after the batch being written:
 * what is stored stays, and running the command again resumes (products with a sku are upserted
 * by it, and an unchanged text is not embedded again). It loads no web framework and no language
 * model: only the database, the embedder and translation (composition-root.ts). A catalogue export
 * (`export FILE`) with the embeddings of the configured model is restored without embedding anything.
 * On the embedded database held by the running service, the command reads the file and the service
 * stores each batch (its admin socket: admin/product-operations.ts), then builds the index when due.
 */
import { createWriteStream } from "node:fs";
import cliProgress from "cli-progress";
import {
  FILE_FORMATS,
  type FileFormat,
  type FileSource,
  openImportFile,
  UnreadableImport,
} from "../../adapters/import/file-items.ts";
import { DEFAULT_CATALOGUE } from "../../domain/caller.ts";
import { CatalogueNotFound, DomainError } from "../../domain/errors.ts";
import type { ExportHeader } from "../../domain/export-catalogue.ts";
import type {
  ImportInput,
  ImportItemResult,
  ImportOptions,
  ImportProducts,
  ImportReport,
  ImportStatus,
} from "../../domain/import-products.ts";
import type { JsonItem } from "../../lib/json/json-items.ts";
import type { EmbeddingSpace } from "../../ports/embedding-space.ts";
import { serviceSocketFor, viaSocket } from "../admin/admin-channel.ts";
import { type Config, secretsOf } from "../config.ts";
import { createLogger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand, UsageError } from "./command.ts";
import { buildIndexAfterLoad, INTERRUPTED, Interrupted } from "./load.ts";

/**
 * Products the import command reads and stores together: four chunks of 512, what OpenAI's four
 * calls at once embed (Embedder.callsAtOnce). 5,000 products through a provider answering in 1 s
 * (stop 39): 643 a second in batches of 1,000 (two calls at once), 861 in batches of 2,048.
 */
const IMPORT_BATCH_SIZE = 2048;

export const registerImport: RegisterCommand = (program, run, output) => {
  program
    .command("import")
    .argument("<file>")
    .description(
      "import products from JSON Lines, a JSON array, CSV (header: name,description,category[,sku]) or an export, gzip accepted",
    )
    .option("--format <format>", "jsonl, json or csv (default: from the file's name, else its first bytes)")
    .option("--batch-size <n>", `products read and stored together (default ${IMPORT_BATCH_SIZE})`)
    .option("--report <file>", "write every item's outcome to this file, as JSON Lines")
    .option("--catalogue <name>", "the catalogue the products go into", DEFAULT_CATALOGUE)
    .action((file: string, options: ImportFileOptions) => run((config) => importFile(config, file, options, output)));
};

interface ImportFileOptions {
  format?: string;
  batchSize?: string;
  report?: string;
  catalogue: string;
}

async function importFile(
  config: Config,
  file: string,
  options: ImportFileOptions,
  output: CliOutput,
): Promise<number> {
  const { format } = options;
  if (format !== undefined && !(FILE_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError(`import: --format must be one of ${FILE_FORMATS.join(", ")}, got '${format}'`);
  }
  const batchSize = options.batchSize === undefined ? IMPORT_BATCH_SIZE : Number(options.batchSize);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new UsageError("import: --batch-size must be a whole number from 1 to 100000");
  }
  // The file is opened and its first item read before anything else: a wrong file fails at once.
  const source = await openImport(file, format as FileFormat | undefined, output);
  if (source === undefined) return EXIT.failed;
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger(config.logLevel, secretsOf(config)));
  try {
    const { catalogue } = options;
    if (!(await (await root.manageCatalogues()).exists(catalogue))) {
      output.err(`import: ${new CatalogueNotFound(catalogue).message} (bun run cli catalogues add ${catalogue})\n`);
      return EXIT.failed;
    }
    const code = await runImport(
      file,
      source,
      () => root.importProducts(),
      { batchSize, reportPath: options.report, catalogue },
      output,
    );
    if (code !== INTERRUPTED) await buildIndexAfterLoad(root, output, [catalogue]);
    return code;
  } catch (error) {
    const socket = serviceSocketFor(config, error);
    if (socket === undefined) throw error;
    await root.close();
    output.err("the running service holds the embedded database: it stores what this command reads\n");
    return runImport(
      file,
      source,
      () => ServiceImporter.open(socket, options.catalogue, source.exportHeader),
      { batchSize, reportPath: options.report, catalogue: options.catalogue },
      output,
    );
  } finally {
    await root.close();
  }
}

/** What an import needs of its use case: ImportProducts itself, or the running service's (ServiceImporter). */
type Importer = Pick<ImportProducts, "execute" | "takesEmbeddingsOf" | "space">;

/**
 * The import use case of the service holding the embedded database, over its admin socket. A
 * batch goes in parts of at most SOCKET_PART_ITEMS items and about SOCKET_PART_BYTES of JSON, so
 * that the display moves and no request grows with the items' size (up to 1 MiB each); the
 * service builds the vector index itself when due (its upkeep).
 */
class ServiceImporter implements Importer {
  private constructor(
    private readonly socket: string,
    readonly space: EmbeddingSpace,
    private readonly takesEmbeddings: boolean,
  ) {}

  static async open(socket: string, catalogue: string, header: ExportHeader | undefined): Promise<ServiceImporter> {
    const embeddings = header?.embeddings ? exportedSpace(header) : undefined;
    const started = (await viaSocket(socket, "products.import-start", {
      catalogue,
      ...(embeddings ? { embeddings } : {}),
    })) as { space: EmbeddingSpace; takes_embeddings?: boolean };
    return new ServiceImporter(socket, started.space, started.takes_embeddings === true);
  }

  async takesEmbeddingsOf(): Promise<boolean> {
    return this.takesEmbeddings;
  }

  async execute(items: readonly ImportInput[], options: ImportOptions): Promise<ImportReport> {
    const report: ImportReport = { items: [], counts: { created: 0, updated: 0, unchanged: 0, failed: 0 } };
    for (const [offset, part] of socketParts(items)) {
      const answer = (await viaSocket(
        this.socket,
        "products.import",
        {
          catalogue: options.catalogue,
          items: part,
          ...(options.embeddings ? { embeddings: exportedSpace(options.embeddings) } : {}),
        },
        options.signal,
      )) as ImportReport;
      const results = answer.items.map((result) => ({ ...result, index: result.index + offset }));
      report.items.push(...results);
      for (const status of Object.keys(report.counts) as ImportStatus[]) report.counts[status] += answer.counts[status];
      options.onChunk?.(report.items);
    }
    return report;
  }
}

const SOCKET_PART_ITEMS = 200;
const SOCKET_PART_BYTES = 8 * 1024 * 1024;

/** `items` cut into parts for the socket, each with the index of its first item. */
export function socketParts(items: readonly ImportInput[]): [number, ImportInput[]][] {
  const parts: [number, ImportInput[]][] = [];
  let part: ImportInput[] = [];
  let bytes = 0;
  let start = 0;
  items.forEach((item, index) => {
    const size = JSON.stringify(item).length;
    if (part.length > 0 && (part.length >= SOCKET_PART_ITEMS || bytes + size > SOCKET_PART_BYTES)) {
      parts.push([start, part]);
      [part, bytes, start] = [[], 0, index];
    }
    part.push(item);
    bytes += size;
  });
  if (part.length > 0) parts.push([start, part]);
  return parts;
}

/** What the service needs to know of an export's embeddings: their space and embedded attributes. */
function exportedSpace(made: { model: string; dimension: number; embeddedAttributes?: readonly string[] }) {
  return { model: made.model, dimension: made.dimension, embeddedAttributes: made.embeddedAttributes ?? [] };
}

interface ImportCommandOptions {
  /** The catalogue the products go into. */
  catalogue: string;
  /** Items read and imported together (the use case embeds them in chunks within each batch). */
  batchSize: number;
  /** A JSON Lines file receiving every item's outcome. */
  reportPath?: string | undefined;
  /** Seconds between progress lines when not on a terminal. */
  progressEverySeconds?: number;
}

/** Failed items printed at the end at most; the report file has them all. */
const FAILURES_SHOWN = 20;

/**
 * Opens the import file (file-items.ts reads its first item too); undefined, once it has said why,
 * when the file cannot be read. Called before the database is opened, so that a wrong file fails
 * at once, whatever the database's state.
 */
async function openImport(
  path: string,
  format: FileFormat | undefined,
  output: CliOutput,
): Promise<FileSource | undefined> {
  try {
    return await openImportFile(path, format);
  } catch (error) {
    if (!(error instanceof UnreadableImport)) throw error;
    output.err(`import: ${error.message}\n`);
    return undefined;
  }
}

/**
 * Runs the import of `source` (opened by openImport from `path`) with the importer `prepare` makes
 * (opening the database, the embedder and translation: the display says so meanwhile); returns the
 * exit status (0 done, 1 failed, INTERRUPTED).
 */
async function runImport(
  path: string,
  source: FileSource,
  prepare: () => Promise<Importer>,
  options: ImportCommandOptions,
  output: CliOutput = consoleOutput,
): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort(new Interrupted("stopped by the operator"));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const report = options.reportPath ? createWriteStream(options.reportPath) : undefined;
  const counts: Record<ImportStatus, number> = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  const failures: ImportItemResult[] = [];
  const started = performance.now();
  const progress = progressDisplay(source.bytesTotal, options.progressEverySeconds ?? 5, output);
  const done = () => counts.created + counts.updated + counts.unchanged + counts.failed;
  const record = (results: readonly ImportItemResult[], offset: number) => {
    for (const result of results) {
      const item = { ...result, index: result.index + offset };
      counts[item.status]++;
      if (item.status === "failed" && failures.length < FAILURES_SHOWN) failures.push(item);
      report?.write(`${JSON.stringify(item)}\n`);
    }
    progress.update(source.bytesDone(), done(), counts, performance.now() - started);
  };

  let status = 0;
  let embeddings: "restored" | "computed" | undefined;
  try {
    progress.phase("opening the database, loading the embedding model and translation");
    const importer = await prepare();
    const header = source.exportHeader;
    if (header?.embeddings) {
      embeddings = (await importer.takesEmbeddingsOf(header, options.catalogue)) ? "restored" : "computed";
      output.err(`${describeExportEmbeddings(header, embeddings, importer.space)}\n`);
    }
    progress.phase(embeddings === "restored" ? "importing" : "importing (the first batch also loads the model)");
    let batch: JsonItem[] = [];
    let offset = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const outcome = await importer.execute(batch, {
        catalogue: options.catalogue,
        signal: controller.signal,
        ...(header?.embeddings ? { embeddings: header } : {}),
        // Each chunk written moves the display, not only each batch.
        onChunk: (results) =>
          progress.update(source.bytesDone(), done() + results.length, counts, performance.now() - started),
      });
      record(outcome.items, offset);
      offset += batch.length;
      batch = [];
    };
    for await (const item of source.items) {
      controller.signal.throwIfAborted();
      batch.push(item);
      if (batch.length >= options.batchSize) await flush();
    }
    await flush();
  } catch (error) {
    if (error instanceof Interrupted) {
      status = INTERRUPTED;
    } else if (error instanceof UnreadableImport || error instanceof DomainError) {
      output.err(`import: ${error.message}\n`);
      status = 1;
    } else {
      throw error;
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    progress.stop();
    await new Promise<void>((resolve) => (report ? report.end(resolve) : resolve()));
  }

  const seconds = (performance.now() - started) / 1000;
  for (const failure of failures) {
    output.err(`item ${failure.index}${failure.sku ? ` (sku ${failure.sku})` : ""}: ${failure.detail}\n`);
  }
  if (counts.failed > failures.length) {
    output.err(
      `… and ${counts.failed - failures.length} more failed items${options.reportPath ? ` (all in ${options.reportPath})` : ""}\n`,
    );
  }
  const summary = {
    event: status === INTERRUPTED ? "import_interrupted" : "import_done",
    file: path,
    format: source.format,
    ...(embeddings ? { embeddings } : {}),
    items: done(),
    ...counts,
    seconds: Math.round(seconds * 10) / 10,
    perSecond: Math.round(done() / Math.max(seconds, 0.001)),
  };
  if (process.stdout.isTTY) {
    const verb = status === INTERRUPTED ? "interrupted after" : "imported";
    output.out(
      `${verb} ${summary.items} items in ${summary.seconds} s: ${counts.created} created, ${counts.updated} updated, ` +
        `${counts.unchanged} unchanged, ${counts.failed} failed` +
        (status === INTERRUPTED ? ". What is stored stays: run the same command again to resume." : "") +
        "\n",
    );
  } else {
    output.out(`${JSON.stringify(summary)}\n`);
  }
  if (status === 0 && counts.failed > 0) return 1;
  return status;
}

/** What the import does with an export's embeddings, and why: one line for the operator. */
function describeExportEmbeddings(
  header: ExportHeader,
  embeddings: "restored" | "computed",
  configured: EmbeddingSpace,
): string {
  const of = (space: EmbeddingSpace) => `${space.model} (${space.dimension} dimensions)`;
  const sameSpace = header.model === configured.model && header.dimension === configured.dimension;
  return embeddings === "restored"
    ? `export of ${header.exportedAt.toISOString()}: its embeddings are of the configured model, ${of(header)}: ` +
        "they are stored as they are, no text is embedded"
    : sameSpace
      ? `export of ${header.exportedAt.toISOString()}: its embeddings were made with the embedded attributes ` +
        `[${header.embeddedAttributes.join(", ")}], not those of the catalogue it goes into: they are ignored and ` +
        "the texts embedded again"
      : `export of ${header.exportedAt.toISOString()}: its embeddings are of ${of(header)}, not of the configured ` +
        `model ${of(configured)}: they are ignored and the texts embedded again`;
}

const consoleOutput: CliOutput = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

interface ProgressDisplay {
  /** What the import is doing before its first items are stored. */
  phase(text: string): void;
  update(bytesDone: number, items: number, counts: Record<ImportStatus, number>, elapsedMs: number): void;
  stop(): void;
}

/**
 * A progress bar on a terminal (stderr); otherwise a JSON line on stdout every `everySeconds`. The
 * preparation is shown at once (a line saying what is loading), so the command never sits silent.
 */
function progressDisplay(bytesTotal: number, everySeconds: number, output: CliOutput): ProgressDisplay {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: "{bar} {percentage}% | {items} items | {rate}/s | ETA {eta_formatted} | {phase}",
        stream: process.stderr,
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(bytesTotal, 1), 0, { items: 0, rate: 0, phase: "" });
    return {
      phase: (text) => bar.update({ phase: text }),
      update(bytesDone, items, _counts, elapsedMs) {
        bar.update(Math.min(bytesDone, bytesTotal), {
          items,
          rate: Math.round(items / Math.max(elapsedMs / 1000, 0.001)),
          phase: "",
        });
      },
      stop: () => bar.stop(),
    };
  }
  let last = 0;
  return {
    phase: (text) => output.out(`${JSON.stringify({ event: "import_progress", phase: text, items: 0 })}\n`),
    update(bytesDone, items, counts, elapsedMs) {
      if (elapsedMs - last < everySeconds * 1000) return;
      last = elapsedMs;
      const rate = items / Math.max(elapsedMs / 1000, 0.001);
      const fraction = bytesTotal > 0 ? Math.min(bytesDone / bytesTotal, 1) : 0;
      const etaSeconds = fraction > 0 ? Math.round(((elapsedMs / 1000) * (1 - fraction)) / fraction) : null;
      output.out(
        `${JSON.stringify({
          event: "import_progress",
          items,
          ...counts,
          perSecond: Math.round(rate),
          percent: Math.round(fraction * 1000) / 10,
          etaSeconds,
        })}\n`,
      );
    },
    stop() {},
  };
}
