import { beforeEach, describe, expect, test } from "bun:test";
import { MemoryProductRepository } from "../../src/adapters/memory/product-repository.ts";
import { CreateProduct } from "../../src/domain/create-product.ts";
import { EmbeddingUnavailable, InvalidInput } from "../../src/domain/errors.ts";
import { type NewProduct, PRODUCT_FIELD_MAX_LENGTH } from "../../src/domain/product.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../src/ports/embedder.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";

/** An embedder that answers whatever the test tells it to. */
class StubEmbedder implements Embedder {
  readonly model = "stub";
  readonly calls: { texts: readonly string[]; purpose: EmbeddingPurpose }[] = [];
  constructor(
    readonly dimension: number,
    private readonly answer: () => Vector[],
  ) {}

  async embed(texts: readonly string[], purpose: EmbeddingPurpose): Promise<Vector[]> {
    this.calls.push({ texts, purpose });
    return this.answer();
  }
}

const FIELDS = ["name", "description", "category"] as const;
const VALID: NewProduct = {
  name: "Zapatillas de running",
  description: "Ligeras, con amortiguación para asfalto",
  category: "Deporte",
};

let products: MemoryProductRepository;
let embedder: FakeEmbedder;
let createProduct: CreateProduct;

beforeEach(() => {
  embedder = new FakeEmbedder(64);
  products = new MemoryProductRepository(64);
  createProduct = new CreateProduct({ products, embedder });
});

describe("CreateProduct", () => {
  test("stores the trimmed product and returns it with its id", async () => {
    const created = await createProduct.execute({
      name: "  Zapatillas de running\t",
      description: "\n Ligeras, con amortiguación para asfalto  ",
      category: " Deporte ",
    });
    expect(created).toEqual({ id: expect.any(Number), ...VALID });
    expect(products.products).toEqual([created]);
  });

  test("embeds exactly name, a newline and description, as a document, once", async () => {
    await createProduct.execute({ ...VALID, name: ` ${VALID.name} ` });
    expect(embedder.calls).toEqual([{ text: `${VALID.name}\n${VALID.description}`, purpose: "document" }]);
  });

  test("stores the vector the embedder computed", async () => {
    const vector = Array.from({ length: 64 }, (_, i) => (i === 5 ? 1 : 0));
    const stub = new StubEmbedder(64, () => [vector]);
    const created = await new CreateProduct({ products, embedder: stub }).execute(VALID);
    const [hit] = await products.searchByVector(vector, 1);
    expect(hit?.id).toBe(created.id);
    expect(hit?.score).toBeCloseTo(1, 10);
  });

  for (const field of FIELDS) {
    for (const [label, value] of [
      ["empty", ""],
      ["whitespace only", " \t\n "],
      ["too long", "x".repeat(PRODUCT_FIELD_MAX_LENGTH[field] + 1)],
      ["too long after trimming", `  ${"x".repeat(PRODUCT_FIELD_MAX_LENGTH[field] + 1)}  `],
    ] as const) {
      test(`${field} ${label}: InvalidInput naming the field, nothing embedded or stored`, async () => {
        const error = await createProduct.execute({ ...VALID, [field]: value }).catch((caught) => caught);
        expect(error).toBeInstanceOf(InvalidInput);
        expect((error as Error).message).toContain(`'${field}'`);
        for (const other of FIELDS.filter((name) => name !== field)) {
          expect((error as Error).message).not.toContain(`'${other}'`);
        }
        expect(embedder.calls).toHaveLength(0);
        expect(products.products).toHaveLength(0);
      });
    }

    test(`${field} exactly at its maximum length, after trimming, is accepted`, async () => {
      const value = "x".repeat(PRODUCT_FIELD_MAX_LENGTH[field]);
      const created = await createProduct.execute({ ...VALID, [field]: `  ${value} ` });
      expect(created[field]).toBe(value);
    });
  }

  test("the maximum lengths counted are characters, not bytes", async () => {
    const value = "ñ".repeat(PRODUCT_FIELD_MAX_LENGTH.name);
    expect((await createProduct.execute({ ...VALID, name: value })).name).toBe(value);
  });

  const broken: [string, number, () => Vector[]][] = [
    [
      "throws",
      4,
      () => {
        throw new Error("proveedor caído");
      },
    ],
    ["returns a zero vector", 4, () => [[0, 0, 0, 0]]],
    ["returns a vector of the wrong length", 4, () => [[1, 2, 3]]],
    ["returns a NaN component", 4, () => [[1, Number.NaN, 0, 0]]],
    ["returns an infinite component", 4, () => [[1, Number.POSITIVE_INFINITY, 0, 0]]],
    ["returns no vector", 4, () => []],
  ];
  for (const [label, dimension, answer] of broken) {
    test(`embedder ${label}: EmbeddingUnavailable and nothing stored`, async () => {
      // A repository without a fixed dimension, so only the use case can refuse the vector.
      const repository = new MemoryProductRepository();
      const stub = new StubEmbedder(dimension, answer);
      const error = await new CreateProduct({ products: repository, embedder: stub })
        .execute(VALID)
        .catch((caught) => caught);
      expect(error).toBeInstanceOf(EmbeddingUnavailable);
      expect(stub.calls).toHaveLength(1);
      expect(repository.products).toHaveLength(0);
    });
  }

  test("the fake embedder failing or returning zeros stores nothing either", async () => {
    for (const mode of ["fail", "zero"] as const) {
      embedder.mode = mode;
      await expect(createProduct.execute(VALID)).rejects.toBeInstanceOf(EmbeddingUnavailable);
    }
    expect(products.products).toHaveLength(0);
  });

  test("the embedder's own error is kept as the cause, not shown in the message", async () => {
    const stub = new StubEmbedder(4, () => {
      throw new Error("sk-secret-key rejected");
    });
    const error = await new CreateProduct({ products, embedder: stub }).execute(VALID).catch((caught) => caught);
    expect(error).toBeInstanceOf(EmbeddingUnavailable);
    expect((error as Error).message).not.toContain("sk-secret-key");
    expect(((error as Error).cause as Error).message).toContain("sk-secret-key");
  });
});
