import { BunPasswordHasher } from "../../src/adapters/security/bun-password-hasher.ts";

/**
 * The service's argon2id hasher at a low cost (1 MiB, one pass: about 1 ms a hash instead of 200 ms
 * on 2 cores), for tests that create users and log in without testing the hashing itself;
 * tests/adapters/security holds the service's own cost to Bun's default.
 */
export const lowCostHasher = () => new BunPasswordHasher({ memoryCost: 1024, timeCost: 1 });
