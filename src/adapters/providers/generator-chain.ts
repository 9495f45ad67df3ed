import { GenerationUnavailable } from "../../domain/errors.ts";
import type { Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";

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
const MAX_REASON_LENGTH = 300;

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

  async generate(request: RecommendationRequest): Promise<Recommendation> {
    const failures: Error[] = [];
    for (const [position, { generator, timeoutMs }] of this.links.entries()) {
      const started = performance.now();
      const latencyMs = () => Math.round(performance.now() - started);
      try {
        const recommendation = await withTimeout(() => generator.generate(request), timeoutMs);
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
        const failure = error instanceof Error ? error : new Error(String(error));
        failures.push(failure);
        this.log({
          event: "generation_failed",
          generator: generator.name,
          position,
          reason:
            failure instanceof GenerationTimeout ? "timeout" : failure instanceof EmptyGeneration ? "empty" : "error",
          error: describe(failure),
          latencyMs: latencyMs(),
        });
      }
    }
    throw new GenerationUnavailable(undefined, {
      cause: new AggregateError(failures, `all ${failures.length} generators failed`),
    });
  }
}

/** Runs `task`, rejecting with GenerationTimeout after `timeoutMs`; a synchronous throw is a rejection too. */
async function withTimeout<T>(task: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new GenerationTimeout(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(task), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An error as "Name: message" for the log, bounded, with anything shaped like a credential masked:
 * provider errors may echo a request URL (`?key=...`) or a header.
 */
function describe(error: Error): string {
  const text = `${error.name}: ${error.message}`
    .replace(/\b(key|api[_-]?key|token|access_token|secret|password)=[^&\s"']+/gi, "$1=[redacted]")
    .replace(/\b(Bearer|Basic)\s+[\w.~+/=-]+/gi, "$1 [redacted]")
    .replace(/\b(sk-[\w-]{8,}|AIza[\w-]{20,})/g, "[redacted]");
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}
