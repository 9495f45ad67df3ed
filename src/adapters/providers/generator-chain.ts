import { GenerationUnavailable } from "../../domain/errors.ts";
import type { Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { describeError } from "./describe-error.ts";

export type GenerationLog = (event: Record<string, unknown>) => void;

/** A generator in the chain, optionally with its own time limit. */
export interface ChainLink {
  generator: Generator;
  timeoutMs?: number;
}

export interface GeneratorChainOptions {
  /** Time limit of each link that sets none of its own, in ms (default 20 s). */
  timeoutMs?: number;
  /** Receives one event per failed attempt and one for the answering link. */
  log?: GenerationLog;
}

const DEFAULT_TIMEOUT_MS = 20_000;

/** A link that took too long; the chain moves on (the late answer, if any, is ignored). */
export class GenerationTimeout extends Error {
  override readonly name = "GenerationTimeout";
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/** A link that answered with no text. */
export class EmptyGeneration extends Error {
  override readonly name = "EmptyGeneration";
  constructor() {
    super("the answer has no text");
  }
}

/**
 * Ordered generators: the first link that answers with non-blank text within its time limit wins.
 * A rejection, a timeout or a blank text moves on to the next link. When every link fails, it
 * rejects with GenerationUnavailable whose `cause` is an AggregateError of each link's failure.
 */
export class GeneratorChain implements Generator {
  readonly name: string;
  private readonly links: readonly Required<ChainLink>[];
  private readonly log: GenerationLog;

  constructor(links: readonly (Generator | ChainLink)[], options: GeneratorChainOptions = {}) {
    if (links.length === 0) throw new Error("GeneratorChain needs at least one generator");
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.links = links.map((link) =>
      "generator" in link
        ? { generator: link.generator, timeoutMs: link.timeoutMs ?? timeoutMs }
        : { generator: link, timeoutMs },
    );
    this.log = options.log ?? (() => {});
    this.name = `chain(${this.links.map((link) => link.generator.name).join(", ")})`;
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const failures: Error[] = [];
    for (const [position, { generator, timeoutMs }] of this.links.entries()) {
      signal?.throwIfAborted();
      const started = performance.now();
      const latencyMs = () => Math.round(performance.now() - started);
      try {
        const recommendation = await withTimeout(
          (linkSignal) => generator.generate(request, linkSignal),
          timeoutMs,
          signal,
        );
        if (typeof recommendation?.text !== "string" || recommendation.text.trim() === "") {
          throw new EmptyGeneration();
        }
        this.log({
          event: "generation_answered",
          generator: generator.name,
          position,
          provider: recommendation.provider,
          model: recommendation.model,
          latencyMs: latencyMs(),
        });
        return recommendation;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const failure = error instanceof Error ? error : new Error(String(error));
        failures.push(failure);
        this.log({
          event: "generation_failed",
          generator: generator.name,
          position,
          reason:
            failure instanceof GenerationTimeout ? "timeout" : failure instanceof EmptyGeneration ? "empty" : "error",
          error: describeError(failure),
          latencyMs: latencyMs(),
        });
      }
    }
    throw new GenerationUnavailable(undefined, {
      cause: new AggregateError(failures, `all ${failures.length} generators failed`),
    });
  }
}

/**
 * Runs `task` with a signal that aborts after `timeoutMs` (or when `outer` aborts), and rejects with
 * GenerationTimeout at that moment even if the task ignores its signal. A synchronous throw is a rejection too.
 */
async function withTimeout<T>(
  task: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  outer: AbortSignal | undefined,
): Promise<T> {
  const controller = new AbortController();
  const stopWithOuter = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", stopWithOuter, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const timeout = new GenerationTimeout(timeoutMs);
      controller.abort(timeout);
      reject(timeout);
    }, timeoutMs);
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
  });
  try {
    return await Promise.race([Promise.resolve().then(() => task(controller.signal)), expired]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", stopWithOuter);
    // The link is over: a request still running (it lost the race) is cancelled.
    if (!controller.signal.aborted) controller.abort(new Error("the chain moved on"));
  }
}
