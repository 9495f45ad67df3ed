import type { AttributeCondition } from "../domain/attribute-filter.ts";
import type { Attributes } from "../domain/attributes.ts";
import type {
  HybridCandidate,
  NormalizedProduct,
  Product,
  ProductFields,
  StoredProduct,
  VersionedHit,
} from "../domain/product.ts";
import type { Vector } from "../domain/vector.ts";

/** A create sent with an Idempotency-Key: its first answer is recorded with the product, atomically. */
export interface IdempotencyRecord {
  /** Whose key it is: the caller's id ("user:12", "key:<id>"); another caller's same key is another key. */
  owner: string;
  key: string;
  /** The request as the use case normalised it: a retry with the same key must carry the same. */
  fingerprint: string;
  /** Records older than this no longer count (and may be replaced). */
  ttlHours: number;
}

/** What a recorded key first answered. */
export interface IdempotentAnswer {
  fingerprint: string;
  product: Product;
}

/** A product to write with its embedding and the digest of the text it was computed from. */
export interface EmbeddedProduct {
  product: NormalizedProduct;
  embedding: Vector;
  contentDigest: string;
}

export type AddResult = { created: Product } | { alreadyAnswered: IdempotentAnswer } | { skuTaken: string };

/** A product's new state: its fields, and a new embedding when its embedded text changed. */
export interface ProductUpdate {
  /** The whole new state: no `attributes` is none. */
  fields: ProductFields & { sku?: string | undefined; attributes?: Attributes | undefined };
  /** Absent: the text it was embedded from is unchanged, the embedding stays. */
  embedding?: { vector: Vector; contentDigest: string };
}

export type UpdateResult =
  | { updated: StoredProduct }
  /** No product with that id (any more). */
  | { missing: true }
  /** The product changed since `expectedVersion` was read: read it again and retry. */
  | { conflict: true }
  | { skuTaken: string };

/** One row of a bulk write: a new product, or a new state of an existing one read at `expectedVersion`. */
export type BulkWrite =
  | { kind: "insert"; row: EmbeddedProduct }
  | { kind: "update"; id: number; expectedVersion: number; update: ProductUpdate };

/** What became of one BulkWrite, in the same order. */
export type BulkWriteOutcome =
  | { written: Product }
  /** An update whose product changed (or vanished) since it was read, or an insert whose sku was taken meanwhile. */
  | { raced: "changed" | "missing" | "skuTaken" };

export interface ListQuery {
  limit: number;
  /** Only products of these categories (exact match); absent: all. */
  categories?: readonly string[] | undefined;
  /** Only products whose attributes meet every one of these (meetsConditions); absent or empty: all. */
  attributes?: readonly AttributeCondition[] | undefined;
  /** `newest`: most recently created first; `id`: by id, ascending. */
  order: "newest" | "id";
  /** The id of the last product of the previous page (keyset pagination). */
  after?: number | undefined;
}

export interface ProductPage {
  items: Product[];
  /** How many products match the query over all pages. */
  total: number;
  /** True when products follow the last one of `items`. */
  more: boolean;
}

/** A product as a catalogue export holds it: its fields, and its embedding when it was asked for. */
export interface ExportedProduct extends Product {
  embedding?: Vector;
}

export interface SearchQuery {
  limit: number;
  /** Only products of these categories; absent: all. */
  categories?: readonly string[] | undefined;
  /** Only products whose attributes meet every one of these (meetsConditions); absent or empty: all. */
  attributes?: readonly AttributeCondition[] | undefined;
  /**
   * The `limit` best are a browsing search's relevant results (browse-results.ts: a thousand, to
   * page, sort and count): an adapter may rank them by a cosine within about 1e-5 of the exact one
   * (a stored half-precision copy) where the exact one of so many costs far more. Absent: exact.
   */
  window?: boolean | undefined;
}

/**
 * The words a hybrid or lexical search matches: any of them (OR), each stemmed as products are. A
 * word of 4 or more letters that no product's name or category holds (and that may be misspelt) is
 * also matched as the word of theirs it is nearest to by spelling (typo tolerance: "cushoins" finds
 * what "cushions" finds).
 */
export interface LexicalQuery {
  /** The shopper's words: the query, and its English when it was translated. */
  texts: readonly string[];
  /** Words that may stand for them: the dictionary's other translations, the catalogue's synonyms. */
  expansions: readonly string[];
  /**
   * The words of `texts` that may be misspelt (those no dictionary knows, when a translator could
   * tell): only these are matched by spelling. Absent: any word of `texts`.
   */
  misspellable?: readonly string[] | undefined;
}

export interface HybridQuery {
  /** Candidates taken from each side: the most similar by embedding, and the best lexical matches. */
  candidates: number;
  /** Only products of these categories; absent: all. */
  categories?: readonly string[] | undefined;
  /** Only products whose attributes meet every one of these (meetsConditions); absent or empty: all. */
  attributes?: readonly AttributeCondition[] | undefined;
  /** The candidates of a browsing search's relevant results: their cosine as SearchQuery.window allows. */
  window?: boolean | undefined;
}

/**
 * The products of every catalogue, each catalogue's reached by its name: what the use cases hold.
 * Every statement of the repository `in` gives names that catalogue.
 */
export interface ProductCatalogues {
  /**
   * The products of `catalogue` (ids stay unique across catalogues; skus are unique within one). Its
   * operations throw CatalogueNotFound when there is no such catalogue (any more).
   */
  in(catalogue: string): ProductRepository;
}

/** The products of one catalogue: a product of another is not there (null, missing, not found). */
export interface ProductRepository {
  /**
   * Stores the product together with its embedding, atomically, and returns it with its id. With
   * `idempotency`, the key is recorded in the same transaction; when the key already holds a
   * record younger than its ttl, nothing is stored and that record is returned instead. A sku
   * another product has is `skuTaken`, and nothing is stored.
   */
  add(row: EmbeddedProduct, idempotency?: IdempotencyRecord): Promise<AddResult>;
  /** The recorded answer of a key younger than `ttlHours`, or null. */
  findIdempotentAnswer(owner: string, key: string, ttlHours: number): Promise<IdempotentAnswer | null>;
  /** Deletes the key records older than `ttlHours`; returns how many. */
  pruneIdempotencyKeys(ttlHours: number): Promise<number>;

  /**
   * The product, or null. `latest`: as the last committed write left it, from where writes go (an
   * update writes over what it read); otherwise from where reads go, which may lag a little behind
   * (a standby) but never behind the caller's own writes.
   */
  get(id: number, options?: { latest?: boolean }): Promise<StoredProduct | null>;
  list(query: ListQuery): Promise<ProductPage>;
  /** Writes the new state over version `expectedVersion` only; the version then grows by one. */
  update(id: number, expectedVersion: number, update: ProductUpdate): Promise<UpdateResult>;
  /** False when there was no such product. */
  remove(id: number): Promise<boolean>;
  /** Every category with how many products it has, most products first (then by name). */
  categories(): Promise<{ name: string; products: number }[]>;

  /**
   * Up to `limit` products with an id above `afterId`, by id, each with its embedding when
   * `withEmbeddings`: the whole catalogue read a page at a time, whatever its size.
   */
  productsAfter(afterId: number, limit: number, options: { withEmbeddings: boolean }): Promise<ExportedProduct[]>;

  /**
   * Up to `limit` products with an id above `afterId`, by id, as stored (digest and version), as the
   * last committed write left them: the whole catalogue read a page at a time, to find the products
   * whose embedding was made from another text than the one they would be embedded from now.
   */
  storedAfter(afterId: number, limit: number): Promise<StoredProduct[]>;
  /**
   * The attributes the catalogue embeds with each product's text (its setting `embedded_attributes`,
   * checkedEmbeddedAttributes' order), read from where writes go: none by default.
   */
  embeddedAttributes(): Promise<string[]>;

  /** The stored products holding these skus (those that exist). */
  findBySkus(skus: readonly string[]): Promise<StoredProduct[]>;
  /** Writes every row in few round trips (never one per row), each row atomically. */
  writeMany(writes: readonly BulkWrite[]): Promise<BulkWriteOutcome[]>;

  /** The `limit` products most similar to `embedding` by cosine similarity, most similar first. */
  searchByVector(embedding: Vector, query: SearchQuery): Promise<VersionedHit[]>;
  /**
   * The candidates of a hybrid or lexical search: the products most similar to `embedding`
   * together with those whose words best match the lexical query, each with both its cosine and
   * its lexical score. A cosine may be approximate (HybridCandidate.approximateScore): reading every
   * candidate's full vector would cost more than ranking them needs.
   */
  hybridCandidates(embedding: Vector, lexical: LexicalQuery, query: HybridQuery): Promise<HybridCandidate[]>;
  /** The exact cosine similarity to `embedding` of each of these products that exists, by its stored vector. */
  exactScores(embedding: Vector, ids: readonly number[]): Promise<Map<number, number>>;
  /**
   * Whether the catalogue's names or categories hold any of these words (lower case), or for a
   * word of 4 or more letters one like it by spelling (as the lexical query's typo tolerance).
   */
  knowsAnyWord(words: readonly string[]): Promise<boolean>;
  /** Those of these words (lower case) that the catalogue's names or categories hold as they are written. */
  catalogueWords(words: readonly string[]): Promise<string[]>;
  /** The current version of each of these products that still exists. */
  versions(ids: readonly number[]): Promise<Map<number, number>>;
}
