/**
 * Debian's Chromium driven by playwright-core (no browser download: none can work here). Used by
 * the page tests (tests/ui/) and by scripts/screenshots.ts. `.ci/chromium.sh` installs it.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/**
 * Debian's `chromium-headless-shell` (the same Blink as `chromium`, without the desktop browser
 * around it: what Playwright itself runs for headless tests), or else the whole browser. The page
 * tests took 15 s and 19 s of CPU with the shell where they took 26 s and 45 s with `chromium`
 * (side by side, both files, load about 4).
 */
const CANDIDATES = ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"];

export const CHROMIUM_PATH = CANDIDATES.find((path) => existsSync(path)) ?? (CANDIDATES[0] as string);

/** Is Chromium installed? The page tests are skipped, saying so, when it is not. */
export const hasChromium = existsSync(CHROMIUM_PATH);

/**
 * Headless, and quiet on the network: without the background-networking flags Chromium keeps
 * trying to reach Google's services, which this machine's closed network refuses. Playwright gives
 * each launch an empty profile (--user-data-dir) of its own.
 */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: FLAGS });
}
