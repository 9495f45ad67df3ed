import type { Subprocess } from "bun";
import { systemTimers, type Timers } from "../../ports/timers.ts";

/** Why a pipe could not answer. */
export type PipeFailure = "timeout" | "aborted" | "died" | "start_failed" | "closed";

export class PipeUnavailable extends Error {
  constructor(
    readonly reason: PipeFailure,
    message: string,
  ) {
    super(message);
    this.name = "PipeUnavailable";
  }
}

export interface NulPipeOptions {
  /** The program and its arguments, e.g. ["sh", "-c", "a -z | b -z"]. */
  command: string[];
  /** Sent first after every start; its answer means every stage is loaded and answering. */
  probe: string;
  /** Time a start may take, probe answered (a slow start is not cut short by a caller's timeout). */
  startTimeoutMs: number;
  /** After a failed start, calls fail at once for this long rather than starting it again and again. */
  retryAfterMs: number;
  /** The clock and the time limits (default: the real ones). */
  timers?: Timers;
}

interface Exchange {
  expected: number;
  answers: string[];
  resolve: (answers: string[]) => void;
  reject: (error: Error) => void;
}

interface Running {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  /** The exchange in flight; answers arriving with none are dropped (cannot happen: a timed-out exchange kills the process). */
  exchange: Exchange | null;
  /** Bytes read after the last NUL. */
  partial: Uint8Array[];
  stderr: string;
  /** Resolves when stderr has been read to its end. */
  stderrRead: Promise<void>;
  dead: boolean;
  ready: Promise<void>;
}

const STDERR_KEPT = 2000;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * A long-lived child process that answers NUL-terminated segments with NUL-terminated segments,
 * in order (Apertium's null-flush mode, `-z`). Requests go one at a time; each has its own time
 * limit, counted from the call, queueing included. A request that times out while in flight leaves
 * the process in an unknown state, so the process is killed (its whole process group) and the next
 * request starts a fresh one; so does a request after the process dies. Requests that time out
 * while still queued never reach it.
 */
export class NulPipe {
  private running: Running | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private failedStartAt = Number.NEGATIVE_INFINITY;
  private lastStartError: Error | null = null;
  private closed = false;
  /** How many times a process was started (for tests and logs). */
  starts = 0;
  private readonly timers: Timers;

  constructor(private readonly options: NulPipeOptions) {
    this.timers = options.timers ?? systemTimers;
  }

  /** Starts the process now (it otherwise starts on the first request); resolves when it answers the probe. */
  async start(): Promise<void> {
    await this.ensureRunning(this.timers.now() + this.options.startTimeoutMs);
  }

  /** One answer per segment, in order. Segments must not contain NUL. */
  request(segments: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<string[]> {
    const deadline = this.timers.now() + timeoutMs;
    const turn = this.queue.then(() => this.run(segments, deadline, signal));
    this.queue = turn.catch(() => {});
    return this.withDeadline(turn, deadline, signal);
  }

  /** Kills the process; later requests fail. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.running) this.kill(this.running, new PipeUnavailable("closed", "the pipe was closed"));
    this.running = null;
  }

  private async run(segments: readonly string[], deadline: number, signal?: AbortSignal): Promise<string[]> {
    if (signal?.aborted) throw new PipeUnavailable("aborted", "the request was aborted");
    if (this.timers.now() >= deadline) throw timedOut();
    const running = await this.ensureRunning(deadline);
    if (segments.length === 0) return [];
    return this.exchange(running, segments, deadline - this.timers.now(), signal);
  }

  private async ensureRunning(deadline: number): Promise<Running> {
    if (this.closed) throw new PipeUnavailable("closed", "the pipe was closed");
    if (this.running === null || this.running.dead) {
      if (this.timers.now() - this.failedStartAt < this.options.retryAfterMs) {
        throw new PipeUnavailable("start_failed", `it failed to start: ${this.lastStartError?.message ?? "unknown"}`);
      }
      this.running = this.spawn();
    }
    const running = this.running;
    await this.withDeadline(running.ready, deadline);
    return running;
  }

  private spawn(): Running {
    this.starts++;
    let proc: Subprocess<"pipe", "pipe", "pipe">;
    try {
      proc = Bun.spawn(this.options.command, {
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        // Its own process group: a timeout kills every stage of the pipeline, not only the shell.
        detached: true,
      });
    } catch (error) {
      this.failedStartAt = this.timers.now();
      this.lastStartError = error instanceof Error ? error : new Error(String(error));
      throw new PipeUnavailable("start_failed", `it failed to start: ${this.lastStartError.message}`);
    }
    // Never keeps this process alive; the pipeline itself ends when its stdin closes.
    proc.unref();
    const running: Running = {
      proc,
      exchange: null,
      partial: [],
      stderr: "",
      stderrRead: Promise.resolve(),
      dead: false,
      ready: Promise.resolve(),
    };
    void this.readAnswers(running);
    running.stderrRead = this.readErrors(running);
    void proc.exited.then((code) => this.died(running, `it exited (${code})`));
    running.ready = this.exchange(running, [this.options.probe], this.options.startTimeoutMs).then(
      () => {},
      (error: Error) => {
        this.failedStartAt = this.timers.now();
        this.lastStartError = error;
        this.kill(running, error);
        throw new PipeUnavailable("start_failed", `it failed to start: ${error.message}`);
      },
    );
    // A start nobody awaits (everyone timed out) must not be an unhandled rejection.
    running.ready.catch(() => {});
    return running;
  }

  private exchange(
    running: Running,
    segments: readonly string[],
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<string[]> {
    if (running.dead)
      return Promise.reject(new PipeUnavailable("died", this.deathMessage(running, "it is not running")));
    const { promise, resolve, reject } = Promise.withResolvers<string[]>();
    const stop = (error: PipeUnavailable) => this.kill(running, error);
    const cancelTimer = this.timers.after(Math.max(0, timeoutMs), () => stop(timedOut()));
    const onAbort = () => stop(new PipeUnavailable("aborted", "the request was aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => {
      cancelTimer();
      signal?.removeEventListener("abort", onAbort);
      running.exchange = null;
    };
    running.exchange = {
      expected: segments.length,
      answers: [],
      resolve: (answers) => {
        done();
        resolve(answers);
      },
      reject: (error) => {
        done();
        reject(error);
      },
    };
    try {
      running.proc.stdin.write(encoder.encode(segments.map((segment) => `${segment}\u0000`).join("")));
      const flushed = running.proc.stdin.flush();
      if (flushed instanceof Promise) flushed.catch((error) => this.died(running, `writing failed: ${error}`));
    } catch (error) {
      this.died(running, `writing failed: ${error}`);
    }
    return promise;
  }

  private async readAnswers(running: Running): Promise<void> {
    try {
      for await (const chunk of running.proc.stdout) {
        let start = 0;
        for (let nul = chunk.indexOf(0); nul !== -1; nul = chunk.indexOf(0, start)) {
          running.partial.push(chunk.subarray(start, nul));
          this.deliver(running, decoder.decode(concat(running.partial)));
          running.partial = [];
          start = nul + 1;
        }
        if (start < chunk.length) running.partial.push(chunk.slice(start));
      }
    } catch {
      // A killed process's stream may error instead of ending; either way it is dead.
    }
    this.died(running, "its output ended");
  }

  private async readErrors(running: Running): Promise<void> {
    try {
      for await (const chunk of running.proc.stderr) {
        running.stderr = (running.stderr + decoder.decode(chunk)).slice(-STDERR_KEPT);
      }
    } catch {
      // Only kept for error messages.
    }
  }

  private deliver(running: Running, answer: string): void {
    const exchange = running.exchange;
    if (exchange === null) return;
    exchange.answers.push(answer);
    if (exchange.answers.length === exchange.expected) exchange.resolve(exchange.answers);
  }

  /** A process that ended by itself: its exchange fails with what it said on stderr (read for up to 200 ms more). */
  private died(running: Running, what: string): void {
    if (running.dead) return;
    const exchange = running.exchange;
    running.exchange = null;
    this.kill(running, new PipeUnavailable("died", what));
    if (exchange === null) return;
    let cancelTimer = () => {};
    const grace = new Promise<void>((resolve) => {
      cancelTimer = this.timers.after(200, resolve);
    });
    void Promise.race([running.stderrRead, grace]).then(() => {
      cancelTimer();
      exchange.reject(new PipeUnavailable("died", this.deathMessage(running, what)));
    });
  }

  /** The promise, or a rejection once the deadline passes or the signal aborts (the work itself goes on). */
  private withDeadline<T>(promise: Promise<T>, deadline: number, signal?: AbortSignal): Promise<T> {
    const { promise: limit, reject } = Promise.withResolvers<never>();
    const cancelTimer = this.timers.after(Math.max(0, deadline - this.timers.now()), () => reject(timedOut()));
    const onAbort = () => reject(new PipeUnavailable("aborted", "the request was aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    return Promise.race([promise, limit]).finally(() => {
      cancelTimer();
      signal?.removeEventListener("abort", onAbort);
    });
  }

  private deathMessage(running: Running, what: string): string {
    const stderr = running.stderr.trim();
    return stderr === "" ? what : `${what}; stderr: ${stderr}`;
  }

  private kill(running: Running, error: Error): void {
    running.dead = true;
    try {
      process.kill(-running.proc.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
    running.exchange?.reject(error);
  }
}

function timedOut(): PipeUnavailable {
  return new PipeUnavailable("timeout", "no answer in time");
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
