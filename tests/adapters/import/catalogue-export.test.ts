/**
 * The catalogue export file (catalogue-export.ts) written and read back by the import's reader
 * (file-items.ts): its header, plain and gzip, and what a broken or interrupted export leaves.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { writeCatalogueExport } from "../../../src/adapters/import/catalogue-export.ts";
import { openImportFile, UnreadableImport } from "../../../src/adapters/import/file-items.ts";
import type { CatalogueExport, ExportHeader } from "../../../src/domain/export-catalogue.ts";
import type { ExportedProduct } from "../../../src/ports/product-repository.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

const tempDir = useTempDirs("catalogue-export");

const header: ExportHeader = {
  model: "all-MiniLM-L6-v2",
  dimension: 3,
  embeddings: true,
  embeddedAttributes: [],
  exportedAt: new Date("2026-11-25T10:00:00.000Z"),
};

const products: ExportedProduct[] = [
  {
    id: 1,
    sku: "A-1",
    name: "Cafetera",
    description: "Espresso, 15 bares",
    category: "Cocina",
    embedding: [0.1, -2, 3e-8],
  },
  { id: 4, name: "Taza «térmica»", description: "", category: "Cocina", embedding: [1, 0, 0] },
];

function exportOf(items: AsyncGenerator<ExportedProduct>, embeddings = true): CatalogueExport {
  return { header: { ...header, embeddings }, products: items };
}

async function* listed(items: ExportedProduct[]): AsyncGenerator<ExportedProduct> {
  yield* items;
}

async function read(path: string) {
  const source = await openImportFile(path);
  const items: unknown[] = [];
  for await (const item of source.items) items.push(item);
  return { source, items };
}

describe("a catalogue export file", () => {
  test("JSON Lines: a header line, then each product as an import item; gzip when asked", async () => {
    const dir = tempDir();
    for (const [name, gzip] of [
      ["catalogue.jsonl", false],
      ["catalogue.jsonl.gz", true],
    ] as const) {
      const path = join(dir, name);
      expect(await writeCatalogueExport(path, exportOf(listed(products)), { gzip })).toEqual({ products: 2 });
      const bytes = readFileSync(path);
      const lines = (gzip ? gunzipSync(bytes) : bytes).toString("utf8").trimEnd().split("\n");
      expect(JSON.parse(lines[0] as string)).toEqual({
        sku_search_export: 1,
        model: "all-MiniLM-L6-v2",
        dimension: 3,
        embeddings: true,
        exported_at: "2026-11-25T10:00:00.000Z",
      });
      expect(lines.slice(1).map((line) => JSON.parse(line))).toEqual(products);

      const { source, items } = await read(path);
      expect(source).toMatchObject({ format: "jsonl", gzip, exportHeader: header });
      expect(items).toEqual(products.map((value, index) => ({ index: index + 1, value })));
    }
    expect(readdirSync(dir).sort()).toEqual(["catalogue.jsonl", "catalogue.jsonl.gz"]);
  });

  test("without embeddings, no product carries one and the header says so", async () => {
    const path = join(tempDir(), "catalogue.jsonl");
    const plain = products.map(({ embedding: _, ...product }) => product);
    await writeCatalogueExport(path, exportOf(listed(plain), false), { gzip: false });
    const { source, items } = await read(path);
    expect(source.exportHeader).toEqual({ ...header, embeddings: false });
    expect(items).toEqual(plain.map((value, index) => ({ index: index + 1, value })));
  });

  test("the attributes the catalogue embedded are in the header, and read back from it", async () => {
    const path = join(tempDir(), "catalogue.jsonl");
    const embedding = { ...header, embeddedAttributes: ["brand", "color"] };
    await writeCatalogueExport(path, { header: embedding, products: listed(products) }, { gzip: false });
    expect(JSON.parse(readFileSync(path, "utf8").split("\n")[0] as string)).toMatchObject({
      embedded_attributes: ["brand", "color"],
    });
    expect((await read(path)).source.exportHeader).toEqual(embedding);
  });

  test("an export that fails midway leaves no file, and an earlier export at that name stays whole", async () => {
    const dir = tempDir();
    const path = join(dir, "catalogue.jsonl");
    writeFileSync(path, "the earlier export\n");
    async function* failing(): AsyncGenerator<ExportedProduct> {
      yield products[0] as ExportedProduct;
      throw new Error("database gone");
    }
    await expect(writeCatalogueExport(path, exportOf(failing()), { gzip: false })).rejects.toThrow("database gone");
    expect(readFileSync(path, "utf8")).toBe("the earlier export\n");
    expect(readdirSync(dir)).toEqual(["catalogue.jsonl"]);
  });

  test("an ordinary JSON Lines file has no header; a header of another version or incomplete is unreadable", async () => {
    const dir = tempDir();
    const write = (name: string, lines: unknown[]) => {
      writeFileSync(join(dir, name), lines.map((line) => JSON.stringify(line)).join("\n"));
      return join(dir, name);
    };
    const ordinary = await read(write("ordinary.jsonl", products));
    expect(ordinary.source.exportHeader).toBeUndefined();
    expect(ordinary.items).toHaveLength(2);

    // Only the first line can be the header: a later one is an item like any other (and fails as a product).
    const later = await read(write("later.jsonl", [products[0], { sku_search_export: 1 }]));
    expect(later.source.exportHeader).toBeUndefined();
    expect(later.items).toEqual([
      { index: 0, value: products[0] },
      { index: 1, value: { sku_search_export: 1 } },
    ]);

    const headerLine = { sku_search_export: 1, model: "m", dimension: 3, embeddings: true, exported_at: "2026-11-25" };
    const future = write("future.jsonl", [{ ...headerLine, sku_search_export: 2 }, products[0]]);
    await expect(openImportFile(future)).rejects.toThrow(
      new UnreadableImport("export header: format version 2 is not one this program reads (1)"),
    );
    for (const broken of [{ dimension: "3" }, { model: "" }, { embeddings: "yes" }, { exported_at: "ayer" }]) {
      const path = write("broken.jsonl", [{ ...headerLine, ...broken }, products[0]]);
      await expect(openImportFile(path)).rejects.toBeInstanceOf(UnreadableImport);
    }
  });
});
