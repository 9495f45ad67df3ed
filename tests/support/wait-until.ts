/**
 * Resolves once `condition` holds, looking every `everyMs`: for a state that nothing announces (a
 * process gone from /proc). It sets no time limit of its own: the test's bounds the wait, so a
 * slow machine makes it longer, never wrong.
 */
export async function waitUntil(condition: () => boolean, everyMs = 10): Promise<void> {
  while (!condition()) await Bun.sleep(everyMs);
}
