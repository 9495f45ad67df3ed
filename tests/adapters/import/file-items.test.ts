/**
 * Import files read as streams (file-items.ts): every format, plain or gzip, and the progress an
 * import reports, which must follow the items read, not what the file reader has read ahead.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { type FileSource, openImportFile } from "../../../src/adapters/import/file-items.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

const tempDir = useTempDirs("file-items");

const product = (i: number) => ({
  sku: `SKU-${i}`,
  name: `Producto ${i}`,
  description: `Descripción del producto número ${i}, con texto suficiente para ocupar una línea entera`,
  category: i % 2 === 0 ? "par" : "impar",
});

/** 20,000 products (about 3 MB) as JSON Lines, plain and gzip-compressed. */
function catalogue(dir: string): { plain: string; gzip: string; count: number } {
  const count = 20_000;
  const text = `${Array.from({ length: count }, (_, i) => JSON.stringify(product(i))).join("\n")}\n`;
  const plain = join(dir, "catalogue.jsonl");
  const gzip = join(dir, "catalogue.jsonl.gz");
  writeFileSync(plain, text);
  writeFileSync(gzip, gzipSync(text));
  return { plain, gzip, count };
}

/** Reads every item, noting the progress fraction after the first item and after half of them. */
async function readAll(source: FileSource, count: number) {
  const fractions: number[] = [];
  let read = 0;
  for await (const item of source.items) {
    expect(item).toEqual({ index: read, value: product(read) });
    read++;
    if (read === 1 || read === count / 2) fractions.push(source.bytesDone() / source.bytesTotal);
  }
  return { read, fractions, end: source.bytesDone() / source.bytesTotal };
}

describe("the progress of an import file", () => {
  for (const kind of ["plain", "gzip"] as const) {
    test(`${kind}: follows the items read, from near 0 to exactly the whole content`, async () => {
      const files = catalogue(tempDir());
      const source = await openImportFile(files[kind]);
      expect(source).toMatchObject({ format: "jsonl", gzip: kind === "gzip" });
      const { read, fractions, end } = await readAll(source, files.count);
      expect(read).toBe(files.count);
      // Within a slice of the item read: the reader's own read-ahead (512 KB chunks) would show as
      // 100 % from the first item for the compressed file, about 20 % for the plain one.
      expect(fractions[0]).toBeLessThan(0.01);
      expect(fractions[1]).toBeGreaterThan(0.49);
      expect(fractions[1]).toBeLessThan(0.51);
      expect(end).toBe(1);
    });
  }

  test("CSV: follows the rows parsed too", async () => {
    const dir = tempDir();
    const count = 20_000;
    const rows = Array.from({ length: count }, (_, i) => {
      const { sku, name, description, category } = product(i);
      return `${sku},${name},"${description}",${category}`;
    });
    const file = join(dir, "catalogue.csv.gz");
    writeFileSync(file, gzipSync(`sku,name,description,category\n${rows.join("\n")}\n`));
    const source = await openImportFile(file);
    expect(source.format).toBe("csv");
    const { read, fractions, end } = await readAll(source, count);
    expect(read).toBe(count);
    expect(fractions[0]).toBeLessThan(0.02);
    expect(fractions[1]).toBeGreaterThan(0.48);
    expect(fractions[1]).toBeLessThan(0.52);
    expect(end).toBe(1);
  });
});
