import { DatabaseUnavailable } from "../../src/domain/errors.ts";
import type { Vector } from "../../src/domain/vector.ts";
import type { QueryEmbeddingCache, QueryKey } from "../../src/ports/query-embedding-cache.ts";

/**
 * Query embeddings in a Map, never expiring. Set `down` to make every `get` fail with
 * DatabaseUnavailable and every `put` be lost (counted in `lostPuts`), as a write-behind cache
 * loses what it cannot store.
 */
export class MemoryQueryEmbeddingCache implements QueryEmbeddingCache {
  down = false;
  lostPuts = 0;
  private readonly entries = new Map<string, Vector>();

  get size(): number {
    return this.entries.size;
  }

  async get(key: QueryKey): Promise<Vector | null> {
    this.checkUp();
    const vector = this.entries.get(id(key));
    return vector ? [...vector] : null;
  }

  put(key: QueryKey, vector: Vector): void {
    if (this.down) this.lostPuts++;
    else this.entries.set(id(key), [...vector]);
  }

  async flush(): Promise<void> {}

  private checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }
}

function id(key: QueryKey): string {
  return JSON.stringify([key.model, key.dimension, key.text]);
}
