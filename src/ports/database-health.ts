export interface DatabaseHealth {
  /** Resolves after a real round trip to the database; rejects when it does not answer. */
  ping(): Promise<void>;
}
