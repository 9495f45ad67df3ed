import type { Role } from "../../src/domain/caller.ts";
import { DatabaseUnavailable, UserAlreadyExists } from "../../src/domain/errors.ts";
import type { User, UserSummary } from "../../src/domain/user.ts";
import type { UserChange, UserRepository } from "../../src/ports/user-repository.ts";

/** Users in memory. Set `down` to make every call fail with DatabaseUnavailable. */
export class MemoryUserRepository implements UserRepository {
  down = false;
  private readonly watchers = new Set<(change: UserChange) => void>();
  private readonly users = new Map<string, User>();
  private nextId = 1;
  private readonly created = new Map<string, Date>();

  async findByUsername(username: string): Promise<User | null> {
    this.checkUp();
    const user = this.users.get(username);
    return user ? { ...user } : null;
  }

  async findById(id: number): Promise<User | null> {
    this.checkUp();
    const user = [...this.users.values()].find((candidate) => candidate.id === id);
    return user ? { ...user } : null;
  }

  async create(username: string, passwordHash: string, role: Role): Promise<User> {
    this.checkUp();
    if (this.users.has(username)) throw new UserAlreadyExists(username);
    const user: User = { id: this.nextId++, username, passwordHash, tokenVersion: 0, role };
    this.users.set(username, user);
    this.created.set(username, new Date());
    return { ...user };
  }

  async updatePassword(username: string, passwordHash: string): Promise<boolean> {
    this.checkUp();
    const user = this.users.get(username);
    if (!user) return false;
    user.passwordHash = passwordHash;
    user.tokenVersion += 1;
    this.changed({ userId: user.id, tokenVersion: user.tokenVersion });
    return true;
  }

  async setRole(username: string, role: Role): Promise<boolean> {
    this.checkUp();
    const user = this.users.get(username);
    if (!user) return false;
    user.role = role;
    user.tokenVersion += 1;
    this.changed({ userId: user.id, tokenVersion: user.tokenVersion });
    return true;
  }

  async remove(username: string): Promise<boolean> {
    this.checkUp();
    const user = this.users.get(username);
    if (!user) return false;
    this.users.delete(username);
    this.changed({ userId: user.id, removed: true });
    return true;
  }

  async watchChanges(onChange: (change: UserChange) => void, onReady: () => void): Promise<() => Promise<void>> {
    this.watchers.add(onChange);
    onReady();
    return async () => void this.watchers.delete(onChange);
  }

  private changed(change: UserChange): void {
    for (const watcher of this.watchers) watcher(change);
  }

  async count(): Promise<number> {
    this.checkUp();
    return this.users.size;
  }

  async list(): Promise<UserSummary[]> {
    this.checkUp();
    return [...this.users.values()]
      .sort((a, b) => (a.username < b.username ? -1 : 1))
      .map(({ id, username, role }) => ({ id, username, role, createdAt: this.created.get(username) as Date }));
  }

  private checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }
}
