import type { Embedder } from "../ports/embedder.ts";
import type { ProductRepository } from "../ports/product-repository.ts";
import { embedOne } from "./embed.ts";
import { InvalidInput } from "./errors.ts";
import { embeddingText, type NewProduct, PRODUCT_FIELD_MAX_LENGTH, type Product } from "./product.ts";
import { isStorableText } from "./text.ts";

export interface Deps {
  products: ProductRepository;
  embedder: Embedder;
}

/**
 * CreateProduct: validates the product, embeds name + description and stores both together.
 * If the embedding cannot be computed, or is unusable, nothing is stored.
 */
export class CreateProduct {
  constructor(private readonly deps: Deps) {}

  async execute(input: NewProduct): Promise<Product> {
    const product = normalizeProduct(input);
    const embedding = await embedOne(this.deps.embedder, embeddingText(product), "document");
    return this.deps.products.add(product, embedding);
  }
}

/** Trims every field and enforces non-empty values within their maximum lengths. */
export function normalizeProduct(input: NewProduct): NewProduct {
  const product: NewProduct = {
    name: input.name.trim(),
    description: input.description.trim(),
    category: input.category.trim(),
  };
  for (const field of ["name", "description", "category"] as const) {
    if (product[field].length === 0) throw new InvalidInput(`El campo '${field}' no puede estar vacío`);
    if (!isStorableText(product[field])) {
      throw new InvalidInput(`El campo '${field}' contiene un carácter no admitido (U+0000)`);
    }
    const max = PRODUCT_FIELD_MAX_LENGTH[field];
    if (product[field].length > max) {
      throw new InvalidInput(`El campo '${field}' admite como máximo ${max} caracteres`);
    }
  }
  return product;
}
