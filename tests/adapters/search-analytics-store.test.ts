/** The search analytics store on PGlite and PostgreSQL: written behind, reported per query, pruned. */
import { expect, test } from "bun:test";
import { PostgresSearchAnalytics } from "../../src/adapters/postgres/search-analytics-store.ts";
import type { SearchRecord } from "../../src/ports/search-analytics.ts";
import { forEachDatabase } from "../support/test-databases.ts";

const DAY = 86_400_000;
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

forEachDatabase((db) => {
  const open = async (options: { maxBatch?: number; pruneEvery?: number } = {}) => {
    const client = await db.migrated({ model: "test-model", dimension: 4 });
    const logged: Record<string, unknown>[] = [];
    const store = new PostgresSearchAnalytics(client, {
      retentionDays: 30,
      flushDelayMs: 60_000,
      log: (event) => logged.push(event),
      ...options,
    });
    return { client, store, logged };
  };
  const search = (n: number, query: string, results: number, at = new Date()): SearchRecord => ({
    searchId: id(n),
    catalogue: "default",
    query,
    mode: "hybrid",
    results,
    at,
  });

  test("records wait to be stored together, then report per query: searches, no results, clicked searches", async () => {
    const { client, store } = await open();
    store.recordSearch(search(1, "taza", 3));
    store.recordSearch(search(2, "taza", 3));
    store.recordSearch(search(3, "patinete", 0));
    store.recordSearch({ ...search(4, "taza", 2), catalogue: "otro" });
    store.recordEvent({ catalogue: "default", searchId: id(1), productId: 7, type: "click", at: new Date() });
    store.recordEvent({ catalogue: "default", searchId: id(1), productId: 8, type: "click", at: new Date() });
    store.recordEvent({ catalogue: "default", searchId: id(1), productId: 7, type: "conversion", at: new Date() });
    // Reported in another catalogue (by a credential of that one): it counts for neither.
    store.recordEvent({ catalogue: "otro", searchId: id(1), productId: 9, type: "click", at: new Date() });
    store.recordEvent({ catalogue: "otro", searchId: id(2), productId: 9, type: "conversion", at: new Date() });
    // Nothing is written on the answer's path: it waits for the flush (its timer, or a full batch).
    const [before] = await client.query<{ n: number | string }>("SELECT count(*) AS n FROM searches");
    expect(Number(before?.n)).toBe(0);
    await store.flush();
    const report = await store.report("default", new Date(Date.now() - DAY), 10);
    expect(report).toEqual({
      searches: 3,
      noResultSearches: 1,
      clickedSearches: 1,
      clicks: 2,
      conversions: 1,
      topQueries: [
        { query: "taza", searches: 2, noResults: 0, clickedSearches: 1, clicks: 2, conversions: 1 },
        { query: "patinete", searches: 1, noResults: 1, clickedSearches: 0, clicks: 0, conversions: 0 },
      ],
      noResultQueries: [
        { query: "patinete", searches: 1, noResults: 1, clickedSearches: 0, clicks: 0, conversions: 0 },
      ],
    });
    expect(await store.report("otro", new Date(Date.now() - DAY), 10)).toMatchObject({
      searches: 1,
      clicks: 0,
      conversions: 0,
    });
    // Older searches than asked for are left out; the limit bounds each list.
    expect((await store.report("default", new Date(Date.now() + DAY), 10)).searches).toBe(0);
    expect((await store.report("default", new Date(Date.now() - DAY), 1)).topQueries).toHaveLength(1);
  });

  test("a full batch is stored without waiting for the timer; records past the retention are pruned", async () => {
    const { client, store } = await open({ maxBatch: 3, pruneEvery: 1 });
    store.recordSearch(search(1, "vieja", 1, new Date(Date.now() - 40 * DAY)));
    store.recordEvent({
      catalogue: "default",
      searchId: id(1),
      productId: 1,
      type: "click",
      at: new Date(Date.now() - 40 * DAY),
    });
    store.recordSearch(search(2, "nueva", 1));
    // The third record fills the batch: stored at once (and, stored, it prunes in the background).
    await store.close();
    const rows = await client.query<{ query: string }>("SELECT query FROM searches ORDER BY query");
    expect(rows.map((row) => row.query)).toEqual(["nueva"]);
    const [events] = await client.query<{ n: number | string }>("SELECT count(*) AS n FROM search_events");
    expect(Number(events?.n)).toBe(0);
  });

  test("a failed store is logged and its records dropped, never thrown at a search", async () => {
    const { client, store, logged } = await open();
    await client.query("DROP TABLE search_events");
    store.recordSearch(search(1, "taza", 1));
    store.recordEvent({ catalogue: "default", searchId: id(1), productId: 1, type: "click", at: new Date() });
    await store.flush();
    expect(logged).toMatchObject([{ event: "analytics_failed", operation: "record", searches: 1, events: 1 }]);
  });
});
