/** `index status|build|drop`: the vector index of the catalogue's embeddings (README "Vector index"). */
import { UpkeepBusy } from "../../domain/reembed-catalogue.ts";
import type { Config } from "../config.ts";
import { createLogger } from "../logger.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";

type IndexAction = "status" | "build" | "drop";

export const registerVectorIndex: RegisterCommand = (program, run, output) => {
  const index = program.command("index").description("the vector index of the catalogue's embeddings");
  const action = (name: IndexAction, description: string) =>
    index
      .command(name)
      .description(description)
      .action(() => run((config) => vectorIndex(config, name, output)));
  action("status", "show the vector index: its column, whether it is built and valid, its size, the products");
  action("build", "build the vector index now, whatever the catalogue's size (VECTOR_INDEX_MIN_ROWS)");
  action("drop", "drop the vector index: search scans exactly until it is built again");
};

async function vectorIndex(config: Config, action: IndexAction, output: CliOutput): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger("warn"));
  try {
    const index = await root.vectorIndex();
    if (action === "build") {
      const started = performance.now();
      // One builder at a time among every instance on the database (the service's looks included).
      const lease = await root.upkeepLease();
      if (lease && !(await lease.acquire())) throw new UpkeepBusy();
      try {
        if (!(await index.build()) && !(await index.status()).valid) {
          output.err("no vector index was built: see `index status` (the dimension, or another build running)\n");
          return EXIT.failed;
        }
      } finally {
        await lease?.release();
      }
      output.err(`vector index ready (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    } else if (action === "drop") {
      output.err((await index.drop()) ? "vector index dropped\n" : "there was no vector index\n");
    }
    const { mode, minRows, efSearch, filterExactMaxRows } = config.vectorSearch;
    output.out(`${JSON.stringify({ ...(await index.status()), mode, minRows, efSearch, filterExactMaxRows })}\n`);
    return EXIT.ok;
  } finally {
    await root.close();
  }
}
