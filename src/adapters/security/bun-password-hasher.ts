import type { PasswordHasher } from "../../ports/password-hasher.ts";

/** argon2id's cost: memory in KiB and the number of passes. */
export interface Argon2Cost {
  memoryCost: number;
  timeCost: number;
}

/**
 * argon2id through Bun.password (memory-hard). Its cost is Bun's default (64 MiB, 2 passes) unless
 * one is given: only tests give one, a low one, where hashing is not what they test.
 */
export class BunPasswordHasher implements PasswordHasher {
  constructor(private readonly cost?: Argon2Cost) {}

  hash(password: string): Promise<string> {
    return Bun.password.hash(password, { algorithm: "argon2id", ...this.cost });
  }

  async verify(password: string, hash: string): Promise<boolean> {
    try {
      return await Bun.password.verify(password, hash);
    } catch {
      return false;
    }
  }
}
