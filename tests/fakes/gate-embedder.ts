import type { Vector } from "../../src/domain/vector.ts";
import type { Embedder } from "../../src/ports/embedder.ts";
import { bagOfWords } from "./fake-embedder.ts";

/** One embed call held at the gate until the test lets it through (or fails it). */
export interface HeldCall {
  texts: readonly string[];
  /** Answers the call with the texts' vectors. */
  pass(): void;
  /** Rejects the call, as a provider that failed for good. */
  fail(error?: Error): void;
}

/**
 * An embedder whose every call waits at a gate until the test passes it (`next()` gives the call
 * waiting, in order; an abort rejects it with the signal's reason and takes it off the gate): the test decides how far an
 * import gets, instead of a delay racing the machine's load. `open` lets every call through at once.
 */
export class GateEmbedder implements Embedder {
  readonly model = "fake-gate";
  /** As a remote provider says it (Embedder.callsAtOnce); unset, as a local model. */
  callsAtOnce: number | undefined;
  open = false;
  /** Texts of every call let through, in order. */
  readonly embedded: string[] = [];
  private readonly held: HeldCall[] = [];
  private readonly waiters: ((call: HeldCall) => void)[] = [];

  constructor(readonly dimension = 16) {}

  embed(texts: readonly string[], _purpose: unknown, signal?: AbortSignal): Promise<Vector[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const answer = () => {
      this.embedded.push(...texts);
      return texts.map((text) => bagOfWords(text, this.dimension));
    };
    if (this.open) return Promise.resolve(answer());
    return new Promise((resolve, reject) => {
      const call: HeldCall = {
        texts,
        pass: () => resolve(answer()),
        fail: (error = new Error("fake gate: provider down")) => reject(error),
      };
      signal?.addEventListener(
        "abort",
        () => {
          const waiting = this.held.indexOf(call);
          if (waiting >= 0) this.held.splice(waiting, 1);
          reject(signal.reason);
        },
        { once: true },
      );
      const waiter = this.waiters.shift();
      if (waiter) waiter(call);
      else this.held.push(call);
    });
  }

  /** Calls waiting at the gate now. */
  get waiting(): number {
    return this.held.length;
  }

  /** The next call that reaches the gate (waits for it). */
  next(): Promise<HeldCall> {
    const call = this.held.shift();
    if (call) return Promise.resolve(call);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Opens the gate: the calls held and every later one go through. */
  openAll(): void {
    this.open = true;
    for (const call of this.held.splice(0)) call.pass();
  }
}
