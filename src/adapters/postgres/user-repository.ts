import { ROLES, type Role } from "../../domain/caller.ts";
import { UserAlreadyExists } from "../../domain/errors.ts";
import type { User, UserSummary } from "../../domain/user.ts";
import type { UserChange, UserRepository } from "../../ports/user-repository.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

interface UserRow {
  id: number | string | bigint;
  username: string;
  password_hash: string;
  token_version: number;
  role: string;
}

const USER_COLUMNS = "id, username, password_hash, token_version, role";

const UNIQUE_VIOLATION = "23505";

/** The channel a change to users is notified on (any schema of the database: a listener forgets everything). */
const USERS_CHANGED = "sku_search_users_changed";

/**
 * Users over PostgreSQL or PGlite. Usernames are compared exactly (case-sensitive). Lookups (every
 * request's token check, logins) go to the read pool, so that they go on while the primary is lost;
 * a password change reaches a standby after the replication lag (its notification does not wait for it).
 */
export class PostgresUserRepository implements UserRepository {
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;
  /** This process's watchers: told of a change made here as soon as it commits, before its notification comes back. */
  private readonly watchers = new Set<(change: UserChange) => void>();

  constructor(db: SqlClient | ReadWriteClients) {
    ({ reads: this.reads, writes: this.writes } = poolsOf(db));
  }

  async findByUsername(username: string): Promise<User | null> {
    const [row] = await this.reads.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE username = $1`, [username]);
    return row ? toUser(row) : null;
  }

  async findById(id: number): Promise<User | null> {
    const [row] = await this.reads.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
    return row ? toUser(row) : null;
  }

  async create(username: string, passwordHash: string, role: Role): Promise<User> {
    try {
      const [row] = await this.writes.query<UserRow>(
        `INSERT INTO users (username, password_hash, role) VALUES ($1, $2, $3) RETURNING ${USER_COLUMNS}`,
        [username, passwordHash, role],
      );
      if (!row) throw new Error("INSERT ... RETURNING returned no row");
      return toUser(row);
    } catch (error) {
      if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) throw new UserAlreadyExists(username);
      throw error;
    }
  }

  async updatePassword(username: string, passwordHash: string): Promise<boolean> {
    const rows = await this.writes.query<{ id: number | string; token_version: number }>(
      `WITH changed AS (
         UPDATE users SET password_hash = $2, token_version = token_version + 1 WHERE username = $1
         RETURNING id, token_version
       )
       SELECT id, token_version, pg_notify($3, id || ' ' || token_version) FROM changed`,
      [username, passwordHash, USERS_CHANGED],
    );
    return this.changed(rows);
  }

  async setRole(username: string, role: Role): Promise<boolean> {
    const rows = await this.writes.query<{ id: number | string; token_version: number }>(
      `WITH changed AS (
         UPDATE users SET role = $2, token_version = token_version + 1 WHERE username = $1
         RETURNING id, token_version
       )
       SELECT id, token_version, pg_notify($3, id || ' ' || token_version) FROM changed`,
      [username, role, USERS_CHANGED],
    );
    return this.changed(rows);
  }

  async remove(username: string): Promise<boolean> {
    const rows = await this.writes.query<{ id: number | string }>(
      `WITH removed AS (DELETE FROM users WHERE username = $1 RETURNING id)
       SELECT id, pg_notify($2, id::text) FROM removed`,
      [username, USERS_CHANGED],
    );
    const [row] = rows;
    if (!row) return false;
    for (const watcher of this.watchers) watcher({ userId: Number(row.id), removed: true });
    return true;
  }

  /** Tells this process's watchers of a password or role change committed here; false when no row changed. */
  private changed(rows: { id: number | string; token_version: number }[]): boolean {
    const [row] = rows;
    if (!row) return false;
    for (const watcher of this.watchers) watcher({ userId: Number(row.id), tokenVersion: Number(row.token_version) });
    return true;
  }

  /**
   * A password or role change ("<id> <new token version>") and a removal ("<id>") notify USERS_CHANGED in
   * their own statement, so listeners hear of it when it commits (not before), from the primary,
   * even while standbys still lag. Without a client that can listen, `onReady` is never called.
   */
  async watchChanges(onChange: (change: UserChange) => void, onReady: () => void): Promise<() => Promise<void>> {
    if (!this.writes.listen) return async () => {};
    this.watchers.add(onChange);
    const stop = await this.writes
      .listen(USERS_CHANGED, (payload) => onChange(parseChange(payload)), onReady)
      .catch((error) => {
        this.watchers.delete(onChange);
        throw error;
      });
    return async () => {
      this.watchers.delete(onChange);
      await stop();
    };
  }

  async count(): Promise<number> {
    const [row] = await this.writes.query<{ n: number | string | bigint }>("SELECT count(*) AS n FROM users");
    return Number(row?.n ?? 0);
  }

  async list(): Promise<UserSummary[]> {
    const rows = await this.reads.query<{
      id: number | string;
      username: string;
      role: string;
      created_at: Date | string;
    }>("SELECT id, username, role, created_at FROM users ORDER BY username");
    return rows.map((row) => ({
      id: Number(row.id),
      username: row.username,
      role: toRole(row.role),
      createdAt: new Date(row.created_at),
    }));
  }
}

/** A USERS_CHANGED payload; anything else (another version's) as a change of unknown users. */
function parseChange(payload: string): UserChange {
  const match = /^([0-9]+)(?: ([0-9]+))?$/.exec(payload);
  if (!match) return { userId: null };
  const userId = Number(match[1]);
  return match[2] === undefined ? { userId, removed: true } : { userId, tokenVersion: Number(match[2]) };
}

function toUser(row: UserRow): User {
  return {
    id: Number(row.id),
    username: row.username,
    passwordHash: row.password_hash,
    tokenVersion: Number(row.token_version),
    role: toRole(row.role),
  };
}

/** A stored role (the column's CHECK allows only these). */
function toRole(stored: string): Role {
  if (!(ROLES as readonly string[]).includes(stored)) throw new Error(`unknown role in the users table: ${stored}`);
  return stored as Role;
}
