import { expect, test } from "bun:test";
import { BunPasswordHasher } from "../../../src/adapters/security/bun-password-hasher.ts";

test("hashes with argon2id at Bun's default cost (64 MiB, 2 passes) and verifies only the right password", async () => {
  const hasher = new BunPasswordHasher();
  const hash = await hasher.hash("una-contraseña-larga");
  expect(hash).toStartWith("$argon2id$v=19$m=65536,t=2,p=1$");
  expect(await hasher.verify("una-contraseña-larga", hash)).toBe(true);
  expect(await hasher.verify("otra-contraseña", hash)).toBe(false);
  expect(await hasher.verify("una-contraseña-larga", "not a hash")).toBe(false);
});

test("a given cost is used for new hashes; a hash is verified at the cost it records", async () => {
  const cheap = await new BunPasswordHasher({ memoryCost: 1024, timeCost: 1 }).hash("una-contraseña-larga");
  expect(cheap).toStartWith("$argon2id$v=19$m=1024,t=1,p=1$");
  expect(await new BunPasswordHasher().verify("una-contraseña-larga", cheap)).toBe(true);
});
