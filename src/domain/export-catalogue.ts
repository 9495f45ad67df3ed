import type { Clock } from "../ports/clock.ts";
import type { EmbeddingSpace } from "../ports/embedding-space.ts";
import type { ExportedProduct, ProductRepository } from "../ports/product-repository.ts";

/** What an export says about itself before its products: when it was made, and which vector space its embeddings are in. */
export interface ExportHeader extends EmbeddingSpace {
  /** Whether each product carries its embedding. */
  embeddings: boolean;
  /** The attributes the catalogue embedded with each product's text (its setting; none by default). */
  embeddedAttributes: string[];
  exportedAt: Date;
}

export interface CatalogueExport {
  header: ExportHeader;
  /** Every product by id, read a page at a time as they are taken. */
  products: AsyncGenerator<ExportedProduct>;
}

export interface ExportOptions {
  /** Each product with its embedding (and the header naming their model and dimension). */
  withEmbeddings: boolean;
  /** Products read together (default 500: about 20 MB of 3072-d vectors as text). */
  pageSize?: number;
  /** Aborts (with the reason to throw) between pages. */
  signal?: AbortSignal;
  /** Only the products whose id is above it (default 0: all): where a previous page of the export ended. */
  afterId?: number;
}

export interface Deps {
  products: Pick<ProductRepository, "productsAfter" | "embeddedAttributes">;
  /** The space the stored embeddings are in (recorded by the database, not assumed from the configuration). */
  space: () => Promise<EmbeddingSpace>;
  clock: Clock;
}

const DEFAULT_PAGE_SIZE = 500;

/**
 * ExportCatalogue: the whole catalogue, one page of products by id at a time, so its memory does
 * not grow with the catalogue. With embeddings, the header names the model and dimension they were
 * made with, so an import can tell whether they can be used as they are (ImportProducts). Not a
 * snapshot: a product written while the export runs may be in it in either state (a database
 * backup is; see the README's "Backup and restore").
 */
export class ExportCatalogue {
  constructor(private readonly deps: Deps) {}

  async execute(options: ExportOptions): Promise<CatalogueExport> {
    const { products, space, clock } = this.deps;
    const { model, dimension } = await space();
    const embeddedAttributes = await products.embeddedAttributes();
    const pageSize = Math.max(1, Math.floor(options.pageSize ?? DEFAULT_PAGE_SIZE));
    const withEmbeddings = options.withEmbeddings;
    const signal = options.signal;
    return {
      header: { model, dimension, embeddings: withEmbeddings, embeddedAttributes, exportedAt: new Date(clock.now()) },
      products: (async function* () {
        for (let afterId = options.afterId ?? 0; ; ) {
          signal?.throwIfAborted();
          const page = await products.productsAfter(afterId, pageSize, { withEmbeddings });
          yield* page;
          if (page.length < pageSize) return;
          afterId = (page.at(-1) as ExportedProduct).id;
        }
      })(),
    };
  }
}
