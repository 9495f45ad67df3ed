import type { Vector } from "../../src/domain/vector.ts";
import type {
  EmbeddingSpace,
  EmbeddingSpaceStore,
  ProductText,
  StagedVector,
} from "../../src/ports/embedding-space.ts";

interface FakeProduct extends ProductText {
  vector: Vector;
}

/** An EmbeddingSpaceStore in memory, with the same staging rules as the SQL one (embedding-space.ts). */
export class FakeEmbeddingSpace implements EmbeddingSpaceStore {
  readonly products = new Map<number, FakeProduct>();
  private staging: { space: EmbeddingSpace; vectors: Map<number, { digest: string; vector: Vector }> } | undefined;
  /** Products written (e.g. by a service) when the switch begins, before it takes its lock. */
  onSwitch: (() => void) | undefined;

  constructor(public space: EmbeddingSpace) {}

  add(product: FakeProduct): void {
    this.products.set(product.id, product);
  }

  /** Changes a product's text (its digest) as an update would. */
  change(id: number, description: string): void {
    const product = this.products.get(id) as FakeProduct;
    this.products.set(id, { ...product, description, contentDigest: `${product.contentDigest}'` });
  }

  stagedFor(id: number): Vector | undefined {
    return this.staging?.vectors.get(id)?.vector;
  }

  async current(): Promise<EmbeddingSpace> {
    return this.space;
  }

  async beginStaging(space: EmbeddingSpace): Promise<{ staged: number; total: number }> {
    if (this.staging?.space.model !== space.model || this.staging.space.dimension !== space.dimension) {
      this.staging = { space, vectors: new Map() };
    }
    const staged = [...this.products.values()].filter((product) => !this.isUnstaged(product)).length;
    return { staged, total: this.products.size };
  }

  async unstaged(afterId: number, limit: number): Promise<ProductText[]> {
    return [...this.products.values()]
      .filter((product) => product.id > afterId && this.isUnstaged(product))
      .sort((a, b) => a.id - b.id)
      .slice(0, limit)
      .map(({ vector: _vector, ...text }) => text);
  }

  async stage(vectors: readonly StagedVector[]): Promise<void> {
    if (!this.staging) throw new Error("no staging");
    for (const { id, contentDigest, vector } of vectors)
      this.staging.vectors.set(id, { digest: contentDigest, vector });
  }

  async switchTo(
    space: EmbeddingSpace,
    embedRest: (products: readonly ProductText[]) => Promise<Vector[]>,
  ): Promise<{ products: number }> {
    this.onSwitch?.();
    const staging = this.staging;
    if (!staging || staging.space.model !== space.model) throw new Error("no staging for that space");
    const rest = await this.unstaged(0, Number.MAX_SAFE_INTEGER);
    const vectors = rest.length > 0 ? await embedRest(rest) : [];
    for (const [i, { id, contentDigest }] of rest.entries()) {
      staging.vectors.set(id, { digest: contentDigest, vector: vectors[i] as Vector });
    }
    for (const product of this.products.values()) {
      product.vector = (staging.vectors.get(product.id) as { vector: Vector }).vector;
    }
    this.space = space;
    this.staging = undefined;
    return { products: this.products.size };
  }

  async abandonStaging(): Promise<void> {
    this.staging = undefined;
  }

  private isUnstaged(product: ProductText): boolean {
    return this.staging?.vectors.get(product.id)?.digest !== product.contentDigest;
  }
}
