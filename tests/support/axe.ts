/**
 * axe-core (Deque's accessibility rules engine, the one browsers' own audits build on) run inside a
 * page the tests drive in Chromium (chromium.ts). Its source goes in through the DevTools protocol
 * (page.evaluate), which the page's Content-Security-Policy does not govern, so the page is audited
 * exactly as it is served.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(fileURLToPath(import.meta.resolve("axe-core/axe.min.js")), "utf8");

export interface AxeViolation {
  /** The rule broken, e.g. `label-content-name-mismatch`. */
  rule: string;
  impact: string | null;
  help: string;
  /** CSS selectors of the elements that break it. */
  elements: string[];
}

/** The violations axe finds in the page as it is now whose impact is serious or critical. */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(`
    axe.run(document, { resultTypes: ["violations"] }).then((results) =>
      results.violations.map((violation) => ({
        rule: violation.id,
        impact: violation.impact,
        help: violation.help,
        elements: violation.nodes.map((node) => node.target.join(" ")),
      })),
    )`)) as AxeViolation[];
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
}
