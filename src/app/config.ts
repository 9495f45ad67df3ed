/**
 * The one place that reads settings. `loadConfig` takes the environment as a plain object
 * (Bun has already merged a `.env` file into process.env), validates every setting and throws
 * a ConfigError naming each bad one, so the service fails at startup, never halfway through.
 */

import { JWT_ALGORITHMS, type JwtAlgorithm } from "../adapters/http/auth/jwt-algorithms.ts";
import { DEFAULT_LEXICAL_RANK_MAX_ROWS, DEFAULT_SEARCH_PLAN } from "../adapters/postgres/product-repository.ts";
import {
  VECTOR_INDEX_KIND_SETTINGS,
  type VectorIndexKindSetting,
  type VectorSearchSettings,
} from "../adapters/postgres/vector-index.ts";
import {
  ANTHROPIC_DEFAULT_GENERATION_MODEL,
  GOOGLE_DEFAULT_EMBEDDING_MODEL,
  GOOGLE_DEFAULT_GENERATION_MODEL,
  OPENAI_DEFAULT_EMBEDDING_MODEL,
  OPENAI_DEFAULT_GENERATION_MODEL,
  OPENAI_EMBEDDING_ENCODINGS,
  type OpenAIEmbeddingEncoding,
} from "../adapters/providers/default-models.ts";
import type { RetryPolicy } from "../adapters/providers/resilient-fetch.ts";
import { CATALOGUE_NAME } from "../domain/api-keys.ts";
import { ATTRIBUTE_KEY } from "../domain/attributes.ts";
import { DEFAULT_RELEVANT_SHARE } from "../domain/browse-results.ts";
import { SEARCH_MODES, type SearchMode } from "../domain/hybrid-ranking.ts";
import { VECTOR_INDEX_MODES, type VectorIndexPolicy } from "../domain/maintain-vector-index.ts";
import { DEFAULT_CATEGORY_BOOST, DEFAULT_HYBRID_ALPHA } from "../domain/search-and-recommend.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../domain/user.ts";

export const EMBEDDING_PROVIDERS = ["openai", "google", "local"] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];

/**
 * Spanish → English translation of the texts to embed: `auto` turns it on for the English-only
 * offline model when Apertium is installed; `on` for any embedder; `off` never.
 */
export const TRANSLATION_MODES = ["auto", "on", "off"] as const;
export type TranslationMode = (typeof TRANSLATION_MODES)[number];

/** In the default order of the chain: each one whose key is set, then local. */
export const GENERATION_PROVIDERS = ["openai", "anthropic", "google", "local"] as const;
export type GenerationProvider = (typeof GENERATION_PROVIDERS)[number];
export type RemoteProvider = Exclude<GenerationProvider, "local">;

/** How to reach one remote provider; `apiKey` is undefined when only a compatible server is configured. */
export interface ProviderSettings {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  /** Unset for Anthropic, which has no embeddings. */
  embeddingModel: string | undefined;
  generationModel: string;
}

/** Each adapter names its own defaults; config only gathers them. */
const DEFAULT_MODELS = {
  openai: { embedding: OPENAI_DEFAULT_EMBEDDING_MODEL, generation: OPENAI_DEFAULT_GENERATION_MODEL },
  anthropic: { generation: ANTHROPIC_DEFAULT_GENERATION_MODEL },
  google: { embedding: GOOGLE_DEFAULT_EMBEDDING_MODEL, generation: GOOGLE_DEFAULT_GENERATION_MODEL },
} as const;

/** The spec's embedding length; a compatible server's model may need another. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 3072;

/** A given JWT secret must carry at least this many bytes (256 bits, as HS256's key size). */
export const JWT_SECRET_MIN_BYTES = 32;

/** METRICS_CATALOGUES names at most this many: each multiplies the series of the request metrics. */
const MAX_LABELLED_CATALOGUES = 50;

/** Number attributes INDEXED_NUMBER_ATTRIBUTES may name: each is an index on every product's row. */
const MAX_INDEXED_NUMBER_ATTRIBUTES = 16;

/** A metrics token must be at least this long (visible ASCII, no spaces: it travels in a header). */
export const METRICS_TOKEN_MIN_LENGTH = 16;

export interface Config {
  projectName: string;
  version: string;
  /** Unset: the embedded PGlite database in dataDir. */
  databaseUrl: string | undefined;
  /**
   * Where reads and searches go (DATABASE_READ_URL: standbys, multi-host allowed); unset: DATABASE_URL.
   * Writes, migrations, rate-limit counters, idempotency records and upkeep always go to DATABASE_URL.
   */
  databaseReadUrl: string | undefined;
  /** A transaction-pooling proxy (pgbouncer) sits in front of the database: no prepared statements nor startup parameters. */
  databaseTransactionPooler: boolean;
  /** How long a caller's read waits on a standby for its own last write before going to the primary, in ms. */
  readYourWritesWaitMs: number;
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
  /** Exact origins whose browser scripts may call the API (CORS); empty: none. */
  corsOrigins: string[];
  /**
   * Where the search page's product pictures may come from besides the service itself and data:
   * URLs (its Content-Security-Policy's img-src): `https:` (any HTTPS origin, the default) and/or
   * exact origins; empty: none.
   */
  uiImageOrigins: string[];
  /**
   * GET /metrics: served when either is set. `port`: on a listener of its own (at HOST); `token`: the
   * bearer token a scraper must send (on the main port, or on `port` too when both are set).
   */
  metrics: {
    token: string | undefined;
    port: number | undefined;
    /**
     * METRICS_CATALOGUES: the catalogues the metrics' `catalogue` label names; any other is `other`,
     * so the label takes a bounded number of values however many catalogues there are.
     */
    catalogues: string[];
  };
  /** Requests per client, catalogue and window (0: not limited): searches, and writes of products. */
  rateLimits: { search: number; write: number; windowSeconds: number };
  embeddingProvider: EmbeddingProvider;
  /** Length of the remote embedders' vectors (the offline model's is fixed at 384). */
  embeddingDimensions: number;
  /**
   * How the OpenAI embedder asks for its vectors: `base64` (OpenAI's SDK default: 4 bytes a number
   * in base64, parsed several times faster than JSON numbers; a server that ignores it and answers
   * numbers is read alike) or `float`, for a compatible server that refuses base64.
   */
  openaiEmbeddingEncoding: OpenAIEmbeddingEncoding;
  /** Folder of the offline model; unset: the one installed with the service. */
  localModelDir: string | undefined;
  providers: Record<RemoteProvider, ProviderSettings>;
  /** The chain, in order; it ends with local unless generationRequired. */
  generationProviders: GenerationProvider[];
  /** True: when every remote generator fails, the search fails (503) instead of the local generator answering. */
  generationRequired: boolean;
  /** Time limit of one link of the chain, its retries included, in milliseconds. */
  generationTimeoutMs: number;
  /** Retries and time limits of every request to a remote provider. */
  providerRetry: RetryPolicy;
  /** Query embeddings kept in memory (0: none); they are also kept in the database for queryCacheDays. */
  queryCacheSize: number;
  /** Days a query embedding stays in the database cache (0: not persisted). */
  queryCacheDays: number;
  /** Most query embeddings kept in the database cache; the oldest beyond it are deleted. */
  queryCacheMaxRows: number;
  /** Time budget of one HTTP request, in ms (503 with Retry-After past it). */
  requestTimeoutMs: number;
  /** How searches rank when the request does not say: `semantic` (the contract's), `hybrid` or `lexical`. */
  searchMode: SearchMode;
  /** The weight of the semantic score in hybrid searches that give none, 0 to 1. */
  hybridAlpha: number;
  /** The weight of the boost of the categories that dominate a hybrid or lexical search's nearest products, 0 to 1. */
  categoryBoost: number;
  /**
   * The relevance threshold: the cosine the best product must reach for a search to answer any
   * (0 to 1; 0: every search answers); "auto": the one calibrated for the offline model, none for others.
   */
  searchMinScore: number | "auto";
  /**
   * A browsing search's relevant results: those of its best 1,000 scoring at least this share of
   * its best result's score (0 to 1; 0: all 1,000).
   */
  relevantShare: number;
  /** Days searches and their clicks are kept for the analytics (0: none are kept). */
  analyticsRetentionDays: number;
  /** Largest bulk import request (POST /products/bulk), in bytes. */
  bulkMaxBytes: number;
  /** Most products in one bulk import request. */
  bulkMaxItems: number;
  /** Hours a finished import job (and its report) is kept before it is deleted. */
  jobRetentionHours: number;
  /**
   * When the vector index is built (domain/maintain-vector-index.ts), the index scan's ef_search, the
   * re-rank depth and the plans of filtered searches (adapters/postgres/vector-index.ts).
   */
  vectorSearch: VectorIndexPolicy & VectorSearchSettings;
  /** The kind of vector index from 512 dimensions: IVFFlat or HNSW on the bits, or HNSW on the half-precision copy. */
  vectorIndexKind: VectorIndexKindSetting;
  /** maintenance_work_mem of an index build: an amount, or `auto` (the graph's estimated size). */
  vectorIndexBuildMemory: string;
  /** max_parallel_maintenance_workers of an index build on a PostgreSQL server. */
  vectorIndexBuildWorkers: number;
  /** Longest wait for one database statement while serving, in ms (PostgreSQL only: PGlite runs in process). */
  databaseTimeoutMs: number;
  translation: {
    mode: TranslationMode;
    /** Apertium's install prefix (its bin/ and share/apertium/); unset: the one on PATH. */
    apertiumDir: string | undefined;
    /** Time limit of translating one text, in milliseconds. */
    timeoutMs: number;
  };
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
  const databaseReadUrl = read.optional("DATABASE_READ_URL");
  if (databaseReadUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseReadUrl)) {
    problems.push(
      "DATABASE_READ_URL: must be a postgres:// or postgresql:// connection string (several hosts allowed)",
    );
  } else if (databaseReadUrl !== undefined && databaseUrl === undefined) {
    problems.push("DATABASE_READ_URL: needs DATABASE_URL too (the primary, where writes go)");
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

  const providers: Record<RemoteProvider, ProviderSettings> = {
    openai: {
      apiKey: read.optional("OPENAI_API_KEY"),
      baseUrl: read.url("OPENAI_BASE_URL"),
      embeddingModel: read.optional("OPENAI_EMBEDDING_MODEL") ?? DEFAULT_MODELS.openai.embedding,
      generationModel: read.optional("OPENAI_GENERATION_MODEL") ?? DEFAULT_MODELS.openai.generation,
    },
    anthropic: {
      apiKey: read.optional("ANTHROPIC_API_KEY"),
      baseUrl: read.url("ANTHROPIC_BASE_URL"),
      embeddingModel: undefined,
      generationModel: read.optional("ANTHROPIC_GENERATION_MODEL") ?? DEFAULT_MODELS.anthropic.generation,
    },
    google: {
      apiKey: read.optional("GOOGLE_API_KEY") ?? read.optional("GEMINI_API_KEY"),
      baseUrl: read.url("GOOGLE_BASE_URL"),
      embeddingModel: read.optional("GOOGLE_EMBEDDING_MODEL") ?? DEFAULT_MODELS.google.embedding,
      generationModel: read.optional("GOOGLE_GENERATION_MODEL") ?? DEFAULT_MODELS.google.generation,
    },
  };
  const keyNames: Record<RemoteProvider, string> = {
    openai: "OPENAI_API_KEY",
    anthropic: "ANTHROPIC_API_KEY",
    google: "GOOGLE_API_KEY (or GEMINI_API_KEY)",
  };
  const reachable = (provider: RemoteProvider) =>
    providers[provider].apiKey !== undefined || providers[provider].baseUrl !== undefined;
  const needsKey = (setting: string, provider: RemoteProvider) => {
    if (!reachable(provider)) {
      problems.push(`${setting}: ${provider} needs ${keyNames[provider]} (or ${provider.toUpperCase()}_BASE_URL)`);
    }
  };

  const keyed = (["openai", "google"] as const).find((provider) => providers[provider].apiKey !== undefined);
  const embeddingProvider = read.oneOf("EMBEDDING_PROVIDER", EMBEDDING_PROVIDERS, keyed ?? "local");
  if (embeddingProvider !== "local") needsKey("EMBEDDING_PROVIDER", embeddingProvider);

  const generationRequired = read.boolean("GENERATION_REQUIRED", false);
  const remoteWithKeys = (["openai", "anthropic", "google"] as const).filter((p) => providers[p].apiKey !== undefined);
  const listed = read.list("GENERATION_PROVIDERS", GENERATION_PROVIDERS, [...remoteWithKeys, "local"]);
  const remote = listed.filter((provider): provider is RemoteProvider => provider !== "local");
  for (const provider of remote) needsKey("GENERATION_PROVIDERS", provider);
  if (listed.includes("local") && listed.at(-1) !== "local") {
    problems.push("GENERATION_PROVIDERS: local always answers, so it can only be the last of the chain");
  }
  if (generationRequired && read.optional("GENERATION_PROVIDERS")?.toLowerCase().includes("local")) {
    problems.push("GENERATION_PROVIDERS: leave out local when GENERATION_REQUIRED=true (it would always answer)");
  }
  if (generationRequired && remote.length === 0) {
    problems.push(
      "GENERATION_REQUIRED: true needs at least one remote provider (a key, or GENERATION_PROVIDERS naming one)",
    );
  }
  const generationProviders: GenerationProvider[] = generationRequired ? remote : [...remote, "local"];

  const providerRetry: RetryPolicy = {
    attemptTimeoutMs: read.integer("PROVIDER_TIMEOUT_MS", 15_000, 100, 600_000),
    budgetMs: read.integer("PROVIDER_RETRY_BUDGET_MS", 30_000, 100, 3_600_000),
    maxRetries: read.integer("PROVIDER_MAX_RETRIES", 3, 0, 10),
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  };

  const port = read.integer("PORT", 8000, 0, 65535);
  const metricsToken = read.optional("METRICS_TOKEN");
  if (
    metricsToken !== undefined &&
    (metricsToken.length < METRICS_TOKEN_MIN_LENGTH || !/^[\x21-\x7e]+$/.test(metricsToken))
  ) {
    problems.push(
      `METRICS_TOKEN: must be at least ${METRICS_TOKEN_MIN_LENGTH} visible ASCII characters without spaces (or unset)`,
    );
  }
  const metricsPort = read.optionalInteger("METRICS_PORT", 1, 65535);
  if (metricsPort !== undefined && metricsPort === port) {
    problems.push("METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT behind METRICS_TOKEN)");
  }

  const requestTimeoutMs = read.integer("REQUEST_TIMEOUT_MS", 30_000, 1_000, 600_000);
  const databaseTimeoutMs = read.integer("DATABASE_TIMEOUT_MS", 10_000, 100, 600_000);
  if (databaseTimeoutMs >= requestTimeoutMs) {
    problems.push("DATABASE_TIMEOUT_MS: must be shorter than REQUEST_TIMEOUT_MS (a request makes several statements)");
  }

  const config: Config = {
    projectName: read.optional("PROJECT_NAME") ?? "sku-search",
    version: read.optional("VERSION") ?? "1.0.0",
    databaseUrl,
    databaseReadUrl,
    databaseTransactionPooler: read.boolean("DATABASE_TRANSACTION_POOLER", false),
    readYourWritesWaitMs: read.integer("READ_YOUR_WRITES_WAIT_MS", 1_000, 0, 60_000),
    jwtSecret,
    algorithm: read.oneOf("ALGORITHM", JWT_ALGORITHMS, "HS256"),
    accessTokenExpireMinutes: read.integer("ACCESS_TOKEN_EXPIRE_MINUTES", 30, 1, 60 * 24 * 365),
    host: read.optional("HOST") ?? "0.0.0.0",
    port,
    dataDir: read.optional("DATA_DIR") ?? "./data",
    adminUsername,
    adminPassword,
    searchRequiresAuth: read.boolean("SEARCH_REQUIRES_AUTH", true),
    maxBodyBytes: read.integer("MAX_BODY_BYTES", 64 * 1024, 1024, 16 * 1024 * 1024),
    trustProxy: read.boolean("TRUST_PROXY", false),
    corsOrigins: read.origins("CORS_ORIGINS"),
    uiImageOrigins: read.imageOrigins("UI_IMAGE_ORIGINS"),
    metrics: { token: metricsToken, port: metricsPort, catalogues: read.catalogues("METRICS_CATALOGUES", ["default"]) },
    rateLimits: {
      search: read.integer("SEARCH_RATE_LIMIT", 60, 0, 1_000_000),
      write: read.integer("WRITE_RATE_LIMIT", 120, 0, 1_000_000),
      windowSeconds: read.integer("RATE_LIMIT_WINDOW_SECONDS", 60, 1, 86_400),
    },
    embeddingProvider,
    embeddingDimensions: read.integer("EMBEDDING_DIMENSIONS", DEFAULT_EMBEDDING_DIMENSIONS, 1, 16_000),
    openaiEmbeddingEncoding: read.oneOf("OPENAI_EMBEDDING_ENCODING", OPENAI_EMBEDDING_ENCODINGS, "base64"),
    localModelDir: read.optional("LOCAL_MODEL_DIR"),
    providers,
    generationProviders,
    generationRequired,
    generationTimeoutMs: read.integer("GENERATION_TIMEOUT_MS", 20_000, 100, 600_000),
    providerRetry,
    queryCacheSize: read.integer("QUERY_CACHE_SIZE", 1000, 0, 1_000_000),
    queryCacheDays: read.integer("QUERY_CACHE_DAYS", 30, 0, 3650),
    queryCacheMaxRows: read.integer("QUERY_CACHE_MAX_ROWS", 100_000, 1, 100_000_000),
    requestTimeoutMs,
    databaseTimeoutMs,
    searchMode: read.oneOf("SEARCH_MODE", SEARCH_MODES, "semantic"),
    hybridAlpha: read.fraction("HYBRID_ALPHA", DEFAULT_HYBRID_ALPHA),
    categoryBoost: read.fraction("HYBRID_CATEGORY_BOOST", DEFAULT_CATEGORY_BOOST),
    searchMinScore:
      (read.optional("SEARCH_MIN_SCORE") ?? "auto").toLowerCase() === "auto"
        ? "auto"
        : read.fraction("SEARCH_MIN_SCORE", 0),
    relevantShare: read.fraction("RELEVANT_RESULTS_MIN_SHARE", DEFAULT_RELEVANT_SHARE),
    analyticsRetentionDays: read.integer("ANALYTICS_RETENTION_DAYS", 90, 0, 3650),
    bulkMaxBytes: read.integer("BULK_MAX_BYTES", 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    bulkMaxItems: read.integer("BULK_MAX_ITEMS", 5_000, 1, 1_000_000),
    jobRetentionHours: read.integer("JOB_RETENTION_HOURS", 168, 1, 24 * 3650),
    vectorSearch: {
      mode: read.oneOf("VECTOR_INDEX", VECTOR_INDEX_MODES, "auto"),
      minRows: read.integer("VECTOR_INDEX_MIN_ROWS", 5_000, 1, 1_000_000_000),
      efSearch: read.integer("VECTOR_EF_SEARCH", DEFAULT_SEARCH_PLAN.efSearch, 10, 1_000),
      filterExactMaxRows: read.integer(
        "VECTOR_FILTER_EXACT_MAX_ROWS",
        DEFAULT_SEARCH_PLAN.filterExactMaxRows,
        0,
        1_000_000_000,
      ),
      filterFarExactMaxRows: read.integer(
        "VECTOR_FILTER_FAR_EXACT_MAX_ROWS",
        DEFAULT_SEARCH_PLAN.filterFarExactMaxRows,
        0,
        1_000_000_000,
      ),
      probes:
        read.optional("VECTOR_IVF_PROBES") === "auto" || read.optional("VECTOR_IVF_PROBES") === undefined
          ? "auto"
          : read.integer("VECTOR_IVF_PROBES", 10, 1, 10_000),
      rerankDepth: read.integer("VECTOR_RERANK_DEPTH", DEFAULT_SEARCH_PLAN.rerankDepth, 10, 1_000),
      lexicalRankMaxRows: read.integer("LEXICAL_RANK_MAX_ROWS", DEFAULT_LEXICAL_RANK_MAX_ROWS, 100, 1_000_000_000),
      indexedNumberAttributes: read.attributeKeys("INDEXED_NUMBER_ATTRIBUTES", MAX_INDEXED_NUMBER_ATTRIBUTES),
    },
    vectorIndexKind: read.oneOf("VECTOR_INDEX_KIND", VECTOR_INDEX_KIND_SETTINGS, "ivf-bq"),
    vectorIndexBuildMemory:
      read.optional("VECTOR_INDEX_BUILD_MEMORY") === "auto" ? "auto" : read.memory("VECTOR_INDEX_BUILD_MEMORY", "auto"),
    vectorIndexBuildWorkers: read.integer("VECTOR_INDEX_BUILD_WORKERS", 2, 0, 64),
    translation: {
      mode: read.oneOf("QUERY_TRANSLATION", TRANSLATION_MODES, "auto"),
      apertiumDir: read.optional("APERTIUM_DIR"),
      timeoutMs: read.integer("TRANSLATION_TIMEOUT_MS", 1000, 10, 60_000),
    },
    logLevel: read.oneOf("LOG_LEVEL", ["debug", "info", "warn", "error"] as const, "info"),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Every secret in the configuration, for the logger to mask should one ever reach a log line. */
export function secretsOf(config: Config): string[] {
  const keys = Object.values(config.providers).map((provider) => provider.apiKey);
  return [config.jwtSecret, config.adminPassword, config.metrics.token, ...keys].filter(
    (secret): secret is string => secret !== undefined,
  );
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

  /** An http(s) URL, or undefined when unset. */
  url(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) {
      this.problems.push(`${name}: must be an http:// or https:// URL, got '${raw}'`);
      return undefined;
    }
    return raw.replace(/\/+$/, "");
  }

  /** An amount of memory as PostgreSQL writes it: a whole number with kB, MB or GB. */
  memory(name: string, fallback: string): string {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (!/^[1-9]\d{0,6}(kB|MB|GB)$/.test(raw)) {
      this.problems.push(`${name}: must be a whole number followed by kB, MB or GB (e.g. 512MB), got '${raw}'`);
      return fallback;
    }
    return raw;
  }

  /** A number from 0 to 1. */
  fraction(name: string, fallback: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d*\.?\d+$/.test(raw) || value < 0 || value > 1) {
      this.problems.push(`${name}: must be a number from 0 to 1, got '${raw}'`);
      return fallback;
    }
    return value;
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

  /** A whole number from min to max, or undefined when unset. */
  optionalInteger(name: string, min: number, max: number): number | undefined {
    return this.optional(name) === undefined ? undefined : this.integer(name, min, min, max);
  }

  /**
   * Comma-separated exact origins (`scheme://host[:port]`), each as browsers send it in `Origin`;
   * `*`, paths and anything but http(s) are refused. Unset: none.
   */
  /** A comma-separated list of catalogue names (at most MAX_LABELLED_CATALOGUES), or `fallback` when unset. */
  catalogues(name: string, fallback: string[]): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const names = [
      ...new Set(
        raw
          .split(",")
          .map((entry) => entry.trim())
          .filter(Boolean),
      ),
    ];
    const bad = names.find((catalogue) => !CATALOGUE_NAME.test(catalogue));
    if (bad !== undefined) {
      this.problems.push(`${name}: '${bad}' is not a catalogue name (${CATALOGUE_NAME.source})`);
    } else if (names.length > MAX_LABELLED_CATALOGUES) {
      this.problems.push(
        `${name}: at most ${MAX_LABELLED_CATALOGUES} catalogues (each is a label value of every request metric)`,
      );
    }
    return names;
  }

  origins(name: string): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return [];
    const origins: string[] = [];
    for (const item of listItems(raw)) {
      const origin = exactOrigin(item);
      if (origin === undefined) {
        this.problems.push(
          `${name}: '${item}' is not an exact origin like https://shop.example or http://localhost:3000 (no '*', no path)`,
        );
        continue;
      }
      origins.push(origin);
    }
    return [...new Set(origins)];
  }

  /** Image sources of the page's img-src: `https:` (the default) and/or exact origins; `none` for none. */
  imageOrigins(name: string): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return ["https:"];
    if (raw.trim().toLowerCase() === "none") return [];
    const sources: string[] = [];
    for (const item of listItems(raw)) {
      const source = item.toLowerCase() === "https:" ? "https:" : exactOrigin(item);
      if (source === undefined) {
        this.problems.push(
          `${name}: '${item}' is neither https: (any HTTPS origin) nor an exact origin like https://cdn.shop.example (no '*', no path); 'none' for none`,
        );
        continue;
      }
      sources.push(source);
    }
    return [...new Set(sources)];
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

  /** A comma-separated list of attribute keys (ATTRIBUTE_KEY), at most `max`; none when unset. */
  attributeKeys(name: string, max: number): string[] {
    const raw = this.optional(name);
    if (raw === undefined) return [];
    const keys = [...new Set(listItems(raw))];
    const bad = keys.find((key) => !ATTRIBUTE_KEY.test(key));
    if (bad !== undefined) {
      this.problems.push(`${name}: '${bad}' is not an attribute key (${ATTRIBUTE_KEY.source})`);
      return [];
    }
    if (keys.length > max) {
      this.problems.push(`${name}: at most ${max} attributes, got ${keys.length}`);
      return [];
    }
    return keys;
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

/** The items of a comma-separated setting, trimmed, without empty ones. */
function listItems(raw: string): string[] {
  return raw
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** `item` as an exact http(s) origin (scheme, host and port only), or undefined when it is anything else. */
function exactOrigin(item: string): string | undefined {
  const url = URL.canParse(item) ? new URL(item) : undefined;
  const exact =
    url !== undefined &&
    /^https?:$/.test(url.protocol) &&
    url.username === "" &&
    url.password === "" &&
    url.search === "" &&
    url.hash === "" &&
    url.pathname === "/" &&
    !item.endsWith("/") &&
    // A host name or an IP address: no `*` (URL takes "https://*.shop.example" as a host).
    /^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname);
  return exact ? url.origin : undefined;
}
