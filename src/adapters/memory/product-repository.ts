import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { NewProduct, Product, ScoredProduct } from "../../domain/product.ts";
import { type Vector, vectorProblem } from "../../domain/vector.ts";
import type {
  AddResult,
  IdempotencyRecord,
  IdempotentAnswer,
  ProductRepository,
} from "../../ports/product-repository.ts";

/**
 * Products in memory, searched by cosine similarity computed here. Like the database, it rejects
 * a zero, non-finite or (when `dimension` is given) wrong-length vector. Set `down` to make every
 * call fail with DatabaseUnavailable.
 */
export class MemoryProductRepository implements ProductRepository {
  down = false;
  private readonly rows: { product: Product; embedding: Vector }[] = [];
  private readonly idempotencyKeys = new Map<string, IdempotentAnswer & { createdAt: number }>();

  constructor(
    private readonly dimension?: number,
    /** Milliseconds since the epoch, for the age of idempotency keys. */
    private readonly now: () => number = Date.now,
  ) {}

  /** The stored products, in insertion order (for assertions). */
  get products(): Product[] {
    return this.rows.map((row) => ({ ...row.product }));
  }

  async add(product: NewProduct, embedding: Vector, idempotency?: IdempotencyRecord): Promise<AddResult> {
    this.checkUp();
    const problem = vectorProblem(embedding, this.dimension ?? embedding.length);
    if (problem) throw new Error(`invalid embedding: ${problem}`);
    if (idempotency) {
      // Checked and recorded with no await in between: concurrent adds with one key see each other.
      const earlier = this.idempotentAnswer(idempotency.userId, idempotency.key, idempotency.ttlHours);
      if (earlier) return { alreadyAnswered: earlier };
    }
    const stored: Product = {
      id: this.rows.length + 1,
      name: product.name,
      description: product.description,
      category: product.category,
    };
    this.rows.push({ product: stored, embedding: [...embedding] });
    if (idempotency) {
      this.idempotencyKeys.set(keyOf(idempotency.userId, idempotency.key), {
        fingerprint: idempotency.fingerprint,
        product: { ...stored },
        createdAt: this.now(),
      });
    }
    return { created: { ...stored } };
  }

  async findIdempotentAnswer(userId: number, key: string, ttlHours: number): Promise<IdempotentAnswer | null> {
    this.checkUp();
    return this.idempotentAnswer(userId, key, ttlHours);
  }

  private idempotentAnswer(userId: number, key: string, ttlHours: number): IdempotentAnswer | null {
    const record = this.idempotencyKeys.get(keyOf(userId, key));
    if (!record || this.now() - record.createdAt >= ttlHours * HOUR) return null;
    return { fingerprint: record.fingerprint, product: { ...record.product } };
  }

  async pruneIdempotencyKeys(ttlHours: number): Promise<number> {
    this.checkUp();
    let pruned = 0;
    for (const [id, record] of this.idempotencyKeys) {
      if (this.now() - record.createdAt >= ttlHours * HOUR) {
        this.idempotencyKeys.delete(id);
        pruned++;
      }
    }
    return pruned;
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

const HOUR = 3_600_000;

function keyOf(userId: number, key: string): string {
  return `${userId}\u0000${key}`;
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
