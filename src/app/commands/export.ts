/**
 * `export FILE`: a catalogue (`--catalogue`, default `default`) as JSON Lines (adapters/import/catalogue-export.ts says the format),
 * gzip-compressed when FILE ends in .gz or with --gzip, optionally with every product's embedding
 * and the model and dimension they were made with, so that `import FILE` restores it without
 * embedding anything. Read a page at a time: any catalogue size, in constant memory. On the embedded
 * database held by the running service, the service answers the pages (its admin socket).
 */
import { writeCatalogueExport } from "../../adapters/import/catalogue-export.ts";
import { DEFAULT_CATALOGUE } from "../../domain/caller.ts";
import type { CatalogueExport, ExportHeader } from "../../domain/export-catalogue.ts";
import type { ExportedProduct } from "../../ports/product-repository.ts";
import { serviceSocketFor, viaSocket } from "../admin/admin-channel.ts";
import { type Config, secretsOf } from "../config.ts";
import { createLogger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";
import { stopOnSignals } from "./load.ts";

interface ExportCommandOptions {
  gzip?: boolean;
  withEmbeddings?: boolean;
  catalogue: string;
}

export const registerExport: RegisterCommand = (program, run, output) => {
  program
    .command("export")
    .argument("<file>")
    .description("write the catalogue to a JSON Lines file that `import` reads back (gzip when the name ends in .gz)")
    .option("--gzip", "compress with gzip whatever the file's name")
    .option(
      "--with-embeddings",
      "include every product's embedding (and its model): an import with the same model then embeds nothing",
    )
    .option("--catalogue <name>", "the catalogue to export", DEFAULT_CATALOGUE)
    .action((file: string, options: ExportCommandOptions) =>
      run((config) => exportFile(config, file, options, output)),
    );
};

async function exportFile(
  config: Config,
  file: string,
  options: ExportCommandOptions,
  output: CliOutput,
): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger(config.logLevel, secretsOf(config)));
  const stop = stopOnSignals();
  const started = performance.now();
  const withEmbeddings = options.withEmbeddings === true;
  const gzip = options.gzip === true || file.toLowerCase().endsWith(".gz");
  try {
    const exported = await root
      .exportCatalogue(options.catalogue)
      .then((exporter) => exporter.execute({ withEmbeddings, signal: stop.signal }))
      .catch(async (error: unknown) => {
        const socket = serviceSocketFor(config, error);
        if (socket === undefined) throw error;
        await root.close();
        output.err("the running service holds the embedded database: it answers the catalogue a page at a time\n");
        return exportFromService(socket, options.catalogue, withEmbeddings, stop.signal);
      });
    const onTerminal = process.stderr.isTTY;
    const { products } = await writeCatalogueExport(file, exported, {
      gzip,
      onProgress: (count) => (onTerminal ? output.err(`\rexported ${count} products`) : undefined),
    });
    if (onTerminal) output.err("\n");
    const { model, dimension } = exported.header;
    output.out(
      `${JSON.stringify({
        event: "export_done",
        file,
        products,
        gzip,
        embeddings: withEmbeddings,
        model,
        dimension,
        seconds: Math.round((performance.now() - started) / 100) / 10,
      })}\n`,
    );
    return EXIT.ok;
  } catch (error) {
    if (!stop.signal.aborted) throw error;
    output.err(`\nstopped: ${file} was not written\n`);
    return stop.exitCode;
  } finally {
    stop.release();
    await root.close();
  }
}

/** Products the running service answers in one page: 200 embeddings of 3,072 numbers are about 12 MB of JSON. */
const SERVICE_PAGE = 200;

/** The catalogue read from the running service's admin socket, a page at a time (as ExportCatalogue reads the database). */
async function exportFromService(
  socket: string,
  catalogue: string,
  withEmbeddings: boolean,
  signal: AbortSignal,
): Promise<CatalogueExport> {
  type Page = { header: Omit<ExportHeader, "exportedAt"> & { exportedAt: string }; products: ExportedProduct[] };
  const page = (afterId: number) =>
    viaSocket(
      socket,
      "products.export-page",
      { catalogue, after_id: afterId, limit: SERVICE_PAGE, with_embeddings: withEmbeddings },
      signal,
    ) as Promise<Page>;
  const first = await page(0);
  return {
    header: { ...first.header, exportedAt: new Date(first.header.exportedAt) },
    products: (async function* () {
      for (let current = first; ; current = await page((current.products.at(-1) as ExportedProduct).id)) {
        yield* current.products;
        if (current.products.length < SERVICE_PAGE) return;
      }
    })(),
  };
}
