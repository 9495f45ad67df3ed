import type { ApiKey } from "../../domain/api-keys.ts";
import { PERMISSIONS, type Permission } from "../../domain/caller.ts";
import type { ApiKeyRepository, ApiKeyRow } from "../../ports/api-key-repository.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

interface KeyRow {
  id: string;
  name: string;
  actions: string[];
  catalogues: string[];
  expires_at: Date | string | null;
  created_at: Date | string;
  last_used_at: Date | string | null;
}

const COLUMNS = "id, name, actions, catalogues, expires_at, created_at, last_used_at";

/** The channel a key's removal is notified on (its id as the payload). */
const KEYS_CHANGED = "sku_search_keys_changed";

/**
 * API keys over PostgreSQL or PGlite: one row per key, no secret in it. `actions` and `catalogues`
 * are text arrays holding `*` for "all". Lookups (each request's key check, when not remembered) go
 * to the read pool; a removal notifies every instance from the primary when it commits.
 */
export class PostgresApiKeyRepository implements ApiKeyRepository {
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;
  /** This process's watchers: told of a removal made here as soon as it commits, before its notification comes back. */
  private readonly watchers = new Set<(keyId: string | null) => void>();

  constructor(db: SqlClient | ReadWriteClients) {
    ({ reads: this.reads, writes: this.writes } = poolsOf(db));
  }

  async create({ id, name, actions, catalogues, expiresAt }: ApiKeyRow): Promise<ApiKey> {
    const [row] = await this.writes.query<KeyRow>(
      `INSERT INTO api_keys (id, name, actions, catalogues, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [id, name, asArray(actions), asArray(catalogues), expiresAt],
    );
    if (!row) throw new Error("INSERT ... RETURNING returned no row");
    return toKey(row);
  }

  async findById(id: string): Promise<ApiKey | null> {
    const [row] = await this.reads.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    return row ? toKey(row) : null;
  }

  async list(): Promise<ApiKey[]> {
    const rows = await this.reads.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at DESC, id`);
    return rows.map(toKey);
  }

  async remove(id: string): Promise<boolean> {
    const rows = await this.writes.query(
      `WITH removed AS (DELETE FROM api_keys WHERE id = $1 RETURNING id)
       SELECT id, pg_notify($2, id) FROM removed`,
      [id, KEYS_CHANGED],
    );
    if (rows.length === 0) return false;
    for (const watcher of this.watchers) watcher(id);
    return true;
  }

  async touch(id: string): Promise<void> {
    await this.writes.query("UPDATE api_keys SET last_used_at = now() WHERE id = $1", [id]);
  }

  async watchChanges(onChange: (keyId: string | null) => void, onReady: () => void): Promise<() => Promise<void>> {
    if (!this.writes.listen) return async () => {};
    this.watchers.add(onChange);
    const stop = await this.writes
      .listen(KEYS_CHANGED, (payload) => onChange(payload === "" ? null : payload), onReady)
      .catch((error) => {
        this.watchers.delete(onChange);
        throw error;
      });
    return async () => {
      this.watchers.delete(onChange);
      await stop();
    };
  }
}

function asArray(value: "*" | readonly string[]): string[] {
  return value === "*" ? ["*"] : [...value];
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    actions: row.actions.includes("*")
      ? "*"
      : row.actions.filter((action): action is Permission => (PERMISSIONS as readonly string[]).includes(action)),
    catalogues: row.catalogues.includes("*") ? "*" : row.catalogues,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  };
}
