/**
 * GET /products/search as a standard EventSource client reads it: the `eventsource` package (the
 * WHATWG algorithm, on fetch) against the app listening on loopback. It gets every event, and when
 * the stream ends it reconnects once, as EventSource always does, gets 204 and stops: one search
 * per stream, never a reconnect storm. (tests/ui/event-source.test.ts does the same with
 * Chromium's own EventSource.)
 */
import { afterEach, describe, expect, test } from "bun:test";
import { EventSource } from "eventsource";
import { create, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness, type Harness } from "../harness.ts";

/** Short, so that the one reconnect after the end comes at once. */
const RECONNECT_MS = 20;

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function listening(h: Harness): Promise<string> {
  const server = h.app.listen({ hostname: "127.0.0.1", port: 0, reusePort: false });
  stop = async () => void (await h.app.stop());
  return `http://127.0.0.1:${server.server?.port}`;
}

/** How many searches the service ran: each embeds its query once. */
const searchesRun = (h: Harness) => h.embedder.calls.filter((call) => call.purpose === "query").length;

interface Received {
  type: string;
  id: string;
  data: unknown;
}

/**
 * Opens an EventSource on `url` (with the token, as the package's `fetch` option allows) and
 * resolves once it has closed itself: what it received, and the statuses of the requests it made.
 */
function readUntilClosed(url: string, token: string, names: readonly string[]) {
  const statuses: number[] = [];
  const lastEventIds: (string | null)[] = [];
  const received: Received[] = [];
  const closed = Promise.withResolvers<void>();
  const source = new EventSource(url, {
    fetch: async (input, init) => {
      const headers = new Headers(init.headers);
      headers.set("Authorization", `Bearer ${token}`);
      lastEventIds.push(headers.get("last-event-id"));
      const response = await fetch(input, { ...init, headers });
      statuses.push(response.status);
      return response;
    },
  });
  for (const name of names) {
    source.addEventListener(name, (event) => {
      received.push({ type: event.type, id: event.lastEventId, data: JSON.parse(event.data) });
    });
  }
  // The package's (and the browser's) own `error`: a connection that failed, or the 204 that ends it.
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) closed.resolve();
  });
  return closed.promise.then(() => ({ received, statuses, lastEventIds, readyState: source.readyState }));
}

describe("the eventsource package reads GET /products/search", () => {
  test("results, deltas and done, each with its id; then one reconnect answered 204, and it stops", async () => {
    const h = await createHarness({ settings: { eventStreamReconnectMs: RECONNECT_MS } });
    for (const product of [LAPTOP, MOUSE]) await create(h, product);
    h.generator.write = ({ products }) => `Le recomiendo ${products[0]?.name} [#${products[0]?.id}].`;
    const base = await listening(h);

    const { received, statuses, lastEventIds, readyState } = await readUntilClosed(
      `${base}/products/search?query=laptop&limit=2`,
      h.token,
      ["results", "delta", "reset", "done", "failure"],
    );
    expect(readyState).toBe(EventSource.CLOSED);
    expect(received[0]?.type).toBe("results");
    expect(received[0]?.data).toMatchObject({ results: [{ id: 1 }, { id: 2 }] });
    expect(received.at(-1)).toMatchObject({ type: "done", data: { cited_ids: [1], provider: "FAKE" } });
    const streamId = received[0]?.id.split(":")[0];
    expect(received.map((event) => event.id)).toEqual([
      ...received.slice(0, -1).map((_, i) => `${streamId}:${i + 1}`),
      `${streamId}:end`,
    ]);
    // One search; the reconnect carried the last id and got 204.
    expect(statuses).toEqual([200, 204]);
    expect(lastEventIds).toEqual([null, `${streamId}:end`]);
    expect(searchesRun(h)).toBe(1);
  });

  test("a recommendation that fails after the results ends with `failure`, which EventSource delivers as data", async () => {
    const h = await createHarness({ settings: { eventStreamReconnectMs: RECONNECT_MS } });
    await create(h, LAPTOP);
    h.generator.fail = true;
    const base = await listening(h);

    const { received, statuses } = await readUntilClosed(`${base}/products/search?query=laptop`, h.token, [
      "results",
      "failure",
    ]);
    expect(received.map((event) => event.type)).toEqual(["results", "failure"]);
    expect(received[1]?.data).toEqual({ detail: "Ningún proveedor pudo generar la recomendación", status: 503 });
    expect(received[1]?.id).toEndWith(":end");
    expect(statuses).toEqual([200, 204]);
    expect(searchesRun(h)).toBe(1);
  });
});
