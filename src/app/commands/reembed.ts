/**
 * `reembed`: moves every product's embedding to the configured model (README "Users and
 * maintenance"). Resumable: stopped or failed, it keeps what it staged and the next run goes on.
 * `reembed --catalogue NAME`: embeds again only that catalogue's stale products (README "What is embedded").
 */

import { serviceSocketFor, viaSocket } from "../admin/admin-channel.ts";
import type { Config } from "../config.ts";
import { secretsOf } from "../config.ts";
import { createLogger, type Logger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";
import { buildIndexAfterLoad, stopOnSignals } from "./load.ts";

export const registerReembed: RegisterCommand = (program, run, output) => {
  program
    .command("reembed")
    .description(
      "re-embed every product with the configured embedding model, or with --catalogue only the products of that " +
        "catalogue whose embedding is not of their current text (after `catalogues set`, done by the running " +
        "service on the embedded database); on the embedded database stop the service first for a whole re-embed",
    )
    .option("--catalogue <name>", "embed again only this catalogue's stale products, in place")
    .action((options: { catalogue?: string }) =>
      run((config) => {
        const log = createLogger(config.logLevel, secretsOf(config));
        return options.catalogue === undefined
          ? reembed(config, log, output)
          : reembedStale(config, log, output, options.catalogue);
      }),
    );
};

/**
 * `reembed --catalogue NAME`: the catalogue's products whose embedding was made from another text
 * than the one they have now (domain/embed-stale-products.ts), embedded again in place, in the
 * catalogue's current model. Resumable by its nature: the next run finds only what is left. On the
 * embedded database held by the running service, the service does it (its admin socket), and the
 * command waits for its answer; stopping the command stops it there too.
 */
async function reembedStale(config: Config, log: Logger, output: CliOutput, catalogue: string): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, log);
  const stop = stopOnSignals();
  try {
    const { products, embedded, changedMeanwhile } = await (await root.embedStaleProducts()).execute(catalogue, {
      signal: stop.signal,
      onProgress: (progress) =>
        output.err(`\rchecked ${progress.checked}/${progress.total}, embedded again ${progress.embedded}`),
    });
    output.err(`\n${staleSummary(catalogue, products, embedded, changedMeanwhile)}`);
    return EXIT.ok;
  } catch (error) {
    const socket = stop.signal.aborted ? undefined : serviceSocketFor(config, error);
    if (socket !== undefined) {
      await root.close();
      return reembedStaleInService(socket, output, catalogue, stop);
    }
    if (!stop.signal.aborted) throw error;
    output.err(`\n${STOPPED}`);
    return stop.exitCode;
  } finally {
    stop.release();
    await root.close();
  }
}

/** What `reembed --catalogue` says when it is stopped, whoever was doing the work. */
const STOPPED = "stopped: what was embedded stays; run the same command again to go on\n";

/** What `reembed --catalogue` did, one line, whoever did it. */
function staleSummary(catalogue: string, products: number, embedded: number, changedMeanwhile: number): string {
  return (
    `catalogue '${catalogue}': ${embedded} of ${products} products embedded again from their current text` +
    (changedMeanwhile > 0 ? ` (${changedMeanwhile} changed meanwhile: their change embedded them)` : "") +
    "\n"
  );
}

/** `reembed --catalogue` done by the running service that holds the embedded database. */
async function reembedStaleInService(
  socket: string,
  output: CliOutput,
  catalogue: string,
  stop: ReturnType<typeof stopOnSignals>,
): Promise<number> {
  output.err(`the running service holds the embedded database: it embeds catalogue '${catalogue}' again; waiting…\n`);
  try {
    const { products, embedded, changed_meanwhile } = (await viaSocket(
      socket,
      "catalogues.reembed",
      { name: catalogue },
      stop.signal,
    )) as { products: number; embedded: number; changed_meanwhile: number };
    output.err(staleSummary(catalogue, products, embedded, changed_meanwhile));
    return EXIT.ok;
  } catch (error) {
    if (!stop.signal.aborted) throw error;
    output.err(STOPPED);
    return stop.exitCode;
  }
}

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
