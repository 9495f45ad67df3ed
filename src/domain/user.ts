export interface User {
  id: number;
  username: string;
  passwordHash: string;
  /** Counts password changes: tokens carry the version they were issued under and die with it. */
  tokenVersion: number;
}

/** A user as the operator lists them: no password hash. */
export interface UserSummary {
  id: number;
  username: string;
  createdAt: Date;
}

export const USERNAME_MAX_LENGTH = 150;
export const PASSWORD_MAX_LENGTH = 1024;
export const PASSWORD_MIN_LENGTH = 8;
