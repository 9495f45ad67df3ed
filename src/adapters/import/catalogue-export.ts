/**
 * A catalogue export as a file: JSON Lines, gzip-compressed when asked. The first line is a header
 * naming the format and its version, the vector space of the embeddings and when it was made:
 *
 *   {"sku_search_export":1,"model":"all-MiniLM-L6-v2","dimension":384,"embeddings":true,"exported_at":"2026-11-25T10:00:00.000Z"}
 *
 * (with `"embedded_attributes":["brand"]` when the catalogue embeds attributes with each text: its
 * embeddings are then of those texts, and an import takes them only into a catalogue that embeds the same)
 *
 * then one product per line, by id: `{"id":1,"sku":"A-1","name":...,"description":...,"category":...,"embedding":[...]}`
 * (`sku` and `attributes` only when set, `embedding` only with embeddings). The product lines are ordinary import
 * items (the import ignores `id`), so `import` reads the file like any JSON Lines file; it takes
 * the header from the first line (file-items.ts), and with it the embeddings when their model
 * and dimension are the configured embedder's.
 */
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type { CatalogueExport, ExportHeader } from "../../domain/export-catalogue.ts";
import type { ExportedProduct } from "../../ports/product-repository.ts";

/** The header's key (its value is the format's version): no product has it. */
export const EXPORT_FORMAT_KEY = "sku_search_export";
export const EXPORT_FORMAT_VERSION = 1;

/** The header as its JSON line's object. */
export function headerRecord(header: ExportHeader): Record<string, unknown> {
  return {
    [EXPORT_FORMAT_KEY]: EXPORT_FORMAT_VERSION,
    model: header.model,
    dimension: header.dimension,
    embeddings: header.embeddings,
    exported_at: header.exportedAt.toISOString(),
    ...(header.embeddedAttributes.length > 0 ? { embedded_attributes: header.embeddedAttributes } : {}),
  };
}

function productRecord({
  id,
  sku,
  name,
  description,
  category,
  attributes,
  embedding,
}: ExportedProduct): Record<string, unknown> {
  return {
    id,
    ...(sku === undefined ? {} : { sku }),
    name,
    description,
    category,
    ...(attributes === undefined ? {} : { attributes }),
    ...(embedding === undefined ? {} : { embedding }),
  };
}

export interface ExportFileOptions {
  gzip: boolean;
  /** Called as products are written, with how many so far. */
  onProgress?: (products: number) => void;
}

/**
 * Writes `exported` to `path`: into `path.partial` first, renamed when complete, so a file at
 * `path` is always a whole export (an interrupted or failed export leaves none behind, and an
 * older export at `path` stays until the new one is complete). Written as it is read, with the
 * file's backpressure: memory stays that of a page of products. Returns how many products it holds.
 */
export async function writeCatalogueExport(
  path: string,
  exported: CatalogueExport,
  options: ExportFileOptions,
): Promise<{ products: number }> {
  let products = 0;
  async function* lines(): AsyncGenerator<string> {
    yield `${JSON.stringify(headerRecord(exported.header))}\n`;
    for await (const product of exported.products) {
      yield `${JSON.stringify(productRecord(product))}\n`;
      products++;
      if (products % 1000 === 0) options.onProgress?.(products);
    }
  }
  const partial = `${path}.partial`;
  const source = Readable.from(lines());
  try {
    await (options.gzip
      ? pipeline(source, createGzip(), createWriteStream(partial))
      : pipeline(source, createWriteStream(partial)));
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  options.onProgress?.(products);
  return { products };
}
