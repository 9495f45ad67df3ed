import type { Embedder } from "../ports/embedder.ts";
import type { IdempotencyRecord, IdempotentAnswer, ProductCatalogues } from "../ports/product-repository.ts";
import { DEFAULT_CATALOGUE } from "./caller.ts";
import { embedOne } from "./embed.ts";
import { IdempotencyKeyReused, SkuTaken } from "./errors.ts";
import { contentDigest, embeddingText, type NewProduct, normalizeProduct, type Product } from "./product.ts";

/** How long an Idempotency-Key keeps its first answer. */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;

export interface Deps {
  products: ProductCatalogues;
  embedder: Embedder;
}

export interface CreateOptions {
  /** The catalogue the product goes into. */
  catalogue: string;
  /** With the user it belongs to: the same key and body within the ttl get the first answer again. */
  idempotency?: { owner: string; key: string };
  /** Aborts (with the reason to throw) when the caller stops waiting: nothing is stored after that. */
  signal?: AbortSignal;
}

export interface Created {
  product: Product;
  /** True when this is the recorded answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/**
 * CreateProduct: validates the product, embeds its text (embeddingText: its fields and the attributes
 * its catalogue embeds) and stores both together.
 * If the embedding cannot be computed, or is unusable, or the caller's signal aborts before the
 * write, nothing is stored. A sku another product has is SkuTaken (the bulk import upserts by sku
 * instead). With an idempotency key, a retry of a create whose answer was lost gets that answer
 * instead of a second product.
 */
export class CreateProduct {
  constructor(private readonly deps: Deps) {}

  async execute(input: NewProduct, options: CreateOptions): Promise<Created> {
    const product = normalizeProduct(input);
    const products = this.deps.products.in(options.catalogue);
    const record: IdempotencyRecord | undefined = options.idempotency && {
      ...options.idempotency,
      fingerprint: fingerprintOf(options.catalogue, product),
      ttlHours: IDEMPOTENCY_KEY_TTL_HOURS,
    };
    if (record) {
      const earlier = await products.findIdempotentAnswer(record.owner, record.key, record.ttlHours);
      if (earlier) return replay(earlier, record);
    }
    const embedded = await products.embeddedAttributes();
    const embedding = await embedOne(this.deps.embedder, embeddingText(product, embedded), "document", options.signal);
    options.signal?.throwIfAborted();
    const digest = await contentDigest(product, embedded);
    const result = await products.add({ product, embedding, contentDigest: digest }, record);
    if ("skuTaken" in result) throw new SkuTaken(result.skuTaken);
    if ("alreadyAnswered" in result) return replay(result.alreadyAnswered, record as IdempotencyRecord);
    return { product: result.created, replayed: false };
  }
}

/**
 * What a retry with the same key must carry: the product, and its catalogue, so that a key used in
 * one catalogue and sent again to another is a key reused with another request (422), never the
 * other catalogue's answer. The default catalogue's is the product alone, as before catalogues, so
 * the keys recorded then keep their answers.
 */
function fingerprintOf(catalogue: string, product: NewProduct): string {
  return catalogue === DEFAULT_CATALOGUE ? JSON.stringify(product) : JSON.stringify({ catalogue, product });
}

function replay(earlier: IdempotentAnswer, record: IdempotencyRecord): Created {
  if (earlier.fingerprint !== record.fingerprint) throw new IdempotencyKeyReused();
  return { product: earlier.product, replayed: true };
}
