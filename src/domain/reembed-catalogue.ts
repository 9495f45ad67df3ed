import type { Embedder } from "../ports/embedder.ts";
import type { EmbeddingSpace, EmbeddingSpaceStore, ProductText } from "../ports/embedding-space.ts";
import type { UpkeepLease } from "../ports/upkeep-lease.ts";
import { batchSizeFor, callsAtOnce, embedAhead, embedMany } from "./embed.ts";
import { embeddingText } from "./product.ts";
import type { Vector } from "./vector.ts";

/** What a re-embed reports as it goes. */
export type ReembedEvent =
  /** Staging began; `staged` products already had a vector from an interrupted run for this model (resumed). */
  | { type: "started"; staged: number; total: number; space: EmbeddingSpace }
  /** After each batch: products holding a new vector, of `total`. */
  | { type: "progress"; done: number; total: number }
  /** The new vectors are live: the catalogue is in `space`. */
  | { type: "switched"; products: number; space: EmbeddingSpace };

export interface ReembedOptions {
  /** Products embedded per call to the embedder (default: the embedder's textsPerCall, else 64). */
  batchSize?: number;
  /** Aborts (with the reason to throw) between batches: what is staged stays for the next run. */
  signal?: AbortSignal;
  onEvent?: (event: ReembedEvent) => void;
}

export interface Deps {
  space: EmbeddingSpaceStore;
  /** The embedder whose space the catalogue moves to (documents). */
  embedder: Embedder;
  /** Held from start to switch: no instance builds the vector index meanwhile, and no second re-embed runs. */
  lease?: UpkeepLease | undefined;
}

/** Another process holds the upkeep lease (an index build or a re-embed is under way): nothing was done. */
export class UpkeepBusy extends Error {
  constructor() {
    super(
      "another instance is doing the catalogue's upkeep now (a vector index build or a re-embed): try again when it has finished",
    );
    this.name = "UpkeepBusy";
  }
}

/**
 * ReembedCatalogue: moves every product's embedding to the configured embedder's model and
 * dimension. New vectors are staged batch by batch beside the live ones, which search keeps using;
 * one atomic switch makes them live, embedding first whatever was written meanwhile. Resumable:
 * when the embedder fails or the operator stops it, the live embeddings are untouched and the
 * vectors staged so far are kept, so the next run for the same model embeds only the rest (and
 * again any product whose text changed since its vector was staged).
 */
export class ReembedCatalogue {
  constructor(private readonly deps: Deps) {}

  async execute(options: ReembedOptions = {}): Promise<{ products: number }> {
    const { lease } = this.deps;
    if (lease && !(await lease.acquire())) throw new UpkeepBusy();
    try {
      return await this.run(options);
    } finally {
      await lease?.release();
    }
  }

  private async run(options: ReembedOptions): Promise<{ products: number }> {
    const { space: store, embedder } = this.deps;
    const batchSize = batchSizeFor(embedder, options.batchSize);
    const space = { model: embedder.model, dimension: embedder.dimension };
    const { staged, total } = await store.beginStaging(space);
    options.onEvent?.({ type: "started", staged, total, space });
    const embed = (products: readonly ProductText[]): Promise<Vector[]> =>
      embedMany(
        embedder,
        products.map((product) => embeddingText(product, product.embeddedAttributes)),
        "document",
        options.signal,
      );

    async function* unstaged(): AsyncGenerator<ProductText[]> {
      for (let afterId = 0; ; ) {
        options.signal?.throwIfAborted();
        const batch = await store.unstaged(afterId, batchSize);
        if (batch.length === 0) return;
        yield batch;
        afterId = (batch.at(-1) as ProductText).id;
      }
    }
    let done = staged;
    // The next batches are read and embedded while one is staged (a few with a remote provider).
    await embedAhead(unstaged(), callsAtOnce(embedder), embed, async (batch, vectors) => {
      await store.stage(batch.map(({ id, contentDigest }, i) => ({ id, contentDigest, vector: vectors[i] as Vector })));
      done = Math.min(done + batch.length, total);
      options.onEvent?.({ type: "progress", done, total });
    });
    options.signal?.throwIfAborted();
    const { products } = await store.switchTo(space, embed);
    options.onEvent?.({ type: "switched", products, space });
    return { products };
  }
}
