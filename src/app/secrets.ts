import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { JWT_SECRET_MIN_BYTES } from "./config.ts";

const JWT_SECRET_FILE = "jwt-secret";

/**
 * The JWT signing secret: the configured one, or a random 256-bit secret generated on first
 * start and kept in the data directory (mode 0600) so tokens survive restarts.
 */
export function jwtSecretFor(configured: string | undefined, dataDir: string): string {
  if (configured !== undefined) return configured;
  const path = join(dataDir, JWT_SECRET_FILE);
  if (existsSync(path)) {
    const stored = readFileSync(path, "utf8").trim();
    if (new TextEncoder().encode(stored).length >= JWT_SECRET_MIN_BYTES) return stored;
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64url");
  writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: "w" });
  chmodSync(path, 0o600);
  return secret;
}

const INITIAL_ADMIN_PASSWORD_FILE = "initial-admin-password";

/** Where the first start writes the admin password it generated. */
export function initialAdminPasswordFile(dataDir: string): string {
  return resolve(dataDir, INITIAL_ADMIN_PASSWORD_FILE);
}

/**
 * Writes the generated first admin password to a file only its owner can read (mode 0600), so it
 * never appears in the logs; returns the file's path. `users reset-password` deletes it.
 */
export function writeInitialAdminPassword(dataDir: string, password: string): string {
  const path = initialAdminPasswordFile(dataDir);
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path, `${password}\n`, { mode: 0o600, flag: "w" });
  chmodSync(path, 0o600);
  return path;
}
