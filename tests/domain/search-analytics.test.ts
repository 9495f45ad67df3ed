import { describe, expect, test } from "bun:test";
import { InvalidInput } from "../../src/domain/errors.ts";
import { SearchAnalytics } from "../../src/domain/search-analytics.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { MemorySearchAnalytics } from "../fakes/memory-search-analytics.ts";

const ID = "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e";
const DAY = 86_400_000;

function analytics(retentionDays = 30) {
  const store = new MemorySearchAnalytics();
  const clock = new FakeClock();
  const logged: Record<string, unknown>[] = [];
  const use = new SearchAnalytics({ store, clock, retentionDays, log: (event) => logged.push(event) });
  return { store, clock, logged, use };
}

describe("SearchAnalytics", () => {
  test("keeps each search's query in lower case with its spaces collapsed, and nothing about who searched", () => {
    const { store, clock, use } = analytics();
    use.searched({
      searchId: ID,
      catalogue: "default",
      query: "  Zapatillas   DE correr ",
      mode: "hybrid",
      results: 3,
    });
    expect(store.searches).toEqual([
      {
        searchId: ID,
        catalogue: "default",
        query: "zapatillas de correr",
        mode: "hybrid",
        results: 3,
        at: new Date(clock.now()),
      },
    ]);
  });

  test("a click or conversion is kept and logged by its type alone; a bad search id, product id or type is InvalidInput", () => {
    const { store, logged, use } = analytics();
    use.event({ catalogue: "default", searchId: ID.toUpperCase(), productId: 7, type: "click" });
    expect(store.events).toMatchObject([{ catalogue: "default", searchId: ID, productId: 7, type: "click" }]);
    expect(logged).toEqual([{ event: "search_event_recorded", type: "click" }]);
    expect(() => use.event({ catalogue: "default", searchId: "abc", productId: 7, type: "click" })).toThrow(
      InvalidInput,
    );
    expect(() => use.event({ catalogue: "default", searchId: ID, productId: 0, type: "click" })).toThrow(InvalidInput);
    expect(() => use.event({ catalogue: "default", searchId: ID, productId: 7, type: "like" })).toThrow(InvalidInput);
    expect(store.events).toHaveLength(1);
  });

  test("the report covers the last `days` days, at most the retention; a retention of 0 keeps nothing", async () => {
    const { store, clock, use } = analytics(30);
    use.searched({ searchId: ID, catalogue: "default", query: "taza", mode: "semantic", results: 0 });
    clock.advance(2 * DAY);
    expect((await use.report("default", 1)).searches).toBe(0);
    expect(await use.report("default", 3)).toMatchObject({ days: 3, searches: 1, noResultSearches: 1 });
    await expect(use.report("default", 31)).rejects.toBeInstanceOf(InvalidInput);
    await expect(use.report("default", 0)).rejects.toBeInstanceOf(InvalidInput);
    const off = analytics(0);
    off.use.searched({ searchId: ID, catalogue: "default", query: "taza", mode: "semantic", results: 0 });
    off.use.event({ catalogue: "default", searchId: ID, productId: 1, type: "click" });
    expect(off.store.searches).toEqual([]);
    expect(off.store.events).toEqual([]);
    expect((await off.use.report("default", 1)).searches).toBe(0);
    expect(store.searches).toHaveLength(1);
  });
});
