import type { User, UserSummary } from "../domain/user.ts";

export interface UserRepository {
  findByUsername(username: string): Promise<User | null>;
  findById(id: number): Promise<User | null>;
  /** Throws UserAlreadyExists when the username is taken. */
  create(username: string, passwordHash: string): Promise<User>;
  /** Sets the password and increments the user's tokenVersion. False when there is no such user. */
  updatePassword(username: string, passwordHash: string): Promise<boolean>;
  /** False when there is no such user. */
  remove(username: string): Promise<boolean>;
  count(): Promise<number>;
  /** Every user, by username (never their password hashes). */
  list(): Promise<UserSummary[]>;
}
