/** One client's count in its current window. */
export interface WindowCount {
  /** Hits counted in the window so far, this one included. */
  hits: number;
  /** Milliseconds until the window ends and the count starts again from zero. */
  resetMs: number;
}

/**
 * Counts requests per key in fixed windows. A key's window begins at its first hit after the
 * previous window ended and lasts `windowMs`. Several processes sharing one store count together.
 */
export interface RateLimitCounters {
  hit(key: string, windowMs: number): Promise<WindowCount>;
}
