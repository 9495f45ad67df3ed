import type { ApiKey } from "../../src/domain/api-keys.ts";
import { DatabaseUnavailable } from "../../src/domain/errors.ts";
import type { ApiKeyRepository, ApiKeyRow } from "../../src/ports/api-key-repository.ts";
import type { Clock } from "../../src/ports/clock.ts";

/** API keys in memory. Set `down` to make every call fail with DatabaseUnavailable; `reads` counts findById calls. */
export class MemoryApiKeyRepository implements ApiKeyRepository {
  down = false;
  reads = 0;
  touches: string[] = [];
  private readonly keys = new Map<string, ApiKey>();
  private readonly watchers = new Set<(keyId: string | null) => void>();

  constructor(private readonly clock: Clock = { now: () => Date.now() }) {}

  async create(row: ApiKeyRow): Promise<ApiKey> {
    this.checkUp();
    const key: ApiKey = { ...row, createdAt: new Date(this.clock.now()), lastUsedAt: null };
    this.keys.set(row.id, key);
    return { ...key };
  }

  async findById(id: string): Promise<ApiKey | null> {
    this.checkUp();
    this.reads++;
    const key = this.keys.get(id);
    return key ? { ...key } : null;
  }

  async list(): Promise<ApiKey[]> {
    this.checkUp();
    // As the SQL orders them: newest first, ties by id.
    return [...this.keys.values()]
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || a.id.localeCompare(b.id))
      .map((key) => ({ ...key }));
  }

  async remove(id: string): Promise<boolean> {
    this.checkUp();
    if (!this.keys.delete(id)) return false;
    for (const watcher of this.watchers) watcher(id);
    return true;
  }

  async touch(id: string): Promise<void> {
    this.checkUp();
    this.touches.push(id);
    const key = this.keys.get(id);
    if (key) key.lastUsedAt = new Date(this.clock.now());
  }

  async watchChanges(onChange: (keyId: string | null) => void, onReady: () => void): Promise<() => Promise<void>> {
    this.watchers.add(onChange);
    onReady();
    return async () => void this.watchers.delete(onChange);
  }

  private checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }
}
