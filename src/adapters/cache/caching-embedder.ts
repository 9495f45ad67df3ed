import { type Vector, vectorProblem } from "../../domain/vector.ts";
import { LruCache } from "../../lib/lru-cache.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import type { QueryEmbeddingCache, QueryKey } from "../../ports/query-embedding-cache.ts";

export interface CachingEmbedderOptions {
  /** Query vectors kept in this process (0: none). */
  memoryEntries: number;
  /** The cache shared by replicas and restarts (the database), or none. */
  shared?: QueryEmbeddingCache | undefined;
  /**
   * Receives one `query_cache` event per query looked up ({result: "hit", layer: "memory" |
   * "database"} or {result: "miss"}), and `query_cache_failed` when reading the shared cache fails
   * (the query is embedded anyway; the shared cache reports its own failures to store). Never the
   * query itself.
   */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * An embedder that remembers query embeddings: first in memory (LRU), then in the shared cache,
 * and only then asks the embedder. Documents are always embedded afresh. A vector is cached only
 * once it has passed the same checks as any other (length, finite, not zero), and a failing shared
 * cache never fails a search: it is skipped and logged. The answer never waits for the shared
 * cache to store a new vector: it is written behind (PostgresQueryEmbeddingCache).
 */
export class CachingEmbedder implements Embedder {
  readonly model: string;
  readonly dimension: number;
  private readonly memory: LruCache<string, Vector>;

  constructor(
    private readonly embedder: Embedder,
    private readonly options: CachingEmbedderOptions,
  ) {
    this.model = embedder.model;
    this.dimension = embedder.dimension;
    this.memory = new LruCache(options.memoryEntries);
  }

  get callsAtOnce(): number | undefined {
    return this.embedder.callsAtOnce;
  }

  get textsPerCall(): number | undefined {
    return this.embedder.textsPerCall;
  }

  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (purpose !== "query") return this.embedder.embed(texts, purpose, signal);

    const keys = texts.map(
      (text): QueryKey => ({ model: this.model, dimension: this.dimension, text: normalizeQuery(text) }),
    );
    const vectors: (Vector | null)[] = await Promise.all(keys.map((key) => this.lookUp(key)));
    const missing = vectors.flatMap((vector, index) => (vector === null ? [index] : []));
    if (missing.length === 0) return vectors as Vector[];

    const fresh = await this.embedder.embed(
      missing.map((index) => texts[index] as string),
      purpose,
      signal,
    );
    missing.forEach((index, position) => {
      const vector = fresh[position];
      vectors[index] = vector ?? null;
      if (vector !== undefined && vectorProblem(vector, this.dimension) === null) {
        this.remember(keys[index] as QueryKey, vector);
      }
    });
    // Whatever came back unusable is returned as is, for embedMany to reject.
    return vectors.map((vector) => vector ?? []);
  }

  private async lookUp(key: QueryKey): Promise<Vector | null> {
    const found = await this.find(key);
    this.options.log?.(
      found === null
        ? { event: "query_cache", result: "miss" }
        : { event: "query_cache", result: "hit", layer: found.layer },
    );
    return found?.vector ?? null;
  }

  private async find(key: QueryKey): Promise<{ vector: Vector; layer: "memory" | "database" } | null> {
    const id = memoryKey(key);
    const remembered = this.memory.get(id);
    if (remembered !== undefined) return { vector: remembered, layer: "memory" };
    if (!this.options.shared) return null;
    try {
      const stored = await this.options.shared.get(key);
      if (stored === null || vectorProblem(stored, this.dimension) !== null) return null;
      this.memory.set(id, stored);
      return { vector: stored, layer: "database" };
    } catch (error) {
      this.options.log?.({ event: "query_cache_failed", operation: "get", error });
      return null;
    }
  }

  /** In memory at once; the shared cache stores it behind the answer (its `put` only queues it). */
  private remember(key: QueryKey, vector: Vector): void {
    this.memory.set(memoryKey(key), vector);
    try {
      this.options.shared?.put(key, vector);
    } catch (error) {
      this.options.log?.({ event: "query_cache_failed", operation: "put", error });
    }
  }
}

function memoryKey(key: QueryKey): string {
  return `${key.model}\u0000${key.dimension}\u0000${key.text}`;
}

/**
 * The form under which equal queries meet: Unicode NFC, whitespace runs as one space, trimmed and
 * lower-cased ("Cafetera  Italiana" and "cafetera italiana" are one query).
 */
export function normalizeQuery(text: string): string {
  return text.normalize("NFC").replace(/\s+/gu, " ").trim().toLowerCase();
}
