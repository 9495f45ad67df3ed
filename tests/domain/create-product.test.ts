import { beforeEach, describe, expect, test } from "bun:test";
import { CreateProduct, IDEMPOTENCY_KEY_TTL_HOURS } from "../../src/domain/create-product.ts";
import { DeadlineExceeded, EmbeddingUnavailable, IdempotencyKeyReused, InvalidInput } from "../../src/domain/errors.ts";
import { PRODUCT_FIELD_MAX_LENGTH, type ProductFields } from "../../src/domain/product.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../src/ports/embedder.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

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
const VALID: ProductFields = {
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
    const { product: created } = await createProduct.execute(
      {
        name: "  Zapatillas de running\t",
        description: "\n Ligeras, con amortiguación para asfalto  ",
        category: " Deporte ",
      },
      { catalogue: "default" },
    );
    expect(created).toEqual({ id: expect.any(Number), ...VALID });
    expect(products.products).toEqual([created]);
  });

  test('embeds exactly "name. category. description", as a document, once', async () => {
    await createProduct.execute({ ...VALID, name: ` ${VALID.name} ` }, { catalogue: "default" });
    expect(embedder.calls).toEqual([
      { text: `${VALID.name}. ${VALID.category}. ${VALID.description}`, purpose: "document" },
    ]);
  });

  test("stores the vector the embedder computed", async () => {
    const vector = Array.from({ length: 64 }, (_, i) => (i === 5 ? 1 : 0));
    const stub = new StubEmbedder(64, () => [vector]);
    const { product: created } = await new CreateProduct({ products, embedder: stub }).execute(VALID, {
      catalogue: "default",
    });
    const [hit] = await products.in("default").searchByVector(vector, { limit: 1 });
    expect(hit?.id).toBe(created.id);
    expect(hit?.score).toBeCloseTo(1, 10);
  });

  for (const field of FIELDS) {
    const invalid: [string, string][] = [
      ["too long", "x".repeat(PRODUCT_FIELD_MAX_LENGTH[field] + 1)],
      ["too long after trimming", `  ${"x".repeat(PRODUCT_FIELD_MAX_LENGTH[field] + 1)}  `],
      ["holding a NUL", "a\u0000b"],
      ["holding a lone surrogate", "caf\ud800e"],
    ];
    if (field !== "description") {
      invalid.push(
        ["empty", ""],
        ["whitespace only", " \t\n "],
        ["made of zero-width characters", "\u200b\u200d\ufeff\u2060"],
      );
    }
    for (const [label, value] of invalid) {
      test(`${field} ${label}: InvalidInput naming the field, nothing embedded or stored`, async () => {
        const error = await createProduct
          .execute({ ...VALID, [field]: value }, { catalogue: "default" })
          .catch((caught) => caught);
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
      const { product } = await createProduct.execute({ ...VALID, [field]: `  ${value} ` }, { catalogue: "default" });
      expect(product[field]).toBe(value);
    });
  }

  test("the maximum lengths counted are characters, not bytes", async () => {
    const value = "ñ".repeat(PRODUCT_FIELD_MAX_LENGTH.name);
    expect((await createProduct.execute({ ...VALID, name: value }, { catalogue: "default" })).product.name).toBe(value);
  });

  test("an empty description is accepted: the product is embedded by its name and category", async () => {
    const { product } = await createProduct.execute({ ...VALID, description: " \u200b " }, { catalogue: "default" });
    expect(product.description).toBe("");
    expect(embedder.calls).toEqual([{ text: `${VALID.name}. ${VALID.category}`, purpose: "document" }]);
  });

  test("bidi controls inside a field are removed before it is stored and embedded", async () => {
    const { product } = await createProduct.execute(
      { ...VALID, name: "Zapatillas de \u202Egninnur\u202C" },
      { catalogue: "default" },
    );
    expect(product.name).toBe("Zapatillas de gninnur");
    expect(products.products[0]?.name).toBe("Zapatillas de gninnur");
    expect(embedder.calls[0]?.text).toBe(`Zapatillas de gninnur. ${VALID.category}. ${VALID.description}`);
  });

  test("zero-width characters around a field are trimmed like spaces", async () => {
    const { product } = await createProduct.execute(
      { ...VALID, name: `\u200b${VALID.name}\ufeff` },
      { catalogue: "default" },
    );
    expect(product.name).toBe(VALID.name);
  });

  describe("with an idempotency key", () => {
    const key = { owner: "user:3", key: "pedido-42" };

    test("a retry with the same key and body gets the first product again, embedded and stored once", async () => {
      const first = await createProduct.execute(VALID, { catalogue: "default", idempotency: key });
      const retry = await createProduct.execute(
        { ...VALID, name: ` ${VALID.name} ` },
        { catalogue: "default", idempotency: key },
      );
      expect(first.replayed).toBe(false);
      expect(retry).toEqual({ product: first.product, replayed: true });
      expect(products.products).toHaveLength(1);
      expect(embedder.calls).toHaveLength(1);
    });

    test("the same key with another body is IdempotencyKeyReused, and nothing is stored", async () => {
      await createProduct.execute(VALID, { catalogue: "default", idempotency: key });
      const error = await createProduct
        .execute({ ...VALID, category: "Otra" }, { catalogue: "default", idempotency: key })
        .catch((caught) => caught);
      expect(error).toBeInstanceOf(IdempotencyKeyReused);
      expect(products.products).toHaveLength(1);
    });

    test("another user's key of the same name is another key", async () => {
      await createProduct.execute(VALID, { catalogue: "default", idempotency: key });
      const other = await createProduct.execute(VALID, {
        catalogue: "default",
        idempotency: { ...key, owner: "key:0a1b2c3d4e5f6a7b" },
      });
      expect(other.replayed).toBe(false);
      expect(products.products).toHaveLength(2);
    });

    test("after 24 hours the key is free again", async () => {
      let now = Date.parse("2026-11-23T10:00:00Z");
      const aging = new MemoryProductRepository(64, () => now);
      const create = new CreateProduct({ products: aging, embedder });
      await create.execute(VALID, { catalogue: "default", idempotency: key });
      now += (IDEMPOTENCY_KEY_TTL_HOURS - 1) * 3_600_000;
      expect((await create.execute(VALID, { catalogue: "default", idempotency: key })).replayed).toBe(true);
      now += 3_600_000;
      expect((await create.execute(VALID, { catalogue: "default", idempotency: key })).replayed).toBe(false);
      expect(aging.products).toHaveLength(2);
      expect(await aging.in("default").pruneIdempotencyKeys(IDEMPOTENCY_KEY_TTL_HOURS)).toBe(0);
    });
  });

  test("a signal that aborts during the embedding stores nothing and rejects with its reason", async () => {
    const controller = new AbortController();
    const slow = new StubEmbedder(64, () => {
      controller.abort(new DeadlineExceeded());
      return [Array.from({ length: 64 }, () => 1)];
    });
    const error = await new CreateProduct({ products, embedder: slow })
      .execute(VALID, { catalogue: "default", signal: controller.signal })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(DeadlineExceeded);
    expect(products.products).toHaveLength(0);
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
        .execute(VALID, { catalogue: "default" })
        .catch((caught) => caught);
      expect(error).toBeInstanceOf(EmbeddingUnavailable);
      expect(stub.calls).toHaveLength(1);
      expect(repository.products).toHaveLength(0);
    });
  }

  test("the fake embedder failing or returning zeros stores nothing either", async () => {
    for (const mode of ["fail", "zero"] as const) {
      embedder.mode = mode;
      await expect(createProduct.execute(VALID, { catalogue: "default" })).rejects.toBeInstanceOf(EmbeddingUnavailable);
    }
    expect(products.products).toHaveLength(0);
  });

  test("the embedder's own error is kept as the cause, not shown in the message", async () => {
    const stub = new StubEmbedder(4, () => {
      throw new Error("sk-secret-key rejected");
    });
    const error = await new CreateProduct({ products, embedder: stub })
      .execute(VALID, { catalogue: "default" })
      .catch((caught) => caught);
    expect(error).toBeInstanceOf(EmbeddingUnavailable);
    expect((error as Error).message).not.toContain("sk-secret-key");
    expect(((error as Error).cause as Error).message).toContain("sk-secret-key");
  });
});
