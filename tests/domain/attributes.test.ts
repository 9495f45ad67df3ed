import { beforeEach, describe, expect, test } from "bun:test";
import { ATTRIBUTE_LIMITS, checkedAttributes } from "../../src/domain/attributes.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { InvalidInput } from "../../src/domain/errors.ts";
import { ManageProducts } from "../../src/domain/manage-products.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

const SHOE = { name: "Zapatilla de running", description: "Ligera y transpirable", category: "Deporte" };

/** The InvalidInput's message checkedAttributes throws for `value`. */
function problemOf(value: unknown): string {
  try {
    checkedAttributes(value);
  } catch (error) {
    if (error instanceof InvalidInput) return error.message;
    throw error;
  }
  throw new Error("accepted");
}

describe("checkedAttributes", () => {
  test("texts, finite numbers, booleans and lists of texts are kept, keys sorted; null or absent is none", () => {
    expect(checkedAttributes({ price: 59.9, brand: "Acme", in_stock: false, sizes: ["41", "42"], tags: [] })).toEqual({
      brand: "Acme",
      in_stock: false,
      price: 59.9,
      sizes: ["41", "42"],
      tags: [],
    });
    expect(Object.keys(checkedAttributes({ z: 1, a: 2 }))).toEqual(["a", "z"]);
    expect(checkedAttributes(null)).toEqual({});
    expect(checkedAttributes(undefined)).toEqual({});
    expect(checkedAttributes({ [`a${"b".repeat(62)}`]: 1 })).toHaveProperty(`a${"b".repeat(62)}`);
  });

  test("a bad key is refused naming it", () => {
    for (const key of ["Brand", "1price", "_x", "precio-final", "marca ", "ñandú", "", `a${"b".repeat(63)}`]) {
      expect(problemOf({ [key]: "x" })).toContain(`'${key.slice(0, 80)}'`);
    }
  });

  test("a value of another type is refused naming its key", () => {
    for (const value of [null, { amount: 3 }, [1, 2], ["a", 3], Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(problemOf({ brand: "Acme", price: value })).toContain("'price'");
    }
  });

  test("not an object, too many keys or too many bytes is refused naming the field", () => {
    expect(problemOf("Acme")).toContain("'attributes'");
    expect(problemOf(["Acme"])).toContain("'attributes'");
    const many = Object.fromEntries(Array.from({ length: ATTRIBUTE_LIMITS.keys + 1 }, (_, i) => [`k${i}`, i]));
    expect(problemOf(many)).toBe("El campo 'attributes' tiene 65 atributos; el máximo es 64");
    expect(checkedAttributes(Object.fromEntries(Object.entries(many).slice(1)))).toBeDefined();
    // 16 KB as JSON, counted in UTF-8 bytes: 8,200 "é" are 16,400 bytes.
    expect(problemOf({ note: "é".repeat(8200) })).toContain("'attributes' ocupa");
    expect(checkedAttributes({ note: "e".repeat(16_000) })).toBeDefined();
  });
});

describe("attributes of products", () => {
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

  test("a product is created with its attributes; without any it has no attributes field", async () => {
    const { product } = await create.execute(
      { ...SHOE, attributes: { price: 59.9, brand: "Acme" } },
      { catalogue: "default" },
    );
    expect(product).toEqual({ id: product.id, ...SHOE, attributes: { brand: "Acme", price: 59.9 } });
    const { product: plain } = await create.execute({ ...SHOE, attributes: {} }, { catalogue: "default" });
    expect(plain).not.toHaveProperty("attributes");
  });

  test("invalid attributes are InvalidInput naming the key, and nothing is stored or embedded", async () => {
    const attempt = create.execute({ ...SHOE, attributes: { Marca: "Acme" } }, { catalogue: "default" });
    await expect(attempt).rejects.toThrow("'Marca'");
    expect(products.products).toEqual([]);
    expect(embedder.calls).toEqual([]);
    const { product } = await create.execute({ ...SHOE, attributes: { price: 5 } }, { catalogue: "default" });
    await expect(manage.update("default", product.id, { attributes: { price: "5", stock: { n: 1 } } })).rejects.toThrow(
      "'stock'",
    );
    expect(await manage.get("default", product.id)).toEqual(product);
  });

  test("changing attributes alone keeps the embedding and digest: nothing is embedded", async () => {
    const { product } = await create.execute({ ...SHOE, attributes: { price: 5 } }, { catalogue: "default" });
    const before = products.embeddingOf(product.id);
    const digest = (await products.in("default").get(product.id))?.contentDigest;
    embedder.calls.length = 0;
    const changed = await manage.update("default", product.id, { attributes: { price: 4, in_stock: true } });
    expect(changed).toEqual({ ...product, attributes: { in_stock: true, price: 4 } });
    expect(embedder.calls).toEqual([]);
    expect(products.embeddingOf(product.id)).toEqual(before as number[]);
    expect((await products.in("default").get(product.id))?.contentDigest).toBe(digest as string);
  });

  test("a change without attributes keeps them; null or {} removes them", async () => {
    const { product } = await create.execute({ ...SHOE, attributes: { price: 5 } }, { catalogue: "default" });
    expect(await manage.update("default", product.id, { name: "Zapatilla nueva" })).toMatchObject({
      attributes: { price: 5 },
    });
    expect(await manage.update("default", product.id, { attributes: null })).not.toHaveProperty("attributes");
    await manage.update("default", product.id, { attributes: { price: 6 } });
    expect(await manage.update("default", product.id, { attributes: {} })).not.toHaveProperty("attributes");
  });
});
