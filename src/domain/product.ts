/** A product as shops submit it: every field is required and is trimmed, non-empty text. */
export interface NewProduct {
  name: string;
  description: string;
  category: string;
}

/** A stored product. Its embedding never leaves the repository. */
export interface Product extends NewProduct {
  id: number;
}

/** A search hit: `score` is the cosine similarity between the query and the product (1 = same direction). */
export interface ScoredProduct extends Product {
  score: number;
}

/** Longest accepted value of each field, in characters. */
export const PRODUCT_FIELD_MAX_LENGTH = {
  name: 200,
  description: 5000,
  category: 100,
} as const satisfies Record<keyof NewProduct, number>;

/** The text the embedding is computed from: name and description combined, as the spec says. */
export function embeddingText(product: Pick<NewProduct, "name" | "description">): string {
  return `${product.name}\n${product.description}`;
}
