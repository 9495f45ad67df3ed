import type { Embedder } from "../ports/embedder.ts";
import type { ProductCatalogues, ProductRepository } from "../ports/product-repository.ts";
import { batchSizeFor, callsAtOnce, embedAhead, embedMany } from "./embed.ts";
import { contentDigest, embeddingText, type StoredProduct } from "./product.ts";
import type { Vector } from "./vector.ts";

/** What EmbedStaleProducts reports after each batch: products looked at, of `total`, and embedded again so far. */
export interface StaleProgress {
  checked: number;
  total: number;
  embedded: number;
}

export interface EmbedStaleOptions {
  /** Products read, and at most embedded, together (default: the embedder's textsPerCall, else 64). */
  batchSize?: number;
  /** Aborts (with the reason to throw) between batches: what was written stays, the next run goes on. */
  signal?: AbortSignal;
  onProgress?: (progress: StaleProgress) => void;
}

export interface EmbedStaleResult {
  /** Products in the catalogue when it was read. */
  products: number;
  /** Products embedded again from their current text. */
  embedded: number;
  /** Stale products that changed while their new vector was made: their change embedded them already. */
  changedMeanwhile: number;
}

export interface Deps {
  products: ProductCatalogues;
  /** Embeds product texts (documents). */
  embedder: Embedder;
}

/** Products read together when only counting. */
const COUNT_PAGE = 1_000;

/**
 * EmbedStaleProducts: a catalogue's products whose embedding was made from another text than the one
 * they would be embedded from now (embeddingText), found by their digest: after the catalogue's
 * embedded attributes changed, or from before the category was part of the text. `count` says how
 * many; `execute` embeds them again in place, a batch at a time, in the catalogue's current
 * embedding space (a model change is ReembedCatalogue's). Each is written over the version it was
 * read at: one that changed meanwhile was embedded by its change and is left as it is. Resumable by
 * its nature: a run stopped half-way leaves the rest stale, and the next one finds only those.
 */
export class EmbedStaleProducts {
  constructor(private readonly deps: Deps) {}

  /** How many of the catalogue's products are stale, and how many it has. */
  count(catalogue: string): Promise<{ products: number; stale: number }> {
    return countStale(this.deps.products.in(catalogue));
  }

  async execute(catalogue: string, options: EmbedStaleOptions = {}): Promise<EmbedStaleResult> {
    const products = this.deps.products.in(catalogue);
    const batchSize = batchSizeFor(this.deps.embedder, options.batchSize);
    const embedded = await products.embeddedAttributes();
    const { products: total } = await this.count(catalogue);
    const result: EmbedStaleResult = { products: total, embedded: 0, changedMeanwhile: 0 };
    let checked = 0;
    async function* staleOfPages() {
      for await (const page of pages(products, batchSize, options.signal)) {
        yield { size: page.length, stale: await staleOf(page, embedded) };
      }
    }
    const embed = async ({ stale }: { stale: { product: StoredProduct }[] }): Promise<Vector[]> =>
      stale.length === 0
        ? []
        : embedMany(
            this.deps.embedder,
            stale.map(({ product }) => embeddingText(product, embedded)),
            "document",
            options.signal,
          );
    // The next pages are read and embedded while one is written (a few with a remote provider).
    await embedAhead(staleOfPages(), callsAtOnce(this.deps.embedder), embed, async ({ size, stale }, vectors) => {
      checked += size;
      if (stale.length > 0) {
        options.signal?.throwIfAborted();
        const outcomes = await products.writeMany(
          stale.map(({ product, digest }, i) => ({
            kind: "update" as const,
            id: product.id,
            expectedVersion: product.version,
            update: { fields: fieldsOf(product), embedding: { vector: vectors[i] as Vector, contentDigest: digest } },
          })),
        );
        for (const outcome of outcomes) {
          if ("written" in outcome) result.embedded++;
          else result.changedMeanwhile++;
        }
      }
      options.onProgress?.({ checked, total, embedded: result.embedded });
    });
    return result;
  }
}

/**
 * How many of a catalogue's products are stale (EmbedStaleProducts), and how many it has: no
 * embedder needed (ManageCatalogues counts them after a change of settings).
 */
export async function countStale(products: ProductRepository): Promise<{ products: number; stale: number }> {
  const embedded = await products.embeddedAttributes();
  let total = 0;
  let stale = 0;
  for await (const page of pages(products, COUNT_PAGE)) {
    total += page.length;
    stale += (await staleOf(page, embedded)).length;
  }
  return { products: total, stale };
}

/** The catalogue's stored products, a page of `size` at a time, by id. */
async function* pages(
  products: ProductRepository,
  size: number,
  signal?: AbortSignal,
): AsyncGenerator<StoredProduct[]> {
  for (let afterId = 0; ; ) {
    signal?.throwIfAborted();
    const page = await products.storedAfter(afterId, size);
    if (page.length > 0) yield page;
    if (page.length < size) return;
    afterId = (page.at(-1) as StoredProduct).id;
  }
}

/** The products of `page` whose stored digest is not that of the text `embedded` gives them, with that text's digest. */
async function staleOf(
  page: readonly StoredProduct[],
  embedded: readonly string[],
): Promise<{ product: StoredProduct; digest: string }[]> {
  const digests = await Promise.all(page.map((product) => contentDigest(product, embedded)));
  return page.flatMap((product, i) =>
    product.contentDigest === digests[i] ? [] : [{ product, digest: digests[i] as string }],
  );
}

/** The product's whole state as an update writes it (unchanged: only its embedding is new). */
function fieldsOf(product: StoredProduct) {
  return {
    name: product.name,
    description: product.description,
    category: product.category,
    ...(product.sku === undefined ? {} : { sku: product.sku }),
    ...(product.attributes === undefined ? {} : { attributes: product.attributes }),
  };
}
