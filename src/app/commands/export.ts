/**
 * `export FILE`: a catalogue (`--catalogue`, default `default`) as JSON Lines (adapters/import/catalogue-export.ts says the format),
 * gzip-compressed when FILE ends in .gz or with --gzip, optionally with every product's embedding
 * and the model and dimension they were made with, so that `import FILE` restores it without
 * embedding anything. Read a page at a time: any catalogue size, in constant memory.
 */
import { writeCatalogueExport } from "../../adapters/import/catalogue-export.ts";
import { DEFAULT_CATALOGUE } from "../../domain/caller.ts";
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
    const exported = await (await root.exportCatalogue(options.catalogue)).execute({
      withEmbeddings,
      signal: stop.signal,
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
