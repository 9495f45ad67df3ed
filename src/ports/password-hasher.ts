export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False on mismatch; never throws for a wrong password. */
  verify(password: string, hash: string): Promise<boolean>;
}
