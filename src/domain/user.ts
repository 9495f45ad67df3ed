import type { Role } from "./caller.ts";

export interface User {
  id: number;
  username: string;
  passwordHash: string;
  /**
   * Counts password and role changes: tokens carry the version they were issued under and die with
   * it (a role change ends the tokens of the old role, so none holds more than the user now may).
   */
  tokenVersion: number;
  /** What every token of the user may do (caller.ts ROLE_GRANTS), read from the database at each verification. */
  role: Role;
}

/** A user as the operator lists them: no password hash. */
export interface UserSummary {
  id: number;
  username: string;
  role: Role;
  createdAt: Date;
}

export const USERNAME_MAX_LENGTH = 150;
export const PASSWORD_MAX_LENGTH = 1024;
export const PASSWORD_MIN_LENGTH = 8;
