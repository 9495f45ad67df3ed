/**
 * Time as the adapters wait on it: retry backoff, time limits, durations. Injected so that tests
 * decide when time passes (tests/fakes/fake-timers.ts) instead of waiting for it, which made them
 * depend on the machine's speed and load. Dates (token expiry, rate-limit windows) are the Clock's.
 */
export interface Timers {
  /** Milliseconds on a clock that never goes back (performance.now): for deadlines and durations. */
  now(): number;
  /** A deliberate wait (a retry's backoff): resolves after `ms`; rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * A time limit: calls `expire` once `ms` have passed, unless the function it returns is called
   * first. Keeps the process alive meanwhile, as setTimeout does.
   */
  after(ms: number, expire: () => void): () => void;
  /**
   * A time limit as a signal, aborted with a TimeoutError after `ms`. Like AbortSignal.timeout, it
   * cannot be cancelled and never keeps the process alive.
   */
  timeout(ms: number): AbortSignal;
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", stop);
        resolve();
      }, ms);
      const stop = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", stop, { once: true });
    }),
  after: (ms, expire) => {
    const timer = setTimeout(expire, ms);
    return () => clearTimeout(timer);
  },
  timeout: (ms) => AbortSignal.timeout(ms),
};

/**
 * `promise`'s value, or undefined once `ms` have passed without it. The time limit is cancelled
 * either way: left running (as `Promise.race` with a sleep leaves it), it kept the process alive
 * to its end (a command ended 10 s after its answer).
 */
export async function withinMs<T>(timers: Timers, ms: number, promise: Promise<T>): Promise<T | undefined> {
  let cancel = () => {};
  const expired = new Promise<undefined>((resolve) => {
    cancel = timers.after(ms, () => resolve(undefined));
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    cancel();
  }
}
