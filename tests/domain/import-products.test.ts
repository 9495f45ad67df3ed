import { beforeEach, describe, expect, test } from "bun:test";
import { DeadlineExceeded } from "../../src/domain/errors.ts";
import { type ImportInput, ImportProducts } from "../../src/domain/import-products.ts";
import type { StoredProduct } from "../../src/domain/product.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { EmbeddingPurpose } from "../../src/ports/embedder.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { GateEmbedder } from "../fakes/gate-embedder.ts";
import { MemoryProductRepository } from "../fakes/memory-product-repository.ts";

/** Counts the texts it embeds per call, and fails from call `failFrom` on when set. */
class CountingEmbedder extends FakeEmbedder {
  batches: number[] = [];
  failFrom: number | undefined;

  override async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    this.batches.push(texts.length);
    if (this.failFrom !== undefined && this.batches.length >= this.failFrom) throw new Error("proveedor caído");
    return super.embed(texts, purpose, signal);
  }
}

const items = (...values: unknown[]): ImportInput[] => values.map((value) => ({ value }));

const product = (i: number, extra: object = {}) => ({
  name: `Producto ${i}`,
  description: `Descripción ${i}`,
  category: i % 2 === 0 ? "par" : "impar",
  sku: `SKU-${i}`,
  ...extra,
});

let products: MemoryProductRepository;
let embedder: CountingEmbedder;
let importer: ImportProducts;

beforeEach(() => {
  products = new MemoryProductRepository(32);
  embedder = new CountingEmbedder(32);
  importer = new ImportProducts({ products, embedder });
});

describe("ImportProducts", () => {
  test("stores the valid items and reports each invalid one by position and reason", async () => {
    const report = await importer.execute(
      [
        ...items(product(0), { name: "Sin categoría", description: "" }, product(2), "no soy un objeto"),
        { problem: "El elemento no es un JSON válido" },
        ...items(
          { ...product(5), embedding: [1, 2] },
          { ...product(6), name: " " },
          { ...product(7), sku: 7 },
          product(8, { sku: null, id: 3, brand: "Marca" }),
        ),
      ],
      { catalogue: "default" },
    );
    expect(report.counts).toEqual({ created: 3, updated: 0, unchanged: 0, failed: 6 });
    expect(report.items.map((item) => item.status)).toEqual([
      "created",
      "failed",
      "created",
      "failed",
      "failed",
      "failed",
      "failed",
      "failed",
      "created",
    ]);
    expect(report.items[0]).toEqual({ index: 0, status: "created", id: expect.any(Number), sku: "SKU-0" });
    expect(report.items[1]?.detail).toBe("Campo 'category': es obligatorio");
    expect(report.items[3]?.detail).toContain("objeto");
    expect(report.items[4]?.detail).toBe("El elemento no es un JSON válido");
    expect(report.items[5]?.detail).toBe("Campo 'embedding': no está permitido");
    expect(report.items[6]?.detail).toBe("El campo 'name' no puede estar vacío");
    expect(report.items[7]?.detail).toBe("Campo 'sku': debe ser un texto");
    expect(report.items[8]).toEqual({ index: 8, status: "created", id: expect.any(Number) });
    expect(products.products.map((stored) => stored.name)).toEqual(["Producto 0", "Producto 2", "Producto 8"]);
  });

  test("invisible characters inside the fields are removed, as on every other write path", async () => {
    await importer.execute(
      items(product(1, { name: "Producto\u202E 1", category: "i\u200Bmpar", sku: "SKU\u2060-1" })),
      { catalogue: "default" },
    );
    expect(products.products).toEqual([
      expect.objectContaining({ name: "Producto 1", category: "impar", sku: "SKU-1", description: "Descripción 1" }),
    ]);
  });

  test("importing the same items again embeds nothing and changes nothing: every item is unchanged", async () => {
    const catalogue = items(...Array.from({ length: 10 }, (_, i) => product(i)));
    const first = await importer.execute(catalogue, { catalogue: "default", chunkSize: 4 });
    expect(first.counts).toEqual({ created: 10, updated: 0, unchanged: 0, failed: 0 });
    const before = await products.in("default").list({ limit: 100, order: "id" });
    const versions = await products.in("default").versions(before.items.map((item) => item.id));
    embedder.batches = [];

    const again = await importer.execute(catalogue, { catalogue: "default", chunkSize: 4 });
    expect(again.counts).toEqual({ created: 0, updated: 0, unchanged: 10, failed: 0 });
    expect(again.items.map((item) => item.id)).toEqual(first.items.map((item) => item.id));
    expect(embedder.batches.reduce((sum, size) => sum + size, 0)).toBe(0);
    expect(await products.in("default").versions(before.items.map((item) => item.id))).toEqual(versions);
  });

  test("upserts by sku: a changed category or name is embedded again (both are in the embedded text)", async () => {
    await importer.execute(items(product(1), product(2), product(3)), { catalogue: "default" });
    embedder.calls.length = 0;
    const report = await importer.execute(
      items(product(1, { category: "otra" }), product(2, { name: "Nombre nuevo" }), product(3), product(4)),
      { catalogue: "default" },
    );
    expect(report.items.map((item) => item.status)).toEqual(["updated", "updated", "unchanged", "created"]);
    expect(embedder.calls.map((call) => call.text)).toEqual([
      "Producto 1. otra. Descripción 1",
      "Nombre nuevo. par. Descripción 2",
      "Producto 4. par. Descripción 4",
    ]);
    expect(products.products.find((stored) => stored.sku === "SKU-1")?.category).toBe("otra");
    expect(products.products).toHaveLength(4);
  });

  test("a stored product embedded from an older form of its text (a stale digest) is embedded again, once", async () => {
    await importer.execute(items(product(1), product(2)), { catalogue: "default" });
    // As a catalogue stored before the category was part of the embedded text: the digest of "name\ndescription".
    const stored = (await products.in("default").get(products.products[0]?.id as number)) as StoredProduct;
    const { sku: _sku, ...fields } = product(1);
    expect(
      await products.in("default").update(stored.id, stored.version, {
        fields: { ...fields, sku: stored.sku },
        embedding: { vector: Array(32).fill(1), contentDigest: "digest of the old text" },
      }),
    ).toHaveProperty("updated");
    embedder.calls.length = 0;
    const report = await importer.execute(items(product(1), product(2)), { catalogue: "default" });
    expect(report.items.map((item) => item.status)).toEqual(["updated", "unchanged"]);
    expect(embedder.calls.map((call) => call.text)).toEqual(["Producto 1. impar. Descripción 1"]);
    embedder.calls.length = 0;
    const again = await importer.execute(items(product(1), product(2)), { catalogue: "default" });
    expect(again.items.map((item) => item.status)).toEqual(["unchanged", "unchanged"]);
    expect(embedder.calls).toEqual([]);
  });

  describe("a sku repeated in one import is an update: the later item wins, every item is counted", () => {
    test("a new sku: the first is created, a later one with other fields updated, the same fields unchanged", async () => {
      const report = await importer.execute(
        items(product(1), product(2), product(1, { name: "Renombrado" }), product(1, { name: "Renombrado" })),
        { catalogue: "default" },
      );
      expect(report.items.map((item) => item.status)).toEqual(["created", "created", "updated", "unchanged"]);
      expect(report.counts).toEqual({ created: 2, updated: 1, unchanged: 1, failed: 0 });
      const id = report.items[0]?.id;
      expect(report.items.filter((item) => item.sku === "SKU-1")).toEqual(
        [0, 2, 3].map((index) => expect.objectContaining({ index, id, sku: "SKU-1" })),
      );
      expect(products.products.map((stored) => [stored.sku, stored.name]).sort()).toEqual([
        ["SKU-1", "Renombrado"],
        ["SKU-2", "Producto 2"],
      ]);
    });

    test("a stored sku: each item is compared with the one before it; the last is what is stored", async () => {
      await importer.execute(items(product(1)), { catalogue: "default" });
      const report = await importer.execute(items(product(1, { category: "otra" }), product(1)), {
        catalogue: "default",
      });
      expect(report.items.map((item) => item.status)).toEqual(["updated", "updated"]);
      expect(products.products).toEqual([expect.objectContaining({ sku: "SKU-1", category: "impar" })]);
    });

    test("repeats across chunks, in pairs: one write per chunk, only the text that is stored is embedded", async () => {
      const writeMany = products.in("default").writeMany.bind(products.in("default"));
      let writes = 0;
      products.in("default").writeMany = async (batch) => {
        writes++;
        return writeMany(batch);
      };
      // SKU-0 .. SKU-9, each twice in a row (the second with a new name), then SKU-0 a third time.
      const values = [
        ...Array.from({ length: 10 }, (_, i) => [product(i), product(i, { name: `Nuevo ${i}` })]).flat(),
        product(0, { name: "Último" }),
      ];
      const report = await importer.execute(items(...values), { catalogue: "default", chunkSize: 4 });
      expect(report.counts).toEqual({ created: 10, updated: 11, unchanged: 0, failed: 0 });
      expect(report.items.map((item) => item.status).slice(0, 4)).toEqual(["created", "updated", "created", "updated"]);
      expect(writes).toBe(3); // 10 products to write, 4 a chunk
      expect(embedder.calls.map((call) => call.text).sort()).toEqual(
        [
          "Último. par. Descripción 0",
          ...Array.from(
            { length: 9 },
            (_, i) => `Nuevo ${i + 1}. ${i % 2 === 0 ? "impar" : "par"}. Descripción ${i + 1}`,
          ),
        ].sort(),
      );
      expect(products.products.map((stored) => stored.name).sort()).toEqual(
        ["Último", ...Array.from({ length: 9 }, (_, i) => `Nuevo ${i + 1}`)].sort(),
      );
    });

    test("when the write fails, every item of that sku fails: none of them was stored", async () => {
      products.down = true;
      const report = await importer.execute(items(product(1), product(1, { name: "Otro" })), { catalogue: "default" });
      expect(report.items.map((item) => [item.status, item.detail])).toEqual([
        ["failed", "No se guardó: La base de datos no está disponible"],
        ["failed", "No se guardó: La base de datos no está disponible"],
      ]);
    });
  });

  test("texts are embedded a chunk at a time, in a few calls, never one per product", async () => {
    const report = await importer.execute(items(...Array.from({ length: 25 }, (_, i) => product(i))), {
      catalogue: "default",
      chunkSize: 10,
    });
    expect(report.counts.created).toBe(25);
    expect(embedder.batches).toEqual([10, 10, 5]);
  });

  test("a provider outage mid-import keeps what was stored and fails only the rest, saying why", async () => {
    embedder.failFrom = 3;
    const report = await importer.execute(items(...Array.from({ length: 25 }, (_, i) => product(i))), {
      catalogue: "default",
      chunkSize: 10,
    });
    expect(report.counts).toEqual({ created: 20, updated: 0, unchanged: 0, failed: 5 });
    expect(report.items.slice(20).every((item) => item.status === "failed")).toBe(true);
    expect(report.items[24]?.detail).toBe(
      "No se guardó: El servicio de embeddings no está disponible. Inténtelo de nuevo más tarde",
    );
    expect(products.products).toHaveLength(20);

    // Run again once the provider is back: the stored ones are unchanged, the rest are created.
    embedder.failFrom = undefined;
    const resumed = await importer.execute(items(...Array.from({ length: 25 }, (_, i) => product(i))), {
      catalogue: "default",
      chunkSize: 10,
    });
    expect(resumed.counts).toEqual({ created: 5, updated: 0, unchanged: 20, failed: 0 });
  });

  test("a database outage fails the chunks not written, the import itself answers", async () => {
    const writeMany = products.in("default").writeMany.bind(products.in("default"));
    let calls = 0;
    products.in("default").writeMany = async (writes) => {
      if (++calls === 2) products.down = true;
      return writeMany(writes);
    };
    const report = await importer.execute(items(...Array.from({ length: 6 }, (_, i) => product(i))), {
      catalogue: "default",
      chunkSize: 3,
    });
    expect(report.items.map((item) => item.status)).toEqual([
      "created",
      "created",
      "created",
      "failed",
      "failed",
      "failed",
    ]);
    expect(report.items[3]?.detail).toBe("No se guardó: La base de datos no está disponible");
  });

  describe("chunks embedded ahead of the one written: one for a local model, callsAtOnce for a remote provider", () => {
    /** An import of 12 products in chunks of 2 through a gate embedder saying `callsAtOnce`. */
    function gatedImport(callsAtOnce: number | undefined) {
      const gate = new GateEmbedder(32);
      gate.callsAtOnce = callsAtOnce;
      const gated = new ImportProducts({ products, embedder: gate });
      const report = gated.execute(items(...Array.from({ length: 12 }, (_, i) => product(i))), {
        catalogue: "default",
        chunkSize: 2,
      });
      return { gate, report };
    }
    /** Lets the import run until it waits on the gate again (nothing else holds it). */
    const settle = () => Bun.sleep(20);

    for (const callsAtOnce of [undefined, 1, 3]) {
      test(`callsAtOnce ${callsAtOnce ?? "unset"}: ${callsAtOnce ?? 1} chunk(s) embedding at once, and as many while one is written`, async () => {
        const { gate, report } = gatedImport(callsAtOnce);
        const ahead = callsAtOnce ?? 1;
        const first = await gate.next();
        await settle();
        expect(gate.waiting).toBe(ahead - 1); // the first chunks' calls went out together
        first.pass();
        await settle();
        // The first chunk is written, and the next `ahead` chunks are being embedded.
        expect(products.products.map((stored) => stored.sku)).toEqual(["SKU-0", "SKU-1"]);
        expect(gate.waiting).toBe(ahead);
        gate.openAll();
        expect((await report).counts.created).toBe(12);
        // Written in order, whatever order the calls came back in.
        expect(products.products.map((stored) => stored.sku)).toEqual(Array.from({ length: 12 }, (_, i) => `SKU-${i}`));
      });
    }

    test("a call ahead that fails stops the import there: the chunks before it are written, it and every later one failed, even one already embedded", async () => {
      const { gate, report } = gatedImport(3);
      const calls = [await gate.next(), await gate.next(), await gate.next()];
      calls[2]?.pass(); // the third chunk is embedded first
      calls[1]?.fail();
      calls[0]?.pass();
      gate.openAll();
      const { items: results, counts } = await report;
      expect(counts).toEqual({ created: 2, updated: 0, unchanged: 0, failed: 10 });
      expect(results.slice(2).every((item) => item.detail?.startsWith("No se guardó: "))).toBe(true);
      expect(products.products.map((stored) => stored.sku)).toEqual(["SKU-0", "SKU-1"]);
    });
  });

  test("an aborted signal stops before the next write and throws its reason", async () => {
    const controller = new AbortController();
    const report = importer.execute(items(...Array.from({ length: 6 }, (_, i) => product(i))), {
      catalogue: "default",
      chunkSize: 2,
      signal: controller.signal,
      onChunk: (results) => {
        if (results.length >= 2) controller.abort(new DeadlineExceeded());
      },
    });
    await expect(report).rejects.toBeInstanceOf(DeadlineExceeded);
    expect(products.products.length).toBeLessThan(6);
  });
});

describe("ImportProducts of a catalogue export", () => {
  /** A vector of the embedder's 32 dimensions unlike any it would compute. */
  const given = (i: number) => Array.from({ length: 32 }, (_, k) => (k === i % 32 ? 1 : 0.25));
  const exportSpace = () => ({ model: embedder.model, dimension: embedder.dimension });

  test("with the embedder's model and dimension, stores each item's embedding and embeds nothing", async () => {
    const report = await importer.execute(
      items(product(0, { embedding: given(0) }), product(1, { embedding: given(1), id: 7 })),
      { catalogue: "default", embeddings: exportSpace() },
    );
    expect(report.counts).toMatchObject({ created: 2, failed: 0 });
    expect(embedder.batches).toEqual([]);
    expect(products.embeddingOf(1)).toEqual(given(0));
    expect(products.embeddingOf(2)).toEqual(given(1));
  });

  test("an item without an embedding is embedded; a changed text takes its new embedding from the file", async () => {
    await importer.execute(items(product(0)), { catalogue: "default" });
    embedder.batches = [];
    const report = await importer.execute(
      items(product(0, { name: "Nuevo nombre", embedding: given(5) }), product(1)),
      { catalogue: "default", embeddings: exportSpace() },
    );
    expect(report.counts).toMatchObject({ created: 1, updated: 1, failed: 0 });
    expect(embedder.batches).toEqual([1]);
    expect(products.embeddingOf(1)).toEqual(given(5));
  });

  test("an unusable embedding fails its item, saying why, like a provider's would be refused", async () => {
    const report = await importer.execute(
      items(
        product(0, { embedding: [1, 2, 3] }),
        product(1, { embedding: new Array(32).fill(0) }),
        product(2, { embedding: [...given(2).slice(1), Number.POSITIVE_INFINITY] }),
        product(3, { embedding: "0.1,0.2" }),
        product(4, { embedding: given(4) }),
      ),
      { catalogue: "default", embeddings: exportSpace() },
    );
    expect(report.items.map((item) => item.detail ?? item.status)).toEqual([
      "Campo 'embedding': debe tener 32 números, tiene 3",
      "Campo 'embedding': es un vector de ceros, que no tiene dirección",
      "Campo 'embedding': el número 31 no es finito",
      "Campo 'embedding': debe ser una lista de números",
      "created",
    ]);
    expect(products.products).toHaveLength(1);
  });

  test("of another model or dimension, the embeddings are ignored and the texts embedded", async () => {
    for (const space of [
      { model: "otro-modelo", dimension: 32 },
      { model: embedder.model, dimension: 64 },
    ]) {
      expect(await importer.takesEmbeddingsOf(space, "default")).toBe(false);
    }
    const report = await importer.execute(items(product(0, { embedding: [1, 2] })), {
      catalogue: "default",
      embeddings: { model: "otro-modelo", dimension: 2 },
    });
    expect(report.counts).toMatchObject({ created: 1, failed: 0 });
    expect(embedder.batches).toEqual([1]);
    expect(products.embeddingOf(1)).toHaveLength(32);
    expect(await importer.takesEmbeddingsOf(exportSpace(), "default")).toBe(true);
  });
});
