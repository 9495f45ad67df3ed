/** The synonym store on PGlite and PostgreSQL: per catalogue, whole replacements, remembered between reads. */
import { expect, test } from "bun:test";
import { PostgresSynonymStore } from "../../src/adapters/postgres/synonym-store.ts";
import { forEachDatabase } from "../support/test-databases.ts";

forEachDatabase((db) => {
  const open = async () => {
    const client = await db.migrated({ model: "test-model", dimension: 4 });
    return client;
  };

  test("each catalogue keeps its own sets, in their order; a replacement takes the place of them all", async () => {
    const store = new PostgresSynonymStore(await open());
    expect(await store.get("default")).toEqual([]);
    await store.replace("default", [
      ["celular", "móvil", "smartphone"],
      ["tv", "televisor"],
    ]);
    await store.replace("muebles", [["sofá", "sillón"]]);
    expect(await store.get("default")).toEqual([
      ["celular", "móvil", "smartphone"],
      ["tv", "televisor"],
    ]);
    expect(await store.get("muebles")).toEqual([["sofá", "sillón"]]);
    await store.replace("default", [["ordenador", "computadora"]]);
    expect(await store.get("default")).toEqual([["ordenador", "computadora"]]);
    await store.replace("default", []);
    expect(await store.get("default")).toEqual([]);
    expect(await store.get("muebles")).toEqual([["sofá", "sillón"]]);
  });

  test("what another process stored is seen once this one's copy is older than maxAgeMs; its own at once", async () => {
    const client = await open();
    let now = 0;
    const here = new PostgresSynonymStore(client, { maxAgeMs: 2000, now: () => now });
    const elsewhere = new PostgresSynonymStore(await db.another());
    expect(await here.get("default")).toEqual([]);
    await elsewhere.replace("default", [["a", "b"]]);
    now = 1999;
    expect(await here.get("default")).toEqual([]);
    now = 2000;
    expect(await here.get("default")).toEqual([["a", "b"]]);
    await here.replace("default", [["c", "d"]]);
    expect(await here.get("default")).toEqual([["c", "d"]]);
  });
});
