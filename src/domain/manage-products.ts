import type { Embedder } from "../ports/embedder.ts";
import type { ProductCatalogues, ProductUpdate } from "../ports/product-repository.ts";
import { checkedFilter } from "./attribute-filter.ts";
import { hasAttributes } from "./attributes.ts";
import { embedOne } from "./embed.ts";
import { ConcurrentModification, InvalidInput, ProductNotFound, SkuTaken } from "./errors.ts";
import {
  checkedField,
  contentDigest,
  embeddingText,
  type NormalizedChanges,
  normalizeChanges,
  type Product,
  type ProductChanges,
  type StoredProduct,
} from "./product.ts";
import { bothCategories } from "./search-filter.ts";

export const LIST_LIMIT = { default: 20, min: 1, max: 100 } as const;
export const LIST_ORDERS = ["id", "newest"] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];
/** Most categories one filter may name. */
export const MAX_CATEGORIES = 20;

/** A cursor that no page of this list gave. */
export const INVALID_CURSOR = "El campo 'cursor' no es válido: use el next_cursor de la página anterior";

/** How many times an update is tried again when the product changes under it. */
const UPDATE_ATTEMPTS = 3;

export interface Deps {
  products: ProductCatalogues;
  /** Embeds product texts (documents). */
  embedder: Embedder;
}

export interface ListRequest {
  limit?: number | undefined;
  /** One category or several (any of them); absent: all. */
  category?: string | readonly string[] | undefined;
  order?: ListOrder | undefined;
  /** The `nextCursor` of the previous page. */
  cursor?: string | undefined;
  /** Conditions on attributes and `category`, all to hold (attribute-filter.ts: checkedFilter). */
  filter?: unknown;
}

export interface ListResult {
  items: Product[];
  /** Products matching over all pages. */
  total: number;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * ManageProducts: read, list, change and delete products. A change re-embeds the product only
 * when the text its embedding comes from (name, category, description and the attributes its catalogue
 * embeds) changed, or its embedding was made from another text; if that embedding cannot
 * be computed nothing changes. Every change writes over the version it read, so two concurrent
 * changes never leave a product with an embedding of text it no longer has. Each method works in
 * the catalogue it is given: a product of another is not found there.
 */
export class ManageProducts {
  constructor(private readonly deps: Deps) {}

  async get(catalogue: string, id: number): Promise<Product> {
    const product = await this.deps.products.in(catalogue).get(checkedId(id));
    if (!product) throw new ProductNotFound(id);
    return publicView(product);
  }

  async list(catalogue: string, request: ListRequest): Promise<ListResult> {
    const limit = request.limit ?? LIST_LIMIT.default;
    if (!Number.isInteger(limit) || limit < LIST_LIMIT.min || limit > LIST_LIMIT.max) {
      throw new InvalidInput(`El campo 'limit' debe ser un entero entre ${LIST_LIMIT.min} y ${LIST_LIMIT.max}`);
    }
    const order = request.order ?? "id";
    const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor, order);
    const filter = checkedFilter(request.filter);
    const categories = bothCategories(normalizeCategories(request.category), filter.categories);
    if (categories === "nothing") return { items: [], total: 0, nextCursor: null };
    const page = await this.deps.products.in(catalogue).list({
      limit,
      order,
      after,
      categories,
      attributes: filter.attributes,
    });
    const last = page.items.at(-1);
    return {
      items: page.items,
      total: page.total,
      nextCursor: page.more && last ? encodeCursor(order, last.id) : null,
    };
  }

  /**
   * Applies `changes` (PATCH: any fields; PUT: the three of the contract) and returns the product.
   * `sku: null` removes the sku. `signal` aborts (with the reason to throw) when the caller stops
   * waiting: nothing is written after that.
   */
  async update(catalogue: string, id: number, changes: ProductChanges, signal?: AbortSignal): Promise<Product> {
    checkedId(id);
    const normalized = normalizeChanges(changes);
    const products = this.deps.products.in(catalogue);
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const current = await products.get(id, { latest: true });
      if (!current) throw new ProductNotFound(id);
      const update = await this.nextState(current, normalized, await products.embeddedAttributes(), signal);
      signal?.throwIfAborted();
      const result = await products.update(id, current.version, update);
      if ("updated" in result) return publicView(result.updated);
      if ("missing" in result) throw new ProductNotFound(id);
      if ("skuTaken" in result) throw new SkuTaken(result.skuTaken);
    }
    throw new ConcurrentModification();
  }

  /** Every category in the catalogue with its number of products, most products first. */
  categories(catalogue: string): Promise<{ name: string; products: number }[]> {
    return this.deps.products.in(catalogue).categories();
  }

  async remove(catalogue: string, id: number): Promise<void> {
    if (!(await this.deps.products.in(catalogue).remove(checkedId(id)))) throw new ProductNotFound(id);
  }

  /** The product's new fields, with a new embedding only when its embedded text changed. */
  private async nextState(
    current: StoredProduct,
    changes: NormalizedChanges,
    embedded: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<ProductUpdate> {
    const sku = changes.sku === undefined ? current.sku : (changes.sku ?? undefined);
    const attributes = changes.attributes ?? current.attributes;
    const fields = {
      name: changes.name ?? current.name,
      description: changes.description ?? current.description,
      category: changes.category ?? current.category,
      ...(sku === undefined ? {} : { sku }),
      ...(hasAttributes(attributes) ? { attributes } : {}),
    };
    // Only the attributes the catalogue embeds are part of the text: a change of others alone keeps
    // the embedding (and one made from another text than this, the setting changed since, is replaced).
    const digest = await contentDigest(fields, embedded);
    if (digest === current.contentDigest) return { fields };
    const vector = await embedOne(this.deps.embedder, embeddingText(fields, embedded), "document", signal);
    return { fields, embedding: { vector, contentDigest: digest } };
  }
}

/** The categories of a filter, trimmed and checked, without repeats; undefined for no filter. */
export function normalizeCategories(category: string | readonly string[] | undefined): string[] | undefined {
  if (category === undefined) return undefined;
  const list = typeof category === "string" ? [category] : [...category];
  if (list.length === 0 || list.length > MAX_CATEGORIES) {
    throw new InvalidInput(`El campo 'category' debe nombrar entre 1 y ${MAX_CATEGORIES} categorías`);
  }
  return [...new Set(list.map((value) => checkedField("category", value)))];
}

/** The product as clients see it: no digest, no version. */
export function publicView(product: Product): Product {
  const view: Product = {
    id: product.id,
    name: product.name,
    description: product.description,
    category: product.category,
  };
  if (product.sku !== undefined) view.sku = product.sku;
  if (hasAttributes(product.attributes)) view.attributes = product.attributes;
  return view;
}

function checkedId(id: number): number {
  if (!Number.isSafeInteger(id) || id < 1) throw new ProductNotFound(id);
  return id;
}

/** An opaque cursor: the order and the last id of the page, base64url. */
function encodeCursor(order: ListOrder, lastId: number): string {
  return btoa(`${order}:${lastId}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string, order: ListOrder): number {
  let decoded = "";
  try {
    decoded = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    // Not base64: refused below like any other bad cursor.
  }
  const match = /^(id|newest):([1-9][0-9]{0,15})$/.exec(decoded);
  if (!match) throw new InvalidInput(INVALID_CURSOR);
  if (match[1] !== order) {
    throw new InvalidInput(`El campo 'cursor' pertenece a otro orden ('${match[1]}'): use el mismo 'order'`);
  }
  return Number(match[2]);
}
