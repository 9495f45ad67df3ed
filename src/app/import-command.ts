/**
 * `import FILE`: a catalogue file into the database, through the same use case as POST
 * /products/bulk, in batches as the file is read. On a terminal a progress bar (items, rate, ETA);
 * otherwise one JSON progress line every few seconds. Ctrl-C stops after the batch being written:
 * what is stored stays, and running the command again resumes (products with a sku are upserted
 * by it, and an unchanged text is not embedded again).
 */
import { createWriteStream } from "node:fs";
import cliProgress from "cli-progress";
import { type FileFormat, type FileSource, openImportFile, UnreadableImport } from "../adapters/import/file-items.ts";
import { DomainError } from "../domain/errors.ts";
import type { ImportItemResult, ImportProducts, ImportStatus } from "../domain/import-products.ts";
import type { JsonItem } from "../lib/json/json-items.ts";

export interface ImportCommandOptions {
  /** Items read and imported together (the use case embeds them in chunks within each batch). */
  batchSize: number;
  /** A JSON Lines file receiving every item's outcome. */
  reportPath?: string | undefined;
  /** Seconds between progress lines when not on a terminal. */
  progressEverySeconds?: number;
}

/** Failed items printed at the end at most; the report file has them all. */
const FAILURES_SHOWN = 20;

/** The import was stopped by the operator (Ctrl-C / SIGTERM). */
class Interrupted extends Error {
  override readonly name = "Interrupted";
}

/** The exit status of an import stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const INTERRUPTED = 130;

/**
 * Opens the import file (file-items.ts reads its first item too); undefined, once it has said why,
 * when the file cannot be read. Called before the database is opened, so that a wrong file fails
 * at once, whatever the database's state.
 */
export async function openImport(path: string, format: FileFormat | undefined): Promise<FileSource | undefined> {
  try {
    return await openImportFile(path, format);
  } catch (error) {
    if (!(error instanceof UnreadableImport)) throw error;
    console.error(`import: ${error.message}`);
    return undefined;
  }
}

/** Runs the import of `source` (opened by openImport from `path`); returns the exit status (0 done, 1 failed, INTERRUPTED). */
export async function runImport(
  path: string,
  source: FileSource,
  importer: ImportProducts,
  options: ImportCommandOptions,
): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort(new Interrupted("stopped by the operator"));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const report = options.reportPath ? createWriteStream(options.reportPath) : undefined;
  const counts: Record<ImportStatus, number> = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  const failures: ImportItemResult[] = [];
  const started = performance.now();
  const progress = progressDisplay(source.bytesTotal, options.progressEverySeconds ?? 5);
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
  try {
    let batch: JsonItem[] = [];
    let offset = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const outcome = await importer.execute(batch, { signal: controller.signal });
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
      console.error(`import: ${error.message}`);
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
    console.error(`item ${failure.index}${failure.sku ? ` (sku ${failure.sku})` : ""}: ${failure.detail}`);
  }
  if (counts.failed > failures.length) {
    console.error(
      `… and ${counts.failed - failures.length} more failed items${options.reportPath ? ` (all in ${options.reportPath})` : ""}`,
    );
  }
  const summary = {
    event: status === INTERRUPTED ? "import_interrupted" : "import_done",
    file: path,
    format: source.format,
    items: done(),
    ...counts,
    seconds: Math.round(seconds * 10) / 10,
    perSecond: Math.round(done() / Math.max(seconds, 0.001)),
  };
  if (process.stdout.isTTY) {
    const verb = status === INTERRUPTED ? "interrupted after" : "imported";
    console.log(
      `${verb} ${summary.items} items in ${summary.seconds} s: ${counts.created} created, ${counts.updated} updated, ` +
        `${counts.unchanged} unchanged, ${counts.failed} failed` +
        (status === INTERRUPTED ? ". What is stored stays: run the same command again to resume." : ""),
    );
  } else {
    console.log(JSON.stringify(summary));
  }
  if (status === 0 && counts.failed > 0) return 1;
  return status;
}

interface ProgressDisplay {
  update(bytesDone: number, items: number, counts: Record<ImportStatus, number>, elapsedMs: number): void;
  stop(): void;
}

/** A progress bar on a terminal (stderr); otherwise a JSON line on stdout every `everySeconds`. */
function progressDisplay(bytesTotal: number, everySeconds: number): ProgressDisplay {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: "{bar} {percentage}% | {items} items | {rate}/s | ETA {eta_formatted}",
        stream: process.stderr,
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(bytesTotal, 1), 0, { items: 0, rate: 0 });
    return {
      update(bytesDone, items, _counts, elapsedMs) {
        bar.update(Math.min(bytesDone, bytesTotal), {
          items,
          rate: Math.round(items / Math.max(elapsedMs / 1000, 0.001)),
        });
      },
      stop: () => bar.stop(),
    };
  }
  let last = 0;
  return {
    update(bytesDone, items, counts, elapsedMs) {
      if (elapsedMs - last < everySeconds * 1000) return;
      last = elapsedMs;
      const rate = items / Math.max(elapsedMs / 1000, 0.001);
      const fraction = bytesTotal > 0 ? Math.min(bytesDone / bytesTotal, 1) : 0;
      const etaSeconds = fraction > 0 ? Math.round(((elapsedMs / 1000) * (1 - fraction)) / fraction) : null;
      console.log(
        JSON.stringify({
          event: "import_progress",
          items,
          ...counts,
          perSecond: Math.round(rate),
          percent: Math.round(fraction * 1000) / 10,
          etaSeconds,
        }),
      );
    },
    stop() {},
  };
}
