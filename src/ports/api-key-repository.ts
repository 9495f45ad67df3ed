import type { ApiKey } from "../domain/api-keys.ts";
import type { Permission } from "../domain/caller.ts";

/** A key's row as ManageApiKeys makes it (its secret is derived, never stored). */
export interface ApiKeyRow {
  id: string;
  name: string;
  actions: "*" | readonly Permission[];
  catalogues: "*" | readonly string[];
  expiresAt: Date | null;
}

export interface ApiKeyRepository {
  create(row: ApiKeyRow): Promise<ApiKey>;
  findById(id: string): Promise<ApiKey | null>;
  /** Every key, newest first. */
  list(): Promise<ApiKey[]>;
  /** Deletes the key; false when there is none. Its removal is announced to every watcher (watchChanges). */
  remove(id: string): Promise<boolean>;
  /** Records a use of the key now (`last_used_at`); costs a write: AuthenticateKeys calls it at most once a minute per key. */
  touch(id: string): Promise<void>;
  /**
   * Calls `onChange` with the key's id once its removal is committed, by this process or any other
   * on the database (null: some change to unknown keys), and `onReady` each time it starts watching
   * (at first, and again after changes may have been missed). Resolves with the function that
   * stops it. `onReady` is never called where changes cannot be watched.
   */
  watchChanges(onChange: (keyId: string | null) => void, onReady: () => void): Promise<() => Promise<void>>;
}
