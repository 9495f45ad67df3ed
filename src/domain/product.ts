import { type Attributes, checkedAttributes, embeddedAttributesText, hasAttributes } from "./attributes.ts";
import { InvalidInput } from "./errors.ts";
import type { Highlights } from "./highlights.ts";
import { cleanText, type TextKind, type TextRules, textProblem, trimText } from "./text.ts";

/** The three fields of the contract: every product has them. */
export interface ProductFields {
  name: string;
  description: string;
  category: string;
}

/** A product as a shop submits it. `sku` is the merchant's own key: unique when given. */
export interface NewProduct extends ProductFields {
  sku?: string | null | undefined;
  /**
   * Price, brand, stock...: embedded only when the catalogue says so (embeddingText); checked by
   * checkedAttributes (attributes.ts). Null or absent: none.
   */
  attributes?: Readonly<Record<string, unknown>> | null | undefined;
}

/** A stored product. Its embedding never leaves the repository; `sku` is present only when set. */
export interface Product extends ProductFields {
  id: number;
  sku?: string;
  /** Present only when the product has at least one attribute. */
  attributes?: Attributes;
}

/** A stored product with what the service keeps about it besides its fields (never shown to clients). */
export interface StoredProduct extends Product {
  /** Digest of the text its embedding was computed from (contentDigest): equal digests need no new embedding. */
  contentDigest: string;
  /** Counts the product's changes: a search re-checks it, an update writes only over the version it read. */
  version: number;
}

/**
 * A search hit: `score` is the cosine similarity between the query and the product (1 = same
 * direction); `fusedScore`, in hybrid searches only, the blend of that and the lexical match that
 * ranked it (hybrid-ranking.ts).
 */
export interface ScoredProduct extends Product {
  score: number;
  fusedScore?: number;
  /** Only when the search asked for them: name and description with the matched words marked (highlights.ts). */
  highlights?: Highlights;
}

/** A search hit with the version of the product it was found as. */
export interface VersionedHit extends ScoredProduct {
  version: number;
}

/**
 * A candidate of a hybrid search: its cosine (`score`) and how well its words match the query's (0:
 * not at all). `approximateScore`: the cosine is its vector's half-precision copy's, within about
 * 1e-5 of the exact one, which ProductRepository.exactScores gives.
 */
export interface HybridCandidate extends VersionedHit {
  lexical: number;
  approximateScore?: boolean;
}

/** Longest accepted value of each field, in characters. */
export const PRODUCT_FIELD_MAX_LENGTH = {
  name: 500,
  description: 5000,
  category: 100,
  sku: 100,
} as const;

export type ProductField = keyof typeof PRODUCT_FIELD_MAX_LENGTH;

/**
 * A description may be empty (many real catalogues have none for most products: the product is
 * then embedded by its name alone); name, category and a given sku must hold visible text. Every
 * field loses its invisible characters, inside it too (bidi controls, zero-width characters...:
 * cleanText says which); only a description keeps its line breaks and tabs.
 */
const FIELD_RULES: Record<ProductField, TextRules & { kind: TextKind }> = {
  name: { maxLength: PRODUCT_FIELD_MAX_LENGTH.name, kind: "line" },
  description: { maxLength: PRODUCT_FIELD_MAX_LENGTH.description, mayBeEmpty: true, kind: "paragraphs" },
  category: { maxLength: PRODUCT_FIELD_MAX_LENGTH.category, kind: "line" },
  sku: { maxLength: PRODUCT_FIELD_MAX_LENGTH.sku, kind: "code" },
};

/**
 * A field's value without invisible characters (cleanText) and trimmed (whitespace and invisible
 * characters at the ends), or InvalidInput naming the field.
 */
export function checkedField(field: ProductField, value: string): string {
  const trimmed = trimText(cleanText(value, FIELD_RULES[field].kind));
  const problem = textProblem(trimmed, FIELD_RULES[field]);
  if (problem) throw new InvalidInput(`El campo '${field}' ${problem}`);
  return trimmed;
}

/**
 * The product with every field cleaned, trimmed and checked, or InvalidInput naming the first field that
 * breaks its rules. A null or absent sku means none.
 */
export function normalizeProduct(input: NewProduct): NormalizedProduct {
  const product: NormalizedProduct = {
    name: checkedField("name", input.name),
    description: checkedField("description", input.description),
    category: checkedField("category", input.category),
  };
  if (input.sku !== undefined && input.sku !== null) product.sku = checkedField("sku", input.sku);
  const attributes = checkedAttributes(input.attributes);
  if (hasAttributes(attributes)) product.attributes = attributes;
  return product;
}

/** A product checked by normalizeProduct: `sku` and `attributes` present only when given (and not empty). */
export type NormalizedProduct = ProductFields & { sku?: string; attributes?: Attributes };

/**
 * A change to some fields (PATCH): `sku: null` removes the sku; `attributes` replaces them all
 * (`null` or `{}` removes them).
 */
export type ProductChanges = Partial<ProductFields> & {
  sku?: string | null;
  attributes?: Readonly<Record<string, unknown>> | null;
};

/** ProductChanges checked by normalizeChanges: `attributes`, when given, checked (`{}`: none). */
export type NormalizedChanges = Partial<ProductFields> & { sku?: string | null; attributes?: Attributes };

/** The changes with every given field cleaned, trimmed and checked, as normalizeProduct does. */
export function normalizeChanges(changes: ProductChanges): NormalizedChanges {
  const normalized: NormalizedChanges = {};
  for (const field of ["name", "description", "category"] as const) {
    const value = changes[field];
    if (value !== undefined) normalized[field] = checkedField(field, value);
  }
  if (changes.sku !== undefined) normalized.sku = changes.sku === null ? null : checkedField("sku", changes.sku);
  if (changes.attributes !== undefined) normalized.attributes = checkedAttributes(changes.attributes);
  return normalized;
}

/** What the embedded text is made of: the three fields, and the attributes the catalogue embeds. */
export type EmbeddedFields = ProductFields & { attributes?: Attributes | undefined };

/**
 * The text the embedding is computed from: "name. category. description" (an empty description left
 * out), then the attributes the catalogue embeds (`embedded`, its setting `embedded_attributes`) that
 * the product has, as "brand: Acme. color: rojo, azul" (embeddedAttributesText), after a ". ". The
 * contract embeds name and description combined; the category goes in between because it says what
 * kind of thing a product is where its name does not ("Rangoli Regular Fit" is a kurta): on the eval
 * set's dev queries (bench/eval.ts, offline model) it lifted semantic nDCG@10 from 0.701 to 0.701 and
 * hybrid from 0.743 to 0.754 (README "How it is built"). Without embedded attributes (the default) the
 * text is what it was before the setting existed, so no stored digest went stale with it.
 */
export function embeddingText(product: EmbeddedFields, embedded: readonly string[]): string {
  const attributes = embeddedAttributesText(product.attributes, embedded);
  return [product.name, product.category, product.description, attributes].filter((part) => part !== "").join(". ");
}

/**
 * SHA-256 of the embedded text, hex: a product whose digest is unchanged keeps its embedding.
 * EMBEDDED_TEXT_DIGEST_SQL (postgres/schema.ts) computes the same in SQL.
 */
export async function contentDigest(product: EmbeddedFields, embedded: readonly string[]): Promise<string> {
  const text = embeddingText(product, embedded);
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join("");
}
