/**
 * `index build`'s progress lines on a server (commands/vector-index.ts), on fake timers: which
 * waits the command asks for and what it prints when they run out, never how long anything took.
 */
import { describe, expect, test } from "bun:test";
import { PROGRESS_EVERY_MS, reportProgress } from "../../src/app/commands/vector-index.ts";
import type { VectorIndexBuildProgress, VectorIndexStatus } from "../../src/ports/vector-index.ts";
import { FakeTimers } from "../fakes/fake-timers.ts";

/** An index whose status reports `progress` (a build under way), and the lines the command wrote to stderr. */
function building(progress: VectorIndexBuildProgress | undefined) {
  const lines: string[] = [];
  let looks = 0;
  const index = {
    status: async () => {
      looks++;
      return { progress } as VectorIndexStatus;
    },
  };
  const output = { out: () => {}, err: (text: string) => lines.push(text) };
  return { index, output, lines, looks: () => looks };
}

describe("index build's progress", () => {
  test("a line every 10 s from the database's report while the build runs; once it ends, no wait is left to keep the process up", async () => {
    const timers = new FakeTimers();
    const build = Promise.withResolvers<boolean>();
    const { index, output, lines, looks } = building({
      phase: "building index: loading tuples",
      fraction: 0.42,
      tuplesDone: 420,
    });
    const reporting = reportProgress(index, build.promise, output, { started: timers.now(), timers });

    await timers.advance(PROGRESS_EVERY_MS - 1);
    expect(lines).toEqual([]);
    await timers.advance(1);
    expect(lines).toEqual(["building: 42 % (building index: loading tuples, 420 products in the graph), 10.0 s\n"]);
    await timers.advance(PROGRESS_EVERY_MS);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEndWith("20.0 s\n");

    build.resolve(true);
    await reporting;
    // The wait begun after the second line ended with the build, not 10 s later.
    expect(timers.pending()).toEqual([]);
    expect(looks()).toBe(2);
  });

  test("a build that ends before the first line prints nothing, asks the database nothing and leaves no wait", async () => {
    const timers = new FakeTimers();
    const { index, output, lines, looks } = building(undefined);
    await reportProgress(index, Promise.resolve(true), output, { started: timers.now(), timers });
    expect(lines).toEqual([]);
    expect(looks()).toBe(0);
    expect(timers.pending()).toEqual([]);
  });

  test("a failed build ends the reporting too (the command then says why), and a status without progress prints nothing", async () => {
    const timers = new FakeTimers();
    const build = Promise.withResolvers<boolean>();
    const { index, output, lines, looks } = building(undefined);
    const reporting = reportProgress(index, build.promise, output, { started: timers.now(), timers });
    await timers.advance(PROGRESS_EVERY_MS);
    expect(looks()).toBe(1);
    expect(lines).toEqual([]);
    build.reject(new Error("the build failed"));
    await reporting;
    expect(timers.pending()).toEqual([]);
  });
});
