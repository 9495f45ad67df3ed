import type { Clock } from "../../src/ports/clock.ts";

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  constructor(private current = Date.UTC(2025, 0, 1)) {}

  now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
