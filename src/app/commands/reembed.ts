/**
 * `reembed`: moves every product's embedding to the configured model (README "Users and
 * maintenance"). Resumable: stopped or failed, it keeps what it staged and the next run goes on.
 */
import type { Config } from "../config.ts";
import { secretsOf } from "../config.ts";
import { createLogger, type Logger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";
import { buildIndexAfterLoad, stopOnSignals } from "./load.ts";

export const registerReembed: RegisterCommand = (program, run, output) => {
  program
    .command("reembed")
    .description("re-embed every product with the configured embedding model (stop the service first)")
    .action(() => run((config) => reembed(config, createLogger(config.logLevel, secretsOf(config)), output)));
};

async function reembed(config: Config, log: Logger, output: CliOutput): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, log);
  const stop = stopOnSignals();
  try {
    const reembedCatalogue = await root.reembedCatalogue();
    const { products } = await reembedCatalogue.execute({
      signal: stop.signal,
      onEvent: (event) => {
        if (event.type === "started" && event.staged > 0) {
          output.err(`resuming: ${event.staged} of ${event.total} products already re-embedded\n`);
        } else if (event.type === "progress") {
          output.err(`\rre-embedded ${event.done}/${event.total}`);
        }
      },
    });
    const embedder = await root.embedder();
    output.err(`\nall ${products} products now use ${embedder.model} (${embedder.dimension} dimensions)\n`);
    // The vector index went with the old embeddings: built again for the new ones.
    await buildIndexAfterLoad(root, output);
    return EXIT.ok;
  } catch (error) {
    if (!stop.signal.aborted) throw error;
    output.err("\nstopped: the live embeddings are unchanged; run `reembed` again to go on where it stopped\n");
    return stop.exitCode;
  } finally {
    stop.release();
    await root.close();
  }
}
