/**
 * Import files read as streams (file-items.ts): every format, plain or gzip, and the progress an
 * import reports, which must follow the items read, not what the file reader has read ahead.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { type FileFormat, openImportFile } from "../../../src/adapters/import/file-items.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

const tempDir = useTempDirs("file-items");

const product = (i: number) => ({
  sku: `SKU-${i}`,
  name: `Producto ${i}`,
  description: `Descripción del producto número ${i}, con texto suficiente para ocupar una línea entera`,
  category: i % 2 === 0 ? "par" : "impar",
});

const COUNT = 20_000;
/** How far ahead of the item just read the progress may be: one piece handed to the parser. */
const SLACK = 16 * 1024;

/** A file's lines, and the byte offset where each ends (its newline included). */
function lines(rows: string[]): { text: string; ends: number[] } {
  const encoder = new TextEncoder();
  let offset = 0;
  const ends = rows.map((row) => (offset += encoder.encode(`${row}\n`).byteLength));
  return { text: rows.map((row) => `${row}\n`).join(""), ends };
}

/**
 * Reads every item of the file at `path` (whose items end at `ends`, byte offsets in its content),
 * checking after the first, the middle and the last item that the progress is where that item ends.
 */
async function expectProgressFollowsItems(path: string, ends: number[], format: FileFormat) {
  const source = await openImportFile(path);
  expect(source.format).toBe(format);
  expect(source.bytesTotal).toBe(ends.at(-1) as number);
  let read = 0;
  for await (const item of source.items) {
    expect(item).toEqual({ index: read, value: product(read) });
    read++;
    if (read === 1 || read === COUNT / 2 || read === COUNT) {
      const end = ends[read - 1 + (format === "csv" ? 1 : 0)] as number; // a CSV's first line is its header
      expect(source.bytesDone()).toBeGreaterThanOrEqual(end - 1);
      expect(source.bytesDone()).toBeLessThanOrEqual(end + SLACK);
    }
  }
  expect(read).toBe(COUNT);
  expect(source.bytesDone()).toBe(source.bytesTotal);
}

// About 3 MB each: a reader's read-ahead (Bun reads files 512 KB at a time) would show from the first
// item as 100 % of a compressed file, and as at least 256 KB of a plain one.
describe("the progress of an import file follows the items read, not what the reader read ahead", () => {
  const products = Array.from({ length: COUNT }, (_, i) => product(i));

  for (const compressed of [false, true]) {
    test(`JSON Lines${compressed ? ", gzip" : ""}`, async () => {
      const { text, ends } = lines(products.map((item) => JSON.stringify(item)));
      const path = join(tempDir(), compressed ? "catalogue.jsonl.gz" : "catalogue.jsonl");
      writeFileSync(path, compressed ? gzipSync(text) : text);
      await expectProgressFollowsItems(path, ends, "jsonl");
    });

    test(`CSV${compressed ? ", gzip" : ""}`, async () => {
      const rows = products.map(
        ({ sku, name, description, category }) => `${sku},${name},"${description}",${category}`,
      );
      const { text, ends } = lines(["sku,name,description,category", ...rows]);
      const path = join(tempDir(), compressed ? "catalogue.csv.gz" : "catalogue.csv");
      writeFileSync(path, compressed ? gzipSync(text) : text);
      await expectProgressFollowsItems(path, ends, "csv");
    });
  }
});
