/** One client's count in its current window. */
export interface WindowCount {
  /** Hits counted in the window so far, this request's included when it was counted. */
  hits: number;
  /** Milliseconds until the window ends and the count starts again from zero. */
  resetMs: number;
  /** False when this request's hits were not counted: they would have taken the window past its limit. */
  counted: boolean;
}

/**
 * Counts requests per key in fixed windows. A key's window begins at its first hit after the
 * previous window ended and lasts `windowMs`. Several processes sharing one store count together.
 */
export interface RateLimitCounters {
  /**
   * Counts `cost` hits (default 1) of `key`, unless they would take its window past `limit`: then
   * nothing is counted (`counted: false`), so a refused request spends nothing. Atomic: requests
   * sent at once are each counted once, and never past the limit. No limit: always counted.
   */
  hit(key: string, windowMs: number, cost?: number, limit?: number): Promise<WindowCount>;
}
