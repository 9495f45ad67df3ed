import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { NewProduct, Product, ScoredProduct } from "../../domain/product.ts";
import { type Vector, vectorProblem } from "../../domain/vector.ts";
import type { ProductRepository } from "../../ports/product-repository.ts";

/**
 * Products in memory, searched by cosine similarity computed here. Like the database, it rejects
 * a zero, non-finite or (when `dimension` is given) wrong-length vector. Set `down` to make every
 * call fail with DatabaseUnavailable.
 */
export class MemoryProductRepository implements ProductRepository {
  down = false;
  private readonly rows: { product: Product; embedding: Vector }[] = [];

  constructor(private readonly dimension?: number) {}

  /** The stored products, in insertion order (for assertions). */
  get products(): Product[] {
    return this.rows.map((row) => ({ ...row.product }));
  }

  async add(product: NewProduct, embedding: Vector): Promise<Product> {
    this.checkUp();
    const problem = vectorProblem(embedding, this.dimension ?? embedding.length);
    if (problem) throw new Error(`invalid embedding: ${problem}`);
    const stored: Product = {
      id: this.rows.length + 1,
      name: product.name,
      description: product.description,
      category: product.category,
    };
    this.rows.push({ product: stored, embedding: [...embedding] });
    return { ...stored };
  }

  async searchByVector(embedding: Vector, limit: number): Promise<ScoredProduct[]> {
    this.checkUp();
    return this.rows
      .map((row) => ({ ...row.product, score: cosineSimilarity(embedding, row.embedding) }))
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, Math.max(0, limit));
  }

  private checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }
}

export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new Error(`different vector dimensions ${a.length} and ${b.length}`);
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return dot / Math.sqrt(normA * normB);
}
