import { describe, expect, test } from "bun:test";
import { userCaller } from "../../src/domain/caller.ts";
import { EmbedStaleProducts } from "../../src/domain/embed-stale-products.ts";
import {
  CatalogueExists,
  CatalogueNotFound,
  CatalogueProtected,
  Forbidden,
  InvalidInput,
} from "../../src/domain/errors.ts";
import { ManageCatalogues } from "../../src/domain/manage-catalogues.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

function setup() {
  const store = new MemoryProductRepository();
  const clock = new FakeClock();
  const lookups: string[] = [];
  const exists = store.exists.bind(store);
  store.exists = async (name) => {
    lookups.push(name);
    return exists(name);
  };
  return {
    store,
    clock,
    lookups,
    manage: new ManageCatalogues({
      catalogues: store,
      staleProducts: new EmbedStaleProducts({ products: store, embedder: new FakeEmbedder(4) }),
      clock,
    }),
  };
}

const admin = userCaller({ id: 1, role: "admin" });
const shopKey = { kind: "key" as const, grants: "*" as const, catalogues: ["tienda-norte"], id: "key:abc" };

describe("ManageCatalogues", () => {
  test("creates an empty catalogue with a valid name; a taken name is CatalogueExists", async () => {
    const { manage } = setup();
    expect(await manage.create("tienda-norte")).toMatchObject({ name: "tienda-norte", products: 0 });
    await expect(manage.create("tienda-norte")).rejects.toBeInstanceOf(CatalogueExists);
    await expect(manage.create("default")).rejects.toBeInstanceOf(CatalogueExists);
    expect((await manage.list()).map((catalogue) => catalogue.name)).toEqual(["default", "tienda-norte"]);
  });

  test("names follow the rule: lower case, digits, _ and -, 1 to 63, not starting with _ or -", async () => {
    const { manage } = setup();
    for (const bad of ["", "Tienda", "-x", "_x", "a b", "a/b", "ñandú", "a".repeat(64), "a'; DROP TABLE products"]) {
      await expect(manage.create(bad)).rejects.toBeInstanceOf(InvalidInput);
    }
    for (const good of ["a", "0", "tienda_1", "t-2", "a".repeat(63)])
      expect((await manage.create(good)).name).toBe(good);
  });

  test("default cannot be removed; a missing one is CatalogueNotFound; removing takes its products", async () => {
    const { manage, store } = setup();
    await expect(manage.remove("default")).rejects.toBeInstanceOf(CatalogueProtected);
    await expect(manage.remove("nunca")).rejects.toBeInstanceOf(CatalogueNotFound);
    await manage.create("outlet");
    await store
      .in("outlet")
      .add({ product: { name: "a", description: "", category: "c" }, embedding: [1], contentDigest: "d" });
    await manage.remove("outlet");
    expect(store.products).toEqual([]);
    expect(await manage.exists("outlet")).toBe(false);
  });

  test("a caller limited to some catalogues lists only those, removes only those, creates only those", async () => {
    const { manage } = setup();
    await manage.create("tienda-norte");
    await manage.create("tienda-sur");
    expect((await manage.list(shopKey)).map((catalogue) => catalogue.name)).toEqual(["tienda-norte"]);
    expect((await manage.list(admin)).map((catalogue) => catalogue.name)).toEqual([
      "default",
      "tienda-norte",
      "tienda-sur",
    ]);
    // The others are as if they did not exist, default included.
    await expect(manage.remove("tienda-sur", shopKey)).rejects.toBeInstanceOf(CatalogueNotFound);
    await expect(manage.remove("default", shopKey)).rejects.toBeInstanceOf(CatalogueNotFound);
    await expect(manage.create("tienda-este", shopKey)).rejects.toBeInstanceOf(Forbidden);
    await manage.remove("tienda-norte", shopKey);
    expect(await manage.create("tienda-norte", shopKey)).toMatchObject({ name: "tienda-norte" });
  });

  test("exists remembers a catalogue it found for a few seconds; one it did not find is looked for each time", async () => {
    const { manage, store, clock, lookups } = setup();
    expect(await manage.exists("outlet")).toBe(false);
    await store.create("outlet");
    expect(await manage.exists("outlet")).toBe(true);
    expect(await manage.exists("outlet")).toBe(true);
    expect(lookups).toEqual(["outlet", "outlet"]);
    clock.advance(5_000);
    expect(await manage.exists("outlet")).toBe(true);
    expect(lookups).toHaveLength(3);
    // The default one always exists, and a name that breaks the rule never does: no lookup for either.
    expect(await manage.exists("default")).toBe(true);
    expect(await manage.exists("No Vale")).toBe(false);
    expect(lookups).toHaveLength(3);
  });
});
