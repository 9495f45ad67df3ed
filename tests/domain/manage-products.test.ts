import { beforeEach, describe, expect, test } from "bun:test";
import { CreateProduct } from "../../src/domain/create-product.ts";
import {
  ConcurrentModification,
  EmbeddingUnavailable,
  InvalidInput,
  ProductNotFound,
  SkuTaken,
} from "../../src/domain/errors.ts";
import { ManageProducts } from "../../src/domain/manage-products.ts";
import { contentDigest } from "../../src/domain/product.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

const SHOE = { name: "Zapatilla de running", description: "Ligera y transpirable", category: "Deporte" };

let products: MemoryProductRepository;
let embedder: FakeEmbedder;
let manage: ManageProducts;
let create: CreateProduct;

beforeEach(() => {
  products = new MemoryProductRepository(64);
  embedder = new FakeEmbedder(64);
  manage = new ManageProducts({ products, embedder });
  create = new CreateProduct({ products, embedder });
});

async function added(fields: Partial<typeof SHOE> & { sku?: string } = {}) {
  return (await create.execute({ ...SHOE, ...fields }, { catalogue: "default" })).product;
}

describe("ManageProducts.get and remove", () => {
  test("get returns the product as clients see it; an unknown id is ProductNotFound", async () => {
    const product = await added({ sku: "Z-1" });
    expect(await manage.get("default", product.id)).toEqual(product);
    expect(await manage.get("default", product.id)).not.toHaveProperty("contentDigest");
    await expect(manage.get("default", 999)).rejects.toBeInstanceOf(ProductNotFound);
    await expect(manage.get("default", 0)).rejects.toBeInstanceOf(ProductNotFound);
  });

  test("remove deletes; removing again is ProductNotFound", async () => {
    const product = await added();
    await manage.remove("default", product.id);
    expect(products.products).toEqual([]);
    await expect(manage.remove("default", product.id)).rejects.toBeInstanceOf(ProductNotFound);
  });
});

describe("ManageProducts.update", () => {
  test("a changed name re-embeds the product from its new text and records the new digest", async () => {
    const product = await added();
    embedder.calls.length = 0;
    const updated = await manage.update("default", product.id, { name: " Zapatilla de trail " });
    expect(updated).toEqual({ ...product, name: "Zapatilla de trail" });
    expect(embedder.calls).toEqual([
      { text: "Zapatilla de trail. Deporte. Ligera y transpirable", purpose: "document" },
    ]);
    expect((await products.in("default").get(product.id))?.contentDigest).toBe(
      await contentDigest({ ...SHOE, name: "Zapatilla de trail" }, []),
    );
  });

  test("a change that leaves name, category and description alone keeps the embedding: nothing is embedded", async () => {
    const product = await added();
    const before = products.embeddingOf(product.id);
    embedder.calls.length = 0;
    expect(await manage.update("default", product.id, { sku: "R-9" })).toEqual({ ...product, sku: "R-9" });
    // The same text, written again: no new embedding either.
    await manage.update("default", product.id, {
      name: SHOE.name,
      description: SHOE.description,
      category: SHOE.category,
    });
    expect(embedder.calls).toEqual([]);
    expect(products.embeddingOf(product.id)).toEqual(before);
  });

  test("a new category is embedded with the product (it is part of the embedded text)", async () => {
    const product = await added();
    embedder.calls.length = 0;
    await manage.update("default", product.id, { category: "Running" });
    expect(embedder.calls).toEqual([
      { text: "Zapatilla de running. Running. Ligera y transpirable", purpose: "document" },
    ]);
  });

  test("bidi controls and other invisible characters inside the changed fields are removed", async () => {
    const product = await added();
    const updated = await manage.update("default", product.id, {
      name: "Zapatilla\u2066 de trail",
      category: "Mon\u200Btaña",
    });
    expect(updated).toEqual({ ...product, name: "Zapatilla de trail", category: "Montaña" });
    expect(await manage.get("default", product.id)).toEqual(updated);
  });

  test("sku: null removes the sku; absent keeps it", async () => {
    const product = await added({ sku: "S-1" });
    expect(await manage.update("default", product.id, { category: "Otra" })).toHaveProperty("sku", "S-1");
    expect(await manage.update("default", product.id, { sku: null })).not.toHaveProperty("sku");
  });

  test("when the embedding cannot be computed: EmbeddingUnavailable and the product is unchanged", async () => {
    const product = await added();
    const before = await products.in("default").get(product.id);
    embedder.mode = "fail";
    await expect(manage.update("default", product.id, { description: "Otra" })).rejects.toBeInstanceOf(
      EmbeddingUnavailable,
    );
    expect(await products.in("default").get(product.id)).toEqual(before);
  });

  test("invalid changes are InvalidInput and change nothing; an unknown id is ProductNotFound", async () => {
    const product = await added();
    await expect(manage.update("default", product.id, { name: " " })).rejects.toBeInstanceOf(InvalidInput);
    await expect(manage.update("default", product.id, { sku: "x".repeat(101) })).rejects.toBeInstanceOf(InvalidInput);
    await expect(manage.update("default", 404, { name: "Nuevo" })).rejects.toBeInstanceOf(ProductNotFound);
    expect(await manage.get("default", product.id)).toEqual(product);
  });

  test("another product's sku is SkuTaken", async () => {
    await added({ sku: "A" });
    const second = await added({ name: "Otra" });
    await expect(manage.update("default", second.id, { sku: "A" })).rejects.toBeInstanceOf(SkuTaken);
  });

  test("two concurrent changes leave the product with the embedding of the text it has", async () => {
    const product = await added();
    embedder.delayMs = 5;
    await Promise.all([
      manage.update("default", product.id, { name: "Nombre nuevo" }),
      manage.update("default", product.id, { description: "Descripción nueva" }),
    ]);
    const stored = await products.in("default").get(product.id);
    expect(stored).toMatchObject({ name: "Nombre nuevo", description: "Descripción nueva", version: 3 });
    expect(stored?.contentDigest).toBe(
      await contentDigest({ name: "Nombre nuevo", description: "Descripción nueva", category: SHOE.category }, []),
    );
    const [fresh] = await embedder.embed(["Nombre nuevo. Deporte. Descripción nueva"], "document");
    expect(products.embeddingOf(product.id)).toEqual(fresh);
  });

  test("a product that keeps changing under the update: ConcurrentModification", async () => {
    const product = await added();
    const update = products.in("default").update.bind(products.in("default"));
    products.in("default").update = async () => ({ conflict: true });
    await expect(manage.update("default", product.id, { name: "X" })).rejects.toBeInstanceOf(ConcurrentModification);
    products.in("default").update = update;
  });
});

describe("ManageProducts.list", () => {
  test("pages through every product with a cursor, by id or newest first, with the total", async () => {
    for (let i = 0; i < 7; i++) await added({ name: `P${i}`, category: i % 2 === 0 ? "par" : "impar" });
    const names: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await manage.list("default", { limit: 3, cursor });
      expect(page.total).toBe(7);
      names.push(...page.items.map((product) => product.name));
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    expect(names).toEqual(["P0", "P1", "P2", "P3", "P4", "P5", "P6"]);

    const newest = await manage.list("default", { limit: 2, order: "newest" });
    expect(newest.items.map((product) => product.name)).toEqual(["P6", "P5"]);
    const next = await manage.list("default", { limit: 2, order: "newest", cursor: newest.nextCursor ?? undefined });
    expect(next.items.map((product) => product.name)).toEqual(["P4", "P3"]);

    const odd = await manage.list("default", { category: " impar " });
    expect(odd).toEqual({ items: expect.any(Array), total: 3, nextCursor: null });
    expect(odd.items.map((product) => product.name)).toEqual(["P1", "P3", "P5"]);
  });

  test("a bad limit, cursor or category filter is InvalidInput", async () => {
    for (const request of [
      { limit: 0 },
      { limit: 101 },
      { limit: 2.5 },
      { cursor: "basura" },
      { cursor: btoa("id:0") },
      { order: "newest" as const, cursor: btoa("id:3") },
      { category: [] },
      { category: [" "] },
      { category: Array.from({ length: 21 }, (_, i) => `c${i}`) },
    ]) {
      await expect(manage.list("default", request)).rejects.toBeInstanceOf(InvalidInput);
    }
  });
});
