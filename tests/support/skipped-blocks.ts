import { afterAll, beforeAll } from "bun:test";

type Hook = () => unknown;

/**
 * The beforeAll and afterAll of tests that `describe.skipIf(skipped)` or `test.skipIf(skipped)`
 * may skip, registered only when they run: Bun (1.4.5) lists each such hook of a skipped describe
 * block as one more skipped test named "(unnamed)" (oven-sh/bun#35502). The tests themselves are
 * still listed as skipped.
 */
export function blockHooks(skipped: boolean, hooks: { beforeAll?: Hook; afterAll?: Hook; timeout?: number }): void {
  if (skipped) return;
  if (hooks.beforeAll) beforeAll(hooks.beforeAll, hooks.timeout);
  if (hooks.afterAll) afterAll(hooks.afterAll);
}
