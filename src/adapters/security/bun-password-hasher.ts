import type { PasswordHasher } from "../../ports/password-hasher.ts";

/** argon2id through Bun.password (memory-hard; parameters are Bun's defaults). */
export class BunPasswordHasher implements PasswordHasher {
  hash(password: string): Promise<string> {
    return Bun.password.hash(password, { algorithm: "argon2id" });
  }

  async verify(password: string, hash: string): Promise<boolean> {
    try {
      return await Bun.password.verify(password, hash);
    } catch {
      return false;
    }
  }
}
