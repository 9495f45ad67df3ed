import { describe, expect, test } from "bun:test";
import { ExportCatalogue } from "../../src/domain/export-catalogue.ts";
import type { ExportedProduct } from "../../src/ports/product-repository.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

const SPACE = { model: "fake-bag-of-words", dimension: 16 };

async function catalogue(count: number): Promise<MemoryProductRepository> {
  const products = new MemoryProductRepository(SPACE.dimension);
  const embedder = new FakeEmbedder(SPACE.dimension);
  for (let i = 0; i < count; i++) {
    const product = { name: `Producto ${i}`, description: `Descripción ${i}`, category: "c", sku: `S-${i}` };
    const [embedding] = await embedder.embed([product.name], "document");
    await products.in("default").add({ product, embedding: embedding as number[], contentDigest: `d${i}` });
  }
  return products;
}

async function all(products: AsyncGenerator<ExportedProduct>): Promise<ExportedProduct[]> {
  const read: ExportedProduct[] = [];
  for await (const product of products) read.push(product);
  return read;
}

describe("ExportCatalogue", () => {
  test("every product by id, page after page, with the stored space and the time in the header", async () => {
    const products = await catalogue(7);
    await products.in("default").remove(3); // a gap in the ids is no end of the catalogue
    const pages: number[] = [];
    const counting = {
      productsAfter: async (afterId: number, limit: number, options: { withEmbeddings: boolean }) => {
        const page = await products.in("default").productsAfter(afterId, limit, options);
        pages.push(page.length);
        return page;
      },
      embeddedAttributes: () => products.in("default").embeddedAttributes(),
    };
    await products.setEmbeddedAttributes("default", ["brand"]);
    const clock = new FakeClock(Date.parse("2026-11-25T10:00:00Z"));
    const exporter = new ExportCatalogue({ products: counting, space: async () => SPACE, clock });

    const exported = await exporter.execute({ withEmbeddings: false, pageSize: 2 });
    expect(exported.header).toEqual({
      ...SPACE,
      embeddings: false,
      embeddedAttributes: ["brand"],
      exportedAt: new Date("2026-11-25T10:00:00Z"),
    });
    const read = await all(exported.products);
    expect(read).toEqual(products.products);
    expect(read.map((product) => product.id)).toEqual([1, 2, 4, 5, 6, 7]);
    expect(read.some((product) => "embedding" in product)).toBe(false);
    expect(pages).toEqual([2, 2, 2, 0]);
  });

  test("with embeddings, each product carries the vector it is stored with", async () => {
    const products = await catalogue(3);
    const exporter = new ExportCatalogue({
      products: products.in("default"),
      space: async () => SPACE,
      clock: new FakeClock(0),
    });
    const exported = await exporter.execute({ withEmbeddings: true });
    expect(exported.header.embeddings).toBe(true);
    const read = await all(exported.products);
    expect(read.map((product) => product.embedding)).toEqual([1, 2, 3].map((id) => products.embeddingOf(id)));
  });

  test("from where a previous page ended (afterId): the products above it, none twice", async () => {
    const products = await catalogue(5);
    const exporter = new ExportCatalogue({
      products: products.in("default"),
      space: async () => SPACE,
      clock: new FakeClock(0),
    });
    const rest = await all((await exporter.execute({ withEmbeddings: false, pageSize: 2, afterId: 2 })).products);
    expect(rest.map((product) => product.id)).toEqual([3, 4, 5]);
    expect(await all((await exporter.execute({ withEmbeddings: false, afterId: 5 })).products)).toEqual([]);
  });

  test("an abort stops it between pages", async () => {
    const products = await catalogue(5);
    const controller = new AbortController();
    const exporter = new ExportCatalogue({
      products: products.in("default"),
      space: async () => SPACE,
      clock: new FakeClock(0),
    });
    const exported = await exporter.execute({ withEmbeddings: false, pageSize: 2, signal: controller.signal });
    const read: ExportedProduct[] = [];
    const stopped = (async () => {
      for await (const product of exported.products) {
        read.push(product);
        if (read.length === 2) controller.abort(new Error("stopped"));
      }
    })();
    await expect(stopped).rejects.toThrow("stopped");
    expect(read).toHaveLength(2);
  });
});
