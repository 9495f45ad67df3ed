import { describe, expect, test } from "bun:test";
import { CachingEmbedder, normalizeQuery } from "../../../src/adapters/cache/caching-embedder.ts";
import { LruCache } from "../../../src/lib/lru-cache.ts";
import type { QueryEmbeddingCache } from "../../../src/ports/query-embedding-cache.ts";
import { FakeEmbedder } from "../../fakes/fake-embedder.ts";
import { MemoryQueryEmbeddingCache } from "../../fakes/memory-query-embedding-cache.ts";

function setup(memoryEntries = 10) {
  const embedder = new FakeEmbedder(8);
  const shared = new MemoryQueryEmbeddingCache();
  const events: Record<string, unknown>[] = [];
  const caching = new CachingEmbedder(embedder, { memoryEntries, shared, log: (event) => events.push(event) });
  return { embedder, shared, events, caching };
}

describe("CachingEmbedder", () => {
  test("a repeated query, however spaced or cased, is embedded once", async () => {
    const { embedder, caching } = setup();
    const first = await caching.embed(["Cafetera italiana"], "query");
    const again = await caching.embed(["  cafetera   ITALIANA "], "query");
    expect(again).toEqual(first);
    expect(embedder.calls).toHaveLength(1);
    expect(caching.model).toBe(embedder.model);
    expect(caching.dimension).toBe(embedder.dimension);
  });

  test("another process (or a restart) finds the query in the shared cache", async () => {
    const { embedder, shared, caching } = setup();
    const vector = await caching.embed(["molinillo de café"], "query");
    const restarted = new CachingEmbedder(embedder, { memoryEntries: 10, shared });
    expect(await restarted.embed(["molinillo de café"], "query")).toEqual(vector);
    expect(embedder.calls).toHaveLength(1);
  });

  test("takes as many calls at once, and texts a call, as its embedder (an import embeds that many chunks ahead)", () => {
    const shared = new MemoryQueryEmbeddingCache();
    const remote = Object.assign(new FakeEmbedder(4), { callsAtOnce: 4, textsPerCall: 512 });
    expect(new CachingEmbedder(remote, { memoryEntries: 10, shared })).toMatchObject({
      callsAtOnce: 4,
      textsPerCall: 512,
    });
    expect(new CachingEmbedder(new FakeEmbedder(4), { memoryEntries: 10, shared }).callsAtOnce).toBeUndefined();
  });

  test("documents are never cached", async () => {
    const { embedder, shared, caching } = setup();
    await caching.embed(["Taza"], "document");
    await caching.embed(["Taza"], "document");
    expect(embedder.calls).toHaveLength(2);
    expect(shared.size).toBe(0);
  });

  test("only the texts not cached are sent, and the answer keeps the input order", async () => {
    const { embedder, caching } = setup();
    const [b] = await caching.embed(["bravo"], "query");
    const answer = await caching.embed(["alfa", "bravo", "charlie"], "query");
    expect(embedder.calls.map((call) => call.text)).toEqual(["bravo", "alfa", "charlie"]);
    expect(answer[1]).toEqual(b as number[]);
    expect(answer).toEqual(await new FakeEmbedder(8).embed(["alfa", "bravo", "charlie"], "query"));
  });

  test("an unusable vector is returned, for the use case to reject, and never cached", async () => {
    const { embedder, shared, caching } = setup();
    embedder.mode = "zero";
    expect(await caching.embed(["vacío"], "query")).toEqual([new Array(8).fill(0)]);
    expect(shared.size).toBe(0);
    embedder.mode = "ok";
    await caching.embed(["vacío"], "query");
    expect(embedder.calls).toHaveLength(2);
  });

  test("a failing embedder fails the call and caches nothing", async () => {
    const { embedder, shared, caching } = setup();
    embedder.mode = "fail";
    await expect(caching.embed(["algo"], "query")).rejects.toThrow("provider down");
    expect(shared.size).toBe(0);
  });

  test("a shared cache that is down is skipped and logged; the query is still answered", async () => {
    const { embedder, shared, events, caching } = setup();
    shared.down = true;
    expect(await caching.embed(["lámpara"], "query")).toHaveLength(1);
    expect(events.map((event) => [event.event, event.operation ?? event.result])).toEqual([
      ["query_cache_failed", "get"],
      ["query_cache", "miss"],
    ]);
    expect(shared.lostPuts).toBe(1);
    // It is remembered in memory all the same.
    await caching.embed(["lámpara"], "query");
    expect(embedder.calls).toHaveLength(1);
  });

  test("each query looked up is logged as a hit (memory or database) or a miss, never with its text", async () => {
    const { shared, events, caching } = setup();
    await caching.embed(["Silla de oficina", "mesa"], "query");
    await caching.embed(["silla de oficina"], "query");
    await new CachingEmbedder(new FakeEmbedder(8), {
      memoryEntries: 10,
      shared,
      log: (event) => events.push(event),
    }).embed(["mesa"], "query");
    await caching.embed(["Silla"], "document");
    expect(events).toEqual([
      { event: "query_cache", result: "miss" },
      { event: "query_cache", result: "miss" },
      { event: "query_cache", result: "hit", layer: "memory" },
      { event: "query_cache", result: "hit", layer: "database" },
    ]);
  });

  test("the answer never waits for the shared cache to store the new vector", async () => {
    const embedder = new FakeEmbedder(8);
    const stored: string[] = [];
    // A shared cache whose store never finishes (a database that hangs).
    const hanging: QueryEmbeddingCache = {
      get: async () => null,
      put: (key) => {
        stored.push(key.text);
        return new Promise<void>(() => {});
      },
      flush: () => new Promise(() => {}),
    };
    const caching = new CachingEmbedder(embedder, { memoryEntries: 10, shared: hanging });
    expect(await caching.embed(["Tetera"], "query")).toHaveLength(1);
    expect(stored).toEqual(["tetera"]);
    // The next identical query is answered from memory.
    await caching.embed(["tetera"], "query");
    expect(embedder.calls).toHaveLength(1);
  });

  test("with no memory entries, every repeat goes to the shared cache", async () => {
    const { embedder, shared } = setup();
    const caching = new CachingEmbedder(embedder, { memoryEntries: 0, shared });
    await caching.embed(["silla"], "query");
    shared.down = true;
    await caching.embed(["silla"], "query");
    expect(embedder.calls).toHaveLength(2);
  });
});

describe("LruCache", () => {
  test("forgets the least recently used entry beyond its capacity", () => {
    const cache = new LruCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.get("a")).toBe(1); // a is now the most recent
    cache.set("c", 3);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe(1);
    expect(cache.get("c")).toBe(3);
    expect(cache.size).toBe(2);
  });
});

test("normalizeQuery joins whitespace, trims, lower-cases and composes accents", () => {
  expect(normalizeQuery("  Café\t con\n LECHE ")).toBe("café con leche");
  expect(normalizeQuery("cafe\u0301")).toBe(normalizeQuery("café"));
});
