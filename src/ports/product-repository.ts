import type { NewProduct, Product, ScoredProduct } from "../domain/product.ts";
import type { Vector } from "../domain/vector.ts";

export interface ProductRepository {
  /** Stores the product together with its embedding, atomically, and returns it with its id. */
  add(product: NewProduct, embedding: Vector): Promise<Product>;
  /** The `limit` products most similar to `embedding` by cosine similarity, most similar first. */
  searchByVector(embedding: Vector, limit: number): Promise<ScoredProduct[]>;
}
