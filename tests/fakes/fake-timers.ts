import type { Timers } from "../../src/ports/timers.ts";

interface Scheduled {
  /** The length asked for. */
  ms: number;
  due: number;
  /** Ties on `due` fire in the order they were set. */
  order: number;
  fire: () => void;
}

/**
 * Timers on a clock that only moves when the test says so (`advance`, `elapse`), or, with
 * `sleepsEndAtOnce`, when the code under test sleeps. So a test asserts which waits and time limits
 * were asked for and what happens when they run out, never how long anything took: the outcome
 * is the same on an idle machine and on a loaded one.
 *
 * When the clock passes a timer's due time, the timer fires (in due order), and each firing is
 * followed by one turn of the event loop, so that the promise reactions it sets off run before the
 * next one fires. A timer of 0 ms or less fires on the next turn, as setTimeout's does.
 */
export class FakeTimers implements Timers {
  /** Every sleep asked for, in ms, in order (those aborted too). */
  readonly sleeps: number[] = [];
  private current = 0;
  private order = 0;
  private readonly scheduled = new Set<Scheduled>();
  private readonly watchers = new Set<() => void>();
  private sleepsTaken = 0;

  constructor(
    private readonly options: {
      /** A sleep moves the clock on by its length at once (firing the time limits due meanwhile), then ends. */
      sleepsEndAtOnce?: boolean;
    } = {},
  ) {}

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.notify();
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.options.sleepsEndAtOnce) return this.advance(ms);
    return new Promise((resolve, reject) => {
      const stop = () => {
        cancel();
        reject(signal?.reason);
      };
      const cancel = this.schedule(ms, () => {
        signal?.removeEventListener("abort", stop);
        resolve();
      });
      signal?.addEventListener("abort", stop, { once: true });
    });
  }

  after(ms: number, expire: () => void): () => void {
    return this.schedule(ms, expire);
  }

  timeout(ms: number): AbortSignal {
    const controller = new AbortController();
    this.schedule(ms, () => controller.abort(new DOMException("The operation timed out.", "TimeoutError")));
    return controller.signal;
  }

  /** Moves the clock on by `ms`, firing every timer that falls due meanwhile. */
  async advance(ms: number): Promise<void> {
    const until = this.current + ms;
    for (let next = this.nextDue(until); next !== undefined; next = this.nextDue(until)) {
      this.scheduled.delete(next);
      this.current = Math.max(this.current, next.due);
      next.fire();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.current = Math.max(this.current, until);
  }

  /** Moves the clock on to the due time of the next timer set, firing it (and any due at the same time). */
  async advanceToNext(): Promise<void> {
    const next = this.nextDue(Number.POSITIVE_INFINITY);
    if (next !== undefined) await this.advance(next.due - this.current);
  }

  /**
   * Waits until a timer of `ms` (as asked: a sleep or a time limit) is set and still set once the
   * code running now has settled (a turn of the event loop: a limit on a wait that was about to end
   * is cancelled by then), then moves the clock on to its due time, firing it and whatever falls
   * due before.
   */
  async elapse(ms: number): Promise<void> {
    for (;;) {
      await this.until(() => this.find(ms) !== undefined);
      await new Promise((resolve) => setImmediate(resolve));
      const timer = this.find(ms);
      if (timer !== undefined) return this.advance(timer.due - this.current);
    }
  }

  /** The length of the next sleep asked for: each call answers the one after the last it answered, waiting for it if need be. */
  async nextSleep(): Promise<number> {
    await this.until(() => this.sleeps.length > this.sleepsTaken);
    return this.sleeps[this.sleepsTaken++] as number;
  }

  /** The lengths (as asked) of the timers set and neither fired nor cancelled. */
  pending(): number[] {
    return [...this.scheduled].map((timer) => timer.ms);
  }

  private find(ms: number): Scheduled | undefined {
    return [...this.scheduled].find((timer) => timer.ms === ms);
  }

  private schedule(ms: number, fire: () => void): () => void {
    if (ms <= 0) {
      const immediate = setImmediate(fire);
      return () => clearImmediate(immediate);
    }
    const timer: Scheduled = { ms, due: this.current + ms, order: this.order++, fire };
    this.scheduled.add(timer);
    this.notify();
    return () => {
      this.scheduled.delete(timer);
    };
  }

  private nextDue(until: number): Scheduled | undefined {
    let next: Scheduled | undefined;
    for (const timer of this.scheduled) {
      if (timer.due > until) continue;
      if (next === undefined || timer.due < next.due || (timer.due === next.due && timer.order < next.order)) {
        next = timer;
      }
    }
    return next;
  }

  /** Resolves once `condition` holds, checked now and whenever a timer or a sleep is set. */
  private until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!condition()) return;
        this.watchers.delete(check);
        resolve();
      };
      this.watchers.add(check);
    });
  }

  private notify(): void {
    for (const watcher of [...this.watchers]) watcher();
  }
}
