/** What the commands that load the catalogue (import, reembed) share: Ctrl-C, and the index after the load. */
import type { CompositionRoot } from "../composition-root.ts";
import type { CliOutput } from "./command.ts";

/** The exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const INTERRUPTED = 130;

/** The load was stopped by the operator (Ctrl-C / SIGTERM). */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
}

/** A signal that aborts (with Interrupted) at Ctrl-C or SIGTERM, until `release`. */
export function stopOnSignals(): { signal: AbortSignal; exitCode: number; release(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort(new Interrupted("stopped by the operator"));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return {
    signal: controller.signal,
    exitCode: INTERRUPTED,
    release() {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    },
  };
}

/** After a large load has ended: the vector index policy, told the load is over, builds the index when due. */
export async function buildIndexAfterLoad(root: CompositionRoot, output: CliOutput): Promise<void> {
  const started = performance.now();
  const decision = await (await root.maintainVectorIndex()).afterLoad();
  if (decision === "built") {
    output.err(`vector index built in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
}
