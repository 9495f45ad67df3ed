/**
 * The one place that reads settings. `loadConfig` takes the environment as a plain object
 * (Bun has already merged a `.env` file into process.env), validates every setting and throws
 * a ConfigError naming each bad one, so the service fails at startup, never halfway through.
 */

import { JWT_ALGORITHMS, type JwtAlgorithm } from "../adapters/http/jwt-token-service.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../domain/user.ts";

export const EMBEDDING_PROVIDERS = ["local"] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];

export const GENERATION_PROVIDERS = ["local"] as const;
export type GenerationProvider = (typeof GENERATION_PROVIDERS)[number];

/** A given JWT secret must carry at least this many bytes (256 bits, as HS256's key size). */
export const JWT_SECRET_MIN_BYTES = 32;

export interface Config {
  projectName: string;
  version: string;
  /** Unset: the embedded PGlite database in dataDir. */
  databaseUrl: string | undefined;
  /** Unset: a random secret generated once and kept in dataDir. */
  jwtSecret: string | undefined;
  algorithm: JwtAlgorithm;
  accessTokenExpireMinutes: number;
  host: string;
  port: number;
  dataDir: string;
  adminUsername: string;
  /** Unset: a random password is generated for the first admin and printed once. */
  adminPassword: string | undefined;
  /** False opens POST /products/search to anonymous clients. */
  searchRequiresAuth: boolean;
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number;
  /** Behind a reverse proxy: take the client address from the last X-Forwarded-For entry. */
  trustProxy: boolean;
  embeddingProvider: EmbeddingProvider;
  /** Folder of the offline model; unset: the one installed with the service. */
  localModelDir: string | undefined;
  generationProviders: GenerationProvider[];
  /** Per-attempt time limit for one generator of the chain, in milliseconds. */
  generationTimeoutMs: number;
  logLevel: "debug" | "info" | "warn" | "error";
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join("\n")}`);
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env): Config {
  const problems: string[] = [];
  const read = new SettingReader(env, problems);

  const jwtSecret = read.optional("JWT_SECRET");
  if (jwtSecret !== undefined && new TextEncoder().encode(jwtSecret).length < JWT_SECRET_MIN_BYTES) {
    problems.push(`JWT_SECRET: must be at least ${JWT_SECRET_MIN_BYTES} bytes long (or unset, to generate one)`);
  }
  const databaseUrl = read.optional("DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push("DATABASE_URL: must be a postgres:// or postgresql:// connection string");
  }
  const adminUsername = read.optional("ADMIN_USERNAME") ?? "admin";
  if (adminUsername.length > USERNAME_MAX_LENGTH) {
    problems.push(`ADMIN_USERNAME: must be at most ${USERNAME_MAX_LENGTH} characters long`);
  }
  const adminPassword = read.optional("ADMIN_PASSWORD");
  if (
    adminPassword !== undefined &&
    (adminPassword.length < PASSWORD_MIN_LENGTH || adminPassword.length > PASSWORD_MAX_LENGTH)
  ) {
    problems.push(`ADMIN_PASSWORD: must be from ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`);
  }

  const config: Config = {
    projectName: read.optional("PROJECT_NAME") ?? "sku-search",
    version: read.optional("VERSION") ?? "1.0.0",
    databaseUrl,
    jwtSecret,
    algorithm: read.oneOf("ALGORITHM", JWT_ALGORITHMS, "HS256"),
    accessTokenExpireMinutes: read.integer("ACCESS_TOKEN_EXPIRE_MINUTES", 30, 1, 60 * 24 * 365),
    host: read.optional("HOST") ?? "0.0.0.0",
    port: read.integer("PORT", 8000, 0, 65535),
    dataDir: read.optional("DATA_DIR") ?? "./data",
    adminUsername,
    adminPassword,
    searchRequiresAuth: read.boolean("SEARCH_REQUIRES_AUTH", true),
    maxBodyBytes: read.integer("MAX_BODY_BYTES", 64 * 1024, 1024, 16 * 1024 * 1024),
    trustProxy: read.boolean("TRUST_PROXY", false),
    embeddingProvider: read.oneOf("EMBEDDING_PROVIDER", EMBEDDING_PROVIDERS, "local"),
    localModelDir: read.optional("LOCAL_MODEL_DIR"),
    generationProviders: read.list("GENERATION_PROVIDERS", GENERATION_PROVIDERS, ["local"]),
    generationTimeoutMs: read.integer("GENERATION_TIMEOUT_MS", 20_000, 100, 600_000),
    logLevel: read.oneOf("LOG_LEVEL", ["debug", "info", "warn", "error"] as const, "info"),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

class SettingReader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  /** The trimmed value, or undefined when unset or blank. */
  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw) || value < min || value > max) {
      this.problems.push(`${name}: must be a whole number from ${min} to ${max}, got '${raw}'`);
      return fallback;
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.optional(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (["true", "1", "yes", "on"].includes(raw)) return true;
    if (["false", "0", "no", "off"].includes(raw)) return false;
    this.problems.push(`${name}: must be true or false, got '${raw}'`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const match = allowed.find((option) => option.toLowerCase() === raw.toLowerCase());
    if (match === undefined) {
      this.problems.push(`${name}: must be one of ${allowed.join(", ")}, got '${raw}'`);
      return fallback;
    }
    return match;
  }

  list<T extends string>(name: string, allowed: readonly T[], fallback: T[]): T[] {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const items = raw
      .split(",")
      .map((item) => item.trim().toLowerCase())
      .filter(Boolean);
    const unknown = items.filter((item) => !allowed.includes(item as T));
    if (items.length === 0 || unknown.length > 0) {
      this.problems.push(`${name}: a comma-separated list of ${allowed.join(", ")}, got '${raw}'`);
      return fallback;
    }
    return [...new Set(items as T[])];
  }
}
