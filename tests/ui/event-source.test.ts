/**
 * Chromium's own EventSource on GET /products/search (a service whose search is open to anyone:
 * EventSource cannot send a token), from a page of the service itself (/ui, whose CSP lets it
 * connect to its own origin). A page load opens one stream: it receives every event, the browser
 * reconnects once after the end (EventSource always does), gets 204 and closes for good; the
 * service ran one search, never a reconnect storm. Skipped, saying so, without Chromium (tests/support/chromium.ts).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { EventSource as EventSourceType } from "eventsource";
import type { Browser } from "playwright-core";
import { create, LAPTOP, MOUSE } from "../adapters/http/catalogue-fixtures.ts";
import { createHarness, type Harness } from "../adapters/http/harness.ts";
import { CHROMIUM_PATH, hasChromium, launchChromium } from "../support/chromium.ts";
import { blockHooks } from "../support/skipped-blocks.ts";

setDefaultTimeout(30_000);

if (!hasChromium) {
  console.warn(`tests/ui/event-source.test.ts: SKIPPED, ${CHROMIUM_PATH} is missing (install it with .ci/chromium.sh)`);
}

/** What the page's EventSource saw until it closed itself. */
interface Seen {
  events: { type: string; id: string; data: string }[];
  /** EventSource's own `error` events (a connection that failed, or the 204 that ends it). */
  errors: number;
  readyState: number;
}

/**
 * Runs in the page: opens an EventSource on `url` and resolves once the browser has closed it.
 * (Typed as the eventsource package's class, the browser's interface: Bun's types have none.)
 */
function readUntilClosed(url: string): Promise<Seen> {
  const BrowserEventSource = (globalThis as unknown as { EventSource: typeof EventSourceType }).EventSource;
  return new Promise((resolve) => {
    const source = new BrowserEventSource(url);
    const seen: Seen = { events: [], errors: 0, readyState: source.readyState };
    for (const name of ["results", "delta", "reset", "done", "failure"]) {
      source.addEventListener(name, (event) => {
        const { type, lastEventId, data } = event as MessageEvent<string>;
        seen.events.push({ type, id: lastEventId, data });
      });
    }
    source.addEventListener("error", () => {
      seen.errors++;
      if (source.readyState === BrowserEventSource.CLOSED) resolve({ ...seen, readyState: source.readyState });
    });
  });
}

describe.skipIf(!hasChromium)("Chromium's EventSource on GET /products/search", () => {
  let h: Harness;
  let browser: Browser;
  let base = "";

  blockHooks(!hasChromium, {
    async beforeAll() {
      // A short retry: the one reconnect after the end comes at once.
      h = await createHarness({ settings: { searchRequiresAuth: false, eventStreamReconnectMs: 50 } });
      for (const product of [LAPTOP, MOUSE]) await create(h, product);
      const server = h.app.listen({ hostname: "127.0.0.1", port: 0, reusePort: false });
      base = `http://127.0.0.1:${server.server?.port}`;
      browser = await launchChromium();
    },
    async afterAll() {
      await browser?.close();
      await h?.app.stop();
    },
  });

  test("one page load: every event with its id, one reconnect answered 204, closed, one search", async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    await page.goto(`${base}/ui`);
    const searchesBefore = h.embedder.calls.filter((call) => call.purpose === "query").length;

    const seen = await page.evaluate(readUntilClosed, "/products/search?query=laptop&limit=2");

    expect(seen.readyState).toBe(2); // EventSource.CLOSED
    expect(seen.events.map((event) => event.type)).toEqual([
      "results",
      ...Array(seen.events.length - 2).fill("delta"),
      "done",
    ]);
    expect(JSON.parse(seen.events[0]?.data ?? "null").results).toHaveLength(2);
    expect(seen.events.at(-1)?.id).toEndWith(":end");
    // The browser's own error events: the end of the stream (it then reconnects) and the 204 (it then
    // closes). The service ran one search for the page load.
    expect(seen.errors).toBe(2);
    expect(h.embedder.calls.filter((call) => call.purpose === "query").length - searchesBefore).toBe(1);
    const searches = requests.filter((url) => url.includes("/products/search"));
    expect(searches).toHaveLength(2);
    const answered = h.logs.filter((line) => line.event === "request" && line.route === "/products/search");
    expect(answered.map((line) => line.status)).toEqual([200, 204]);
    await page.close();
  });
});
