import type { VectorIndex, VectorIndexAvailability, VectorIndexStatus } from "../../src/ports/vector-index.ts";

/**
 * A VectorIndex in memory: a catalogue size and a write counter the test moves, and a record of
 * builds. `failNext` makes the next call fail as a database would; `holdBuilds` keeps builds
 * running until `releaseBuilds` (a build that takes minutes).
 */
export class FakeVectorIndex implements VectorIndex {
  rows = 0;
  writes = 0;
  present = false;
  valid = false;
  /** An index of another kind is there too (the kind setting changed): a build replaces it. */
  outdated = false;
  builds = 0;
  failNext: Error | undefined;
  /** Another process holds the build lock: build() answers false. */
  lockedElsewhere = false;
  private held: PromiseWithResolvers<void> | undefined;

  constructor(readonly availability: VectorIndexAvailability = "automatic") {}

  /** The catalogue gains `n` products (n writes). */
  write(n: number): void {
    this.rows += n;
    this.writes += n;
  }

  holdBuilds(): void {
    this.held = Promise.withResolvers<void>();
  }

  releaseBuilds(): void {
    this.held?.resolve();
    this.held = undefined;
  }

  async status(): Promise<VectorIndexStatus> {
    this.maybeFail();
    const none = this.availability === "none";
    return {
      kind: none ? undefined : "vector",
      column: none ? undefined : "embedding",
      availability: this.availability,
      present: this.present,
      valid: this.valid,
      outdated: this.outdated,
      bytes: this.present ? this.rows * 100 : 0,
      estimatedRows: this.rows,
      progress: undefined,
    };
  }

  async build(): Promise<boolean> {
    this.maybeFail();
    if (this.availability === "none" || this.lockedElsewhere) return false;
    if (this.present && this.valid && !this.outdated) return false;
    await this.held?.promise;
    this.builds++;
    this.present = true;
    this.valid = true;
    this.outdated = false;
    return true;
  }

  async drop(): Promise<boolean> {
    const was = this.present || this.outdated;
    this.present = this.valid = this.outdated = false;
    return was;
  }

  async writeCount(): Promise<number> {
    this.maybeFail();
    return this.writes;
  }

  async hasAtLeast(n: number): Promise<boolean> {
    this.maybeFail();
    return this.rows >= n;
  }

  private maybeFail(): void {
    const error = this.failNext;
    this.failNext = undefined;
    if (error) throw error;
  }
}
