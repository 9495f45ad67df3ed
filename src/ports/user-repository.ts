import type { Role } from "../domain/caller.ts";
import type { User, UserSummary } from "../domain/user.ts";

export interface UserRepository {
  findByUsername(username: string): Promise<User | null>;
  findById(id: number): Promise<User | null>;
  /** Throws UserAlreadyExists when the username is taken. */
  create(username: string, passwordHash: string, role: Role): Promise<User>;
  /** Sets the password and increments the user's tokenVersion. False when there is no such user. */
  updatePassword(username: string, passwordHash: string): Promise<boolean>;
  /** Sets the role and increments the user's tokenVersion (tokens of the old role end). False when there is no such user. */
  setRole(username: string, role: Role): Promise<boolean>;
  /** False when there is no such user. */
  remove(username: string): Promise<boolean>;
  count(): Promise<number>;
  /** Every user, by username (never their password hashes). */
  list(): Promise<UserSummary[]>;
  /**
   * Calls `onChange` once a password or role change or a removal is committed, by this process or any
   * other on the database, and `onReady` each time it starts watching (at first, and again after
   * changes may have been missed, e.g. its connection was lost and made again). Resolves with the
   * function that stops it. `onReady` is never called where changes cannot be watched.
   */
  watchChanges(onChange: (change: UserChange) => void, onReady: () => void): Promise<() => Promise<void>>;
}

/**
 * A change that ends tokens: the user's password changed (tokens of an older version end), the
 * user was removed, or some change to unknown users (userId null: every remembered token is doubtful).
 */
export type UserChange =
  | { userId: number; tokenVersion: number }
  | { userId: number; removed: true }
  | { userId: null };
