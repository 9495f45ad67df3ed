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

/**
 * After a large load into `catalogues` (every catalogue when unset: a re-embed) has ended: the
 * vector index policy, told the load is over, builds each one's index when due.
 */
export async function buildIndexAfterLoad(
  root: CompositionRoot,
  output: CliOutput,
  catalogues?: readonly string[],
): Promise<void> {
  const maintain = await root.maintainVectorIndex();
  for (const catalogue of catalogues ?? (await (await root.vectorIndexes()).catalogues())) {
    const started = performance.now();
    if ((await maintain.afterLoad(catalogue)) === "built") {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      output.err(`vector index built in ${seconds} s (catalogue '${catalogue}')\n`);
    }
  }
}
