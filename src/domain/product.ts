import { InvalidInput } from "./errors.ts";
import { type TextRules, textProblem, trimText } from "./text.ts";

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
  name: 500,
  description: 5000,
  category: 100,
} as const satisfies Record<keyof NewProduct, number>;

/**
 * A description may be empty (many real catalogues have none for most products: the product is
 * then embedded by its name alone); name and category must hold visible text.
 */
const FIELD_RULES = {
  name: { maxLength: PRODUCT_FIELD_MAX_LENGTH.name },
  description: { maxLength: PRODUCT_FIELD_MAX_LENGTH.description, mayBeEmpty: true },
  category: { maxLength: PRODUCT_FIELD_MAX_LENGTH.category },
} as const satisfies Record<keyof NewProduct, TextRules>;

/**
 * The product with every field trimmed (whitespace and invisible characters at the ends), or
 * InvalidInput naming the first field that breaks its rules.
 */
export function normalizeProduct(input: NewProduct): NewProduct {
  const product: NewProduct = {
    name: trimText(input.name),
    description: trimText(input.description),
    category: trimText(input.category),
  };
  for (const field of ["name", "description", "category"] as const) {
    const problem = textProblem(product[field], FIELD_RULES[field]);
    if (problem) throw new InvalidInput(`El campo '${field}' ${problem}`);
  }
  return product;
}

/** The text the embedding is computed from: name and description combined, as the spec says. */
export function embeddingText(product: Pick<NewProduct, "name" | "description">): string {
  return `${product.name}\n${product.description}`;
}
