/** `index status|build|drop`: the vector index of a catalogue's embeddings (README "Vector index"). */
import { DEFAULT_CATALOGUE } from "../../domain/caller.ts";
import { CatalogueNotFound } from "../../domain/errors.ts";
import { UpkeepBusy } from "../../domain/reembed-catalogue.ts";
import { systemTimers, type Timers, withinMs } from "../../ports/timers.ts";
import type { VectorIndex } from "../../ports/vector-index.ts";
import type { Config } from "../config.ts";
import { createLogger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";

type IndexAction = "status" | "build" | "drop";

export const registerVectorIndex: RegisterCommand = (program, run, output) => {
  const index = program.command("index").description("the vector index of a catalogue's embeddings");
  const action = (name: IndexAction, description: string) =>
    index
      .command(name)
      .description(description)
      .option("--catalogue <name>", "the catalogue whose index (each has its own)", DEFAULT_CATALOGUE)
      .action((options: { catalogue: string }) =>
        run((config) => vectorIndex(config, name, options.catalogue, output)),
      );
  action(
    "status",
    "show a catalogue's vector index: its kind and column, whether it is built and valid, its size, the products, a build's progress",
  );
  action("build", "build the vector index now, whatever the catalogue's size (VECTOR_INDEX_MIN_ROWS)");
  action("drop", "drop the vector index: search scans exactly until it is built again");
};

async function vectorIndex(config: Config, action: IndexAction, catalogue: string, output: CliOutput): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger("warn"));
  try {
    const index = await (await root.vectorIndexes()).of(catalogue);
    if (!index) {
      output.err(`index: ${new CatalogueNotFound(catalogue).message}\n`);
      return EXIT.failed;
    }
    if (action === "build") {
      const started = systemTimers.now();
      // One builder at a time among every instance on the database (the service's looks included).
      const lease = await root.upkeepLease();
      if (lease && !(await lease.acquire())) throw new UpkeepBusy();
      try {
        const building = index.build();
        // On a server the build runs on a connection of its own: say how far it is now and then.
        if (config.databaseUrl !== undefined) await reportProgress(index, building, output, { started });
        if (!(await building) && !(await index.status()).valid) {
          output.err("no vector index was built: see `index status` (the dimension, or another build running)\n");
          return EXIT.failed;
        }
      } finally {
        await lease?.release();
      }
      output.err(`vector index ready (${secondsSince(started, systemTimers)} s)\n`);
    } else if (action === "drop") {
      output.err((await index.drop()) ? "vector index dropped\n" : "there was no vector index\n");
    }
    const { mode, minRows, efSearch, probes, rerankDepth, filterExactMaxRows, filterFarExactMaxRows } =
      config.vectorSearch;
    const settings = { mode, minRows, probes, efSearch, rerankDepth, filterExactMaxRows, filterFarExactMaxRows };
    output.out(`${JSON.stringify({ catalogue, ...(await index.status()), ...settings })}\n`);
    return EXIT.ok;
  } finally {
    await root.close();
  }
}

export const PROGRESS_EVERY_MS = 10_000;

const secondsSince = (started: number, timers: Timers) => ((timers.now() - started) / 1000).toFixed(1);

/**
 * A line on stderr every PROGRESS_EVERY_MS while `building` runs, from the database's own report of
 * the build (`started`: when the command began, on `timers`' clock). Its wait is cancelled when the
 * build ends: left running, it kept the command's process up to 10 s past its answer.
 */
export async function reportProgress(
  index: Pick<VectorIndex, "status">,
  building: Promise<boolean>,
  output: CliOutput,
  { started, timers = systemTimers }: { started: number; timers?: Timers },
): Promise<void> {
  let done = false;
  const finished = building.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  while (!done) {
    await withinMs(timers, PROGRESS_EVERY_MS, finished);
    if (done) return;
    const { progress } = await index.status();
    if (progress) {
      output.err(
        `building: ${(100 * progress.fraction).toFixed(0)} % (${progress.phase}, ${progress.tuplesDone} products in the graph), ${secondsSince(started, timers)} s\n`,
      );
    }
  }
}
