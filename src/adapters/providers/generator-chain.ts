import { GenerationUnavailable } from "../../domain/errors.ts";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { systemTimers, type Timers } from "../../ports/timers.ts";
import { describeError } from "./describe-error.ts";

export type GenerationLog = (event: Record<string, unknown>) => void;

/** A generator in the chain, optionally with its own time limit. */
export interface ChainLink {
  generator: Generator;
  timeoutMs?: number;
}

export interface GeneratorChainOptions {
  /**
   * Time limit of each link that sets none of its own, in ms (default 20 s): for `generate` the
   * whole answer, for `stream` each wait for the link's next event (see GeneratorChain.stream).
   */
  timeoutMs?: number;
  /** Receives one event per failed attempt (`generation_failed`, with `fallback` when a next link takes over) and one for the answering link. */
  log?: GenerationLog;
  /** The clock of the latencies logged and the links' time limits (default: the real ones). */
  timers?: Timers;
}

const DEFAULT_TIMEOUT_MS = 20_000;

/** A link that took too long; the chain moves on (the late answer, if any, is ignored). */
export class GenerationTimeout extends Error {
  override readonly name = "GenerationTimeout";
  constructor(readonly timeoutMs: number) {
    super(`nothing within ${timeoutMs} ms`);
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
 * Streamed, the same rules hold, and a link that fails after its text began is replaced (`reset`).
 */
export class GeneratorChain implements Generator {
  readonly name: string;
  private readonly links: readonly Required<ChainLink>[];
  private readonly log: GenerationLog;
  private readonly timers: Timers;

  constructor(links: readonly (Generator | ChainLink)[], options: GeneratorChainOptions = {}) {
    if (links.length === 0) throw new Error("GeneratorChain needs at least one generator");
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.links = links.map((link) =>
      "generator" in link
        ? { generator: link.generator, timeoutMs: link.timeoutMs ?? timeoutMs }
        : { generator: link, timeoutMs },
    );
    this.log = options.log ?? (() => {});
    this.timers = options.timers ?? systemTimers;
    this.name = `chain(${this.links.map((link) => link.generator.name).join(", ")})`;
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const failures: Error[] = [];
    for (const [position, { generator, timeoutMs }] of this.links.entries()) {
      signal?.throwIfAborted();
      const started = this.timers.now();
      const latencyMs = () => Math.round(this.timers.now() - started);
      const turn = new LinkTurn(timeoutMs, signal, this.timers);
      try {
        const recommendation = await turn.within(() => generator.generate(request, turn.signal));
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
        failures.push(this.failed(generator, position, error, { latencyMs: latencyMs() }));
      } finally {
        turn.end();
      }
    }
    throw unavailable(failures);
  }

  /**
   * The first link that writes a non-blank text, as it writes it. A link's deltas reach the caller
   * from its first non-blank one on; a link that fails before that (rejects, times out, ends blank)
   * hands over silently; one that fails after it sends a `reset`, and the next link's text replaces
   * its own. Each link's `timeoutMs` bounds every wait for its next event: the first text
   * (connection and retries included) and each pause after it, not the length of a stream that keeps
   * coming (the provider's max tokens and per-attempt time limit bound that). When every link
   * fails, the iteration throws GenerationUnavailable (after a `reset` if text had been sent);
   * when `signal` aborts, it throws `signal.reason` and the request in flight is cancelled.
   */
  async *stream(request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    const failures: Error[] = [];
    for (const [position, { generator, timeoutMs }] of this.links.entries()) {
      signal?.throwIfAborted();
      const started = this.timers.now();
      const elapsedMs = () => Math.round(this.timers.now() - started);
      const turn = new LinkTurn(timeoutMs, signal, this.timers);
      let events: AsyncIterator<GenerationEvent> | undefined;
      /** This link's text since its last reset. */
      let text = "";
      /** Some of that text reached the caller. */
      let began = false;
      let firstTextMs = 0;
      try {
        const iterator = generator.stream(request, turn.signal)[Symbol.asyncIterator]();
        events = iterator;
        let answer: Recommendation | undefined;
        while (!answer) {
          const next = await turn.within(() => iterator.next());
          if (next.done) throw new Error("the stream ended without its done event");
          const event = next.value;
          if (event.type === "delta") {
            text += event.text;
            if (began) {
              yield { type: "delta", text: event.text };
            } else if (text.trim() !== "") {
              began = true;
              firstTextMs = elapsedMs();
              yield { type: "delta", text };
            }
          } else if (event.type === "reset") {
            text = "";
            if (began) {
              began = false;
              yield { type: "reset" };
            }
          } else {
            answer = event.recommendation;
          }
        }
        if (!began) throw new EmptyGeneration();
        const recommendation: Recommendation = { text: text.trim(), provider: answer.provider, model: answer.model };
        this.log({
          event: "generation_answered",
          generator: generator.name,
          position,
          provider: recommendation.provider,
          model: recommendation.model,
          firstTextMs,
          latencyMs: elapsedMs(),
        });
        yield { type: "done", recommendation, position };
        return;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        failures.push(this.failed(generator, position, error, { latencyMs: elapsedMs(), reset: began }));
        if (began) yield { type: "reset" };
      } finally {
        turn.end();
        release(events);
      }
    }
    throw unavailable(failures);
  }

  /** Logs a link's failure (`fallback`: a next link takes over) and returns it as an Error. */
  private failed(generator: Generator, position: number, error: unknown, details: Record<string, unknown>): Error {
    const failure = error instanceof Error ? error : new Error(String(error));
    this.log({
      event: "generation_failed",
      generator: generator.name,
      position,
      reason: failure instanceof GenerationTimeout ? "timeout" : failure instanceof EmptyGeneration ? "empty" : "error",
      error: describeError(failure),
      fallback: position < this.links.length - 1,
      ...details,
    });
    return failure;
  }
}

/**
 * Lets a link's stream run its own clean-up, without waiting for it: its request is already
 * cancelled, and a link that ignores its signal may never finish.
 */
function release(events: AsyncIterator<GenerationEvent> | undefined): void {
  Promise.resolve()
    .then(() => events?.return?.())
    .catch(() => {});
}

function unavailable(failures: readonly Error[]): GenerationUnavailable {
  return new GenerationUnavailable(undefined, {
    cause: new AggregateError(failures, `all ${failures.length} generators failed`),
  });
}

/**
 * One link's turn. Its signal, given to the link's request, aborts when the caller's does, when a
 * wait takes longer than the link's time limit (with GenerationTimeout as the reason) and when the
 * turn ends.
 */
class LinkTurn {
  private readonly controller = new AbortController();
  private readonly stopWithOuter = () => this.controller.abort(this.outer?.reason);

  constructor(
    private readonly timeoutMs: number,
    private readonly outer: AbortSignal | undefined,
    private readonly timers: Timers,
  ) {
    outer?.addEventListener("abort", this.stopWithOuter, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * What `work` resolves to, or a rejection when the signal aborts (with its reason) or timeoutMs
   * passes (with GenerationTimeout), at that moment even if the work ignores its signal. A
   * synchronous throw is a rejection too.
   */
  within<T>(work: () => Promise<T>): Promise<T> {
    const { signal } = this.controller;
    if (signal.aborted) return Promise.reject(signal.reason);
    let cancelTimer = () => {};
    let onAbort = () => {};
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      cancelTimer = this.timers.after(this.timeoutMs, () =>
        this.controller.abort(new GenerationTimeout(this.timeoutMs)),
      );
    });
    return Promise.race([Promise.resolve().then(work), stopped]).finally(() => {
      cancelTimer();
      signal.removeEventListener("abort", onAbort);
    });
  }

  /** The link is done with: a request still running (it lost a race) is cancelled. */
  end(): void {
    this.outer?.removeEventListener("abort", this.stopWithOuter);
    if (!this.controller.signal.aborted) this.controller.abort(new Error("the chain moved on"));
  }
}
