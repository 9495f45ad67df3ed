import { beforeEach, describe, expect, test } from "bun:test";
import {
  checkedEmbeddedAttributes,
  EMBEDDED_ATTRIBUTES_MAX,
  embeddedAttributesText,
  plainDecimal,
} from "../../src/domain/attributes.ts";
import { userCaller } from "../../src/domain/caller.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { EmbedStaleProducts } from "../../src/domain/embed-stale-products.ts";
import { CatalogueNotFound, InvalidInput } from "../../src/domain/errors.ts";
import { type ImportInput, ImportProducts } from "../../src/domain/import-products.ts";
import { ManageCatalogues } from "../../src/domain/manage-catalogues.ts";
import { ManageProducts } from "../../src/domain/manage-products.ts";
import { contentDigest, embeddingText } from "../../src/domain/product.ts";
import { bagOfWords, FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

const SHOE = { name: "Zapatilla de running", description: "Ligera", category: "Deporte" };

function problemOf(value: unknown): string {
  try {
    checkedEmbeddedAttributes(value);
  } catch (error) {
    if (error instanceof InvalidInput) return error.message;
    throw error;
  }
  throw new Error("accepted");
}

describe("the setting embedded_attributes", () => {
  test("a list of attribute names, each once, kept in code-unit order; [] is none", () => {
    expect(checkedEmbeddedAttributes(["color", "brand", "in_stock", "a_b", "ab"])).toEqual([
      "a_b",
      "ab",
      "brand",
      "color",
      "in_stock",
    ]);
    expect(checkedEmbeddedAttributes([])).toEqual([]);
  });

  test("a bad name, a repeated one, too many or not a list is refused, naming what is wrong", () => {
    for (const key of ["Brand", "1price", "_x", "marca ", "ñandú", "", `a${"b".repeat(63)}`]) {
      expect(problemOf([key])).toContain(`'${key}'`);
    }
    expect(problemOf([3])).toContain("'3'");
    expect(problemOf(["brand", "brand"])).toBe("El campo 'embedded_attributes' nombra 'brand' más de una vez");
    const many = Array.from({ length: EMBEDDED_ATTRIBUTES_MAX + 1 }, (_, i) => `k${i}`);
    expect(problemOf(many)).toBe("El campo 'embedded_attributes' nombra 9 atributos; el máximo es 8");
    expect(checkedEmbeddedAttributes(many.slice(1))).toHaveLength(EMBEDDED_ATTRIBUTES_MAX);
    expect(problemOf("brand")).toContain("'embedded_attributes'");
    expect(problemOf(null)).toContain("'embedded_attributes'");
  });
});

describe("the embedded text with attributes", () => {
  const attributes = {
    brand: "Acme",
    color: ["rojo", "azul"],
    in_stock: false,
    price: 59.9,
    note: "",
    sizes: [],
  };

  test('"name. category. description. key: value" for each embedded attribute the product has, in the setting\'s order', () => {
    expect(embeddingText({ ...SHOE, attributes }, ["brand", "color", "in_stock", "price"])).toBe(
      "Zapatilla de running. Deporte. Ligera. brand: Acme. color: rojo, azul. in_stock: false. price: 59.9",
    );
    // Absent, empty text or empty list: left out; an attribute not named is never part of it.
    expect(embeddingText({ ...SHOE, attributes }, ["material", "note", "sizes", "brand"])).toBe(
      "Zapatilla de running. Deporte. Ligera. brand: Acme",
    );
    expect(embeddingText({ ...SHOE, description: "", attributes }, ["brand"])).toBe(
      "Zapatilla de running. Deporte. brand: Acme",
    );
  });

  test("without embedded attributes the text and digest are what they were before the setting existed", async () => {
    expect(embeddingText({ ...SHOE, attributes }, [])).toBe("Zapatilla de running. Deporte. Ligera");
    expect(await contentDigest({ ...SHOE, attributes }, [])).toBe(await contentDigest(SHOE, []));
    expect(await contentDigest({ ...SHOE, attributes }, ["brand"])).not.toBe(await contentDigest(SHOE, []));
    // An embedded attribute the product lacks leaves its text (and digest) as it was.
    expect(await contentDigest(SHOE, ["brand"])).toBe(await contentDigest(SHOE, []));
    expect(embeddedAttributesText(undefined, ["brand"])).toBe("");
  });

  test("numbers in plain decimals, as PostgreSQL prints a jsonb number", () => {
    const cases: [number, string][] = [
      [59.9, "59.9"],
      [-3, "-3"],
      [0, "0"],
      [-0, "0"],
      [1e21, "1000000000000000000000"],
      [1.2345e25, "12345000000000000000000000"],
      [-2.5e-7, "-0.00000025"],
      [1e-7, "0.0000001"],
      [123456.789, "123456.789"],
    ];
    for (const [value, text] of cases) expect(plainDecimal(value)).toBe(text);
  });
});

describe("a catalogue that embeds attributes", () => {
  let products: MemoryProductRepository;
  let embedder: FakeEmbedder;
  let create: CreateProduct;
  let manage: ManageProducts;
  let importer: ImportProducts;
  let stale: EmbedStaleProducts;

  beforeEach(async () => {
    products = new MemoryProductRepository(64);
    embedder = new FakeEmbedder(64);
    create = new CreateProduct({ products, embedder });
    manage = new ManageProducts({ products, embedder });
    importer = new ImportProducts({ products, embedder });
    stale = new EmbedStaleProducts({ products, embedder });
    await products.create("tienda");
    await products.setEmbeddedAttributes("tienda", ["brand"]);
  });

  const created = async (attributes: Record<string, unknown>, catalogue = "tienda") =>
    (await create.execute({ ...SHOE, attributes }, { catalogue })).product;

  test("a product is embedded with its embedded attributes; another catalogue's setting is not this one's", async () => {
    const product = await created({ brand: "Acme", price: 5 });
    expect(embedder.calls.at(-1)?.text).toBe("Zapatilla de running. Deporte. Ligera. brand: Acme");
    expect(products.embeddingOf(product.id)).toEqual(
      bagOfWords("Zapatilla de running. Deporte. Ligera. brand: Acme", 64),
    );
    expect((await products.in("tienda").get(product.id))?.contentDigest).toBe(
      await contentDigest({ ...SHOE, attributes: { brand: "Acme" } }, ["brand"]),
    );
    await created({ brand: "Acme" }, "default");
    expect(embedder.calls.at(-1)?.text).toBe("Zapatilla de running. Deporte. Ligera");
  });

  test("an attribute-only change embeds again only when an embedded attribute changed", async () => {
    const product = await created({ brand: "Acme", price: 5 });
    embedder.calls.length = 0;
    await manage.update("tienda", product.id, { attributes: { brand: "Acme", price: 4, in_stock: true } });
    expect(embedder.calls).toEqual([]);
    await manage.update("tienda", product.id, { attributes: { brand: "Zeta", price: 4 } });
    expect(embedder.calls.map((call) => call.text)).toEqual(["Zapatilla de running. Deporte. Ligera. brand: Zeta"]);
    expect(products.embeddingOf(product.id)).toEqual(
      bagOfWords("Zapatilla de running. Deporte. Ligera. brand: Zeta", 64),
    );
  });

  test("after the setting changes, the products it concerns are stale: counted, embedded again once", async () => {
    const withBrand = await created({ brand: "Acme", color: "rojo" });
    const withColorOnly = await created({ color: "azul" });
    const plain = await created({});
    expect(await stale.count("tienda")).toEqual({ products: 3, stale: 0 });

    await products.setEmbeddedAttributes("tienda", ["brand", "color"]);
    expect(await stale.count("tienda")).toEqual({ products: 3, stale: 2 });
    embedder.calls.length = 0;
    const progress: unknown[] = [];
    const result = await stale.execute("tienda", { batchSize: 2, onProgress: (p) => progress.push(p) });
    expect(result).toEqual({ products: 3, embedded: 2, changedMeanwhile: 0 });
    expect(progress).toEqual([
      { checked: 2, total: 3, embedded: 2 },
      { checked: 3, total: 3, embedded: 2 },
    ]);
    expect(embedder.calls.map((call) => call.text)).toEqual([
      "Zapatilla de running. Deporte. Ligera. brand: Acme. color: rojo",
      "Zapatilla de running. Deporte. Ligera. color: azul",
    ]);
    expect(products.embeddingOf(withColorOnly.id)).toEqual(
      bagOfWords("Zapatilla de running. Deporte. Ligera. color: azul", 64),
    );
    // Their fields are as they were; the next run finds nothing to do.
    expect(await manage.get("tienda", withBrand.id)).toEqual(withBrand);
    expect(await manage.get("tienda", plain.id)).toEqual(plain);
    expect(await stale.count("tienda")).toEqual({ products: 3, stale: 0 });
    embedder.calls.length = 0;
    expect(await stale.execute("tienda")).toEqual({ products: 3, embedded: 0, changedMeanwhile: 0 });
    expect(embedder.calls).toEqual([]);
  });

  test("a stale product changed while its new vector is made keeps what its change wrote", async () => {
    const product = await created({ brand: "Acme" });
    await products.setEmbeddedAttributes("tienda", []);
    const repository = products.in("tienda");
    const writeMany = repository.writeMany.bind(repository);
    repository.writeMany = async (writes) => {
      await manage.update("tienda", product.id, { name: "Zapatilla de trail" });
      return writeMany(writes);
    };
    expect(await stale.execute("tienda")).toEqual({ products: 1, embedded: 0, changedMeanwhile: 1 });
    expect(products.embeddingOf(product.id)).toEqual(bagOfWords("Zapatilla de trail. Deporte. Ligera", 64));
  });

  test("an import embeds with the setting; re-importing after it changes updates the stale products, then nothing", async () => {
    const items: ImportInput[] = [
      { value: { ...SHOE, sku: "A", attributes: { brand: "Acme", color: "rojo" } } },
      { value: { ...SHOE, sku: "B", attributes: { price: 3 } } },
    ];
    expect((await importer.execute(items, { catalogue: "tienda" })).counts).toMatchObject({ created: 2 });
    expect(embedder.calls.map((call) => call.text)).toEqual([
      "Zapatilla de running. Deporte. Ligera. brand: Acme",
      "Zapatilla de running. Deporte. Ligera",
    ]);
    expect((await importer.execute(items, { catalogue: "tienda" })).counts).toMatchObject({ unchanged: 2 });
    await products.setEmbeddedAttributes("tienda", ["color"]);
    embedder.calls.length = 0;
    expect((await importer.execute(items, { catalogue: "tienda" })).counts).toMatchObject({ updated: 1, unchanged: 1 });
    expect(embedder.calls.map((call) => call.text)).toEqual(["Zapatilla de running. Deporte. Ligera. color: rojo"]);
  });

  test("an export's embeddings are taken only into a catalogue that embeds the same attributes", async () => {
    const space = { model: embedder.model, dimension: 64 };
    expect(await importer.takesEmbeddingsOf({ ...space, embeddedAttributes: ["brand"] }, "tienda")).toBe(true);
    expect(await importer.takesEmbeddingsOf(space, "tienda")).toBe(false);
    expect(await importer.takesEmbeddingsOf(space, "default")).toBe(true);
    const item = { ...SHOE, attributes: { brand: "Acme" }, embedding: bagOfWords("otra cosa", 64) };
    const report = await importer.execute([{ value: item }], { catalogue: "tienda", embeddings: space });
    expect(report.counts).toMatchObject({ created: 1 });
    expect(embedder.calls.map((call) => call.text)).toEqual(["Zapatilla de running. Deporte. Ligera. brand: Acme"]);
  });
});

describe("ManageCatalogues.setEmbeddedAttributes", () => {
  const admin = userCaller({ id: 1, role: "admin" });
  const otherShop = { kind: "key" as const, grants: "*" as const, catalogues: ["otra"], id: "key:abc" };

  async function setup() {
    const products = new MemoryProductRepository(64);
    const embedder = new FakeEmbedder(64);
    const manage = new ManageCatalogues({
      catalogues: products,
      staleProducts: new EmbedStaleProducts({ products, embedder }),
    });
    await manage.create("tienda");
    const create = new CreateProduct({ products, embedder });
    await create.execute({ ...SHOE, attributes: { brand: "Acme" } }, { catalogue: "tienda" });
    await create.execute(SHOE, { catalogue: "tienda" });
    return { manage, products };
  }

  test("sets the setting, answers the catalogue with it and how many products it leaves stale; list shows it", async () => {
    const { manage } = await setup();
    expect(await manage.setEmbeddedAttributes("tienda", ["color", "brand"], admin)).toMatchObject({
      name: "tienda",
      products: 2,
      embeddedAttributes: ["brand", "color"],
      staleEmbeddings: 1,
    });
    expect((await manage.list()).find((catalogue) => catalogue.name === "tienda")?.embeddedAttributes).toEqual([
      "brand",
      "color",
    ]);
    expect(await manage.setEmbeddedAttributes("tienda", [], admin)).toMatchObject({
      embeddedAttributes: [],
      staleEmbeddings: 0,
    });
  });

  test("a bad setting changes nothing; an unknown catalogue, or one the caller cannot see, is CatalogueNotFound", async () => {
    const { manage } = await setup();
    await manage.setEmbeddedAttributes("tienda", ["brand"]);
    await expect(manage.setEmbeddedAttributes("tienda", ["Marca"])).rejects.toThrow("'Marca'");
    expect((await manage.list()).find((catalogue) => catalogue.name === "tienda")?.embeddedAttributes).toEqual([
      "brand",
    ]);
    await expect(manage.setEmbeddedAttributes("nunca", ["brand"])).rejects.toBeInstanceOf(CatalogueNotFound);
    await expect(manage.setEmbeddedAttributes("tienda", [], otherShop)).rejects.toBeInstanceOf(CatalogueNotFound);
    expect((await manage.list()).find((catalogue) => catalogue.name === "tienda")?.embeddedAttributes).toEqual([
      "brand",
    ]);
  });
});
