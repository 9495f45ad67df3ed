/**
 * `import` and `export` as admin operations (admin-channel.ts): on the embedded database held by the
 * running service, `import` reads its file and hands each batch to the service, which stores it
 * through the same use case as POST /products/bulk and answers each item's outcome; `export` asks the
 * service for the catalogue a page at a time and writes the file itself.
 */
import { CatalogueNotFound, InvalidInput } from "../../domain/errors.ts";
import type { ExportedEmbeddings, ImportInput } from "../../domain/import-products.ts";
import type { ExportedProduct } from "../../ports/product-repository.ts";
import { type AdminArgs, type AdminOperation, textArg } from "./operation.ts";

/** The export's embeddings the command says its file carries (model, dimension, embedded attributes), if any. */
function embeddingsArg(args: AdminArgs): ExportedEmbeddings | undefined {
  const value = args.embeddings;
  if (value === undefined || value === null) return undefined;
  const { model, dimension, embeddedAttributes } = value as Partial<ExportedEmbeddings>;
  if (typeof model !== "string" || typeof dimension !== "number") {
    throw new InvalidInput("El argumento 'embeddings' debe decir su modelo y su dimensión");
  }
  return { model, dimension, embeddedAttributes: Array.isArray(embeddedAttributes) ? embeddedAttributes : [] };
}

export const PRODUCT_OPERATIONS: Record<string, AdminOperation> = {
  /** Before the first batch: the catalogue exists, the configured space, and whether an export's embeddings are taken. */
  "products.import-start": async (root, args) => {
    const catalogue = textArg(args, "catalogue");
    if (!(await (await root.manageCatalogues()).exists(catalogue))) throw new CatalogueNotFound(catalogue);
    const importer = await root.importProducts();
    const embeddings = embeddingsArg(args);
    return {
      space: importer.space,
      ...(embeddings ? { takes_embeddings: await importer.takesEmbeddingsOf(embeddings, catalogue) } : {}),
    };
  },
  /**
   * One page of an export: its header, and the products whose id is above `after_id` (at most
   * `limit`), with their embeddings when asked. Fewer than `limit`: the last page.
   */
  "products.export-page": async (root, args) => {
    const limit = Number(args.limit);
    const afterId = Number(args.after_id);
    if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(afterId) || afterId < 0) {
      throw new InvalidInput("Los argumentos 'limit' y 'after_id' deben ser números enteros");
    }
    const exported = await (await root.exportCatalogue(textArg(args, "catalogue"))).execute({
      withEmbeddings: args.with_embeddings === true,
      pageSize: limit,
      afterId,
    });
    const products: ExportedProduct[] = [];
    for await (const product of exported.products) {
      products.push(product);
      if (products.length === limit) break;
    }
    return { header: exported.header, products };
  },
  /** One batch of the file's items (each `{value}` or `{problem}`, as read): each item's outcome. */
  "products.import": async (root, args, signal) => {
    const items = args.items;
    if (!Array.isArray(items)) throw new InvalidInput("El argumento 'items' debe ser una lista");
    const embeddings = embeddingsArg(args);
    const { items: results, counts } = await (await root.importProducts()).execute(items as ImportInput[], {
      catalogue: textArg(args, "catalogue"),
      ...(signal ? { signal } : {}),
      ...(embeddings ? { embeddings } : {}),
    });
    return { items: results, counts };
  },
};
