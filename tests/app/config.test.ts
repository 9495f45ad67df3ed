import { describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ConfigError,
  JWT_SECRET_MIN_BYTES,
  loadConfig,
  METRICS_TOKEN_MIN_LENGTH,
  secretsOf,
} from "../../src/app/config.ts";
import { jwtSecretFor } from "../../src/app/secrets.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../../src/domain/user.ts";
import { useTempDirs } from "../support/temp-dirs.ts";

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(Object.keys(env))}`);
}

describe("loadConfig", () => {
  test("RELEVANT_RESULTS_MIN_SHARE: a share from 0 (every result of the window) to 1; anything else is refused, naming it", () => {
    expect(loadConfig({ RELEVANT_RESULTS_MIN_SHARE: "0" }).relevantShare).toBe(0);
    expect(loadConfig({ RELEVANT_RESULTS_MIN_SHARE: "0.55" }).relevantShare).toBe(0.55);
    for (const bad of ["1.5", "-0.1", "mucho"]) {
      expect(configError({ RELEVANT_RESULTS_MIN_SHARE: bad }).message).toContain(
        `RELEVANT_RESULTS_MIN_SHARE: must be a number from 0 to 1, got '${bad}'`,
      );
    }
  });

  test("an empty environment gives the documented defaults", () => {
    expect(loadConfig({})).toEqual({
      projectName: "sku-search",
      version: "1.0.0",
      databaseUrl: undefined,
      databaseReadUrl: undefined,
      databaseTransactionPooler: false,
      readYourWritesWaitMs: 1000,
      jwtSecret: undefined,
      algorithm: "HS256",
      accessTokenExpireMinutes: 30,
      host: "0.0.0.0",
      port: 8000,
      dataDir: "./data",
      adminUsername: "admin",
      adminPassword: undefined,
      searchRequiresAuth: true,
      maxBodyBytes: 64 * 1024,
      trustProxy: false,
      corsOrigins: [],
      uiImageOrigins: ["https:"],
      metrics: { token: undefined, port: undefined, catalogues: ["default"] },
      rateLimits: { search: 60, write: 120, windowSeconds: 60 },
      embeddingProvider: "local",
      embeddingDimensions: 3072,
      openaiEmbeddingEncoding: "base64",
      localModelDir: undefined,
      providers: {
        openai: {
          apiKey: undefined,
          baseUrl: undefined,
          embeddingModel: "text-embedding-3-large",
          generationModel: "gpt-4.1-mini",
        },
        anthropic: {
          apiKey: undefined,
          baseUrl: undefined,
          embeddingModel: undefined,
          generationModel: "claude-haiku-4-5",
        },
        google: {
          apiKey: undefined,
          baseUrl: undefined,
          embeddingModel: "gemini-embedding-001",
          generationModel: "gemini-2.5-flash-lite",
        },
      },
      generationProviders: ["local"],
      generationRequired: false,
      generationTimeoutMs: 20_000,
      providerRetry: { attemptTimeoutMs: 15_000, budgetMs: 30_000, maxRetries: 3, baseDelayMs: 500, maxDelayMs: 8_000 },
      queryCacheSize: 1000,
      queryCacheDays: 30,
      queryCacheMaxRows: 100_000,
      requestTimeoutMs: 30_000,
      databaseTimeoutMs: 10_000,
      searchMode: "semantic",
      hybridAlpha: 0.75,
      categoryBoost: 0.4,
      searchMinScore: "auto",
      relevantShare: 0.7,
      analyticsRetentionDays: 90,
      bulkMaxBytes: 16 * 1024 * 1024,
      bulkMaxItems: 5_000,
      jobRetentionHours: 168,
      vectorSearch: {
        mode: "auto",
        minRows: 5_000,
        efSearch: 100,
        probes: "auto",
        filterExactMaxRows: 30_000,
        filterFarExactMaxRows: 300_000,
        rerankDepth: 40,
        lexicalRankMaxRows: 2_000,
        indexedNumberAttributes: [],
      },
      vectorIndexKind: "ivf-bq",
      vectorIndexBuildMemory: "auto",
      vectorIndexBuildWorkers: 2,
      translation: { mode: "auto", apertiumDir: undefined, timeoutMs: 1000 },
      logLevel: "info",
    });
  });

  test("reads every setting it is given", () => {
    const secret = "s".repeat(JWT_SECRET_MIN_BYTES);
    const config = loadConfig({
      PROJECT_NAME: "catálogo",
      VERSION: "2.3.4",
      DATABASE_URL: "postgresql://user:pass@db:5432/skus",
      JWT_SECRET: secret,
      ALGORITHM: "HS512",
      ACCESS_TOKEN_EXPIRE_MINUTES: "90",
      HOST: "127.0.0.1",
      PORT: "9123",
      DATA_DIR: "/var/lib/sku",
      ADMIN_USERNAME: "jefa",
      ADMIN_PASSWORD: "una-contraseña",
      SEARCH_REQUIRES_AUTH: "false",
      MAX_BODY_BYTES: "2048",
      TRUST_PROXY: "true",
      LOCAL_MODEL_DIR: "/models/minilm",
      GENERATION_PROVIDERS: "local",
      GENERATION_TIMEOUT_MS: "5000",
      LOG_LEVEL: "debug",
    });
    expect(config).toMatchObject({
      projectName: "catálogo",
      version: "2.3.4",
      databaseUrl: "postgresql://user:pass@db:5432/skus",
      jwtSecret: secret,
      algorithm: "HS512",
      accessTokenExpireMinutes: 90,
      host: "127.0.0.1",
      port: 9123,
      dataDir: "/var/lib/sku",
      adminUsername: "jefa",
      adminPassword: "una-contraseña",
      searchRequiresAuth: false,
      maxBodyBytes: 2048,
      localModelDir: "/models/minilm",
      generationProviders: ["local"],
      generationTimeoutMs: 5000,
      logLevel: "debug",
    });
    expect(loadConfig({ DATABASE_URL: "postgres://localhost/skus" }).databaseUrl).toBe("postgres://localhost/skus");
  });

  test("a read pool: DATABASE_READ_URL (several hosts allowed) beside DATABASE_URL, never alone", () => {
    const config = loadConfig({
      DATABASE_URL: "postgres://db1:5432,db2:5432/skus?target_session_attrs=primary",
      DATABASE_READ_URL: "postgres://db2:5432,db1:5432/skus?target_session_attrs=prefer-standby",
      DATABASE_TRANSACTION_POOLER: "true",
      READ_YOUR_WRITES_WAIT_MS: "250",
    });
    expect(config.databaseReadUrl).toBe("postgres://db2:5432,db1:5432/skus?target_session_attrs=prefer-standby");
    expect(config.databaseTransactionPooler).toBe(true);
    expect(config.readYourWritesWaitMs).toBe(250);
    expect(configError({ DATABASE_READ_URL: "postgres://db2/skus" }).problems).toEqual([
      "DATABASE_READ_URL: needs DATABASE_URL too (the primary, where writes go)",
    ]);
  });

  test("values are trimmed, and enumerations and booleans ignore case", () => {
    const config = loadConfig({ PORT: " 8080 ", ALGORITHM: "hs384", SEARCH_REQUIRES_AUTH: " No ", LOG_LEVEL: "WARN" });
    expect(config.port).toBe(8080);
    expect(config.algorithm).toBe("HS384");
    expect(config.searchRequiresAuth).toBe(false);
    expect(config.logLevel).toBe("warn");
    for (const yes of ["true", "1", "yes", "on", "TRUE"]) {
      expect(loadConfig({ SEARCH_REQUIRES_AUTH: yes }).searchRequiresAuth).toBe(true);
    }
    for (const no of ["false", "0", "no", "off", "Off"]) {
      expect(loadConfig({ SEARCH_REQUIRES_AUTH: no }).searchRequiresAuth).toBe(false);
    }
  });

  test("blank values count as unset", () => {
    const names = [
      "PROJECT_NAME",
      "VERSION",
      "DATABASE_URL",
      "JWT_SECRET",
      "ALGORITHM",
      "ACCESS_TOKEN_EXPIRE_MINUTES",
      "HOST",
      "PORT",
      "DATA_DIR",
      "ADMIN_USERNAME",
      "ADMIN_PASSWORD",
      "SEARCH_REQUIRES_AUTH",
      "MAX_BODY_BYTES",
      "EMBEDDING_PROVIDER",
      "LOCAL_MODEL_DIR",
      "GENERATION_PROVIDERS",
      "GENERATION_TIMEOUT_MS",
      "GENERATION_REQUIRED",
      "OPENAI_API_KEY",
      "OPENAI_BASE_URL",
      "OPENAI_EMBEDDING_MODEL",
      "OPENAI_GENERATION_MODEL",
      "ANTHROPIC_API_KEY",
      "ANTHROPIC_BASE_URL",
      "ANTHROPIC_GENERATION_MODEL",
      "GOOGLE_API_KEY",
      "GEMINI_API_KEY",
      "GOOGLE_BASE_URL",
      "GOOGLE_EMBEDDING_MODEL",
      "GOOGLE_GENERATION_MODEL",
      "EMBEDDING_DIMENSIONS",
      "PROVIDER_TIMEOUT_MS",
      "PROVIDER_RETRY_BUDGET_MS",
      "PROVIDER_MAX_RETRIES",
      "QUERY_CACHE_SIZE",
      "QUERY_CACHE_DAYS",
      "LOG_LEVEL",
    ];
    for (const blank of ["", "  ", "\t"]) {
      expect(loadConfig(Object.fromEntries(names.map((name) => [name, blank])))).toEqual(loadConfig({}));
    }
  });

  test("each bad value is named, all of them in one ConfigError", () => {
    const error = configError({
      PORT: "abc",
      ALGORITHM: "RS256",
      ACCESS_TOKEN_EXPIRE_MINUTES: "0",
      JWT_SECRET: "x".repeat(JWT_SECRET_MIN_BYTES - 1),
      DATABASE_URL: "mysql://x",
      SEARCH_REQUIRES_AUTH: "maybe",
      GENERATION_PROVIDERS: "foo",
      JOB_RETENTION_HOURS: "0",
    });
    const named = [
      "PORT",
      "ALGORITHM",
      "ACCESS_TOKEN_EXPIRE_MINUTES",
      "JWT_SECRET",
      "DATABASE_URL",
      "SEARCH_REQUIRES_AUTH",
      "GENERATION_PROVIDERS",
      "JOB_RETENTION_HOURS",
    ];
    expect(error.problems).toHaveLength(named.length);
    for (const name of named) {
      expect(error.problems.filter((problem) => problem.startsWith(`${name}:`))).toHaveLength(1);
      expect(error.message).toContain(name);
    }
  });

  test("the vector index settings are read", () => {
    const config = loadConfig({
      VECTOR_INDEX: "off",
      VECTOR_INDEX_MIN_ROWS: "20000",
      VECTOR_EF_SEARCH: "400",
      VECTOR_FILTER_EXACT_MAX_ROWS: "0",
      VECTOR_FILTER_FAR_EXACT_MAX_ROWS: "1000",
      VECTOR_INDEX_BUILD_MEMORY: "256MB",
      VECTOR_INDEX_BUILD_WORKERS: "0",
      VECTOR_INDEX_KIND: "halfvec",
      VECTOR_RERANK_DEPTH: "300",
      VECTOR_IVF_PROBES: "32",
      LEXICAL_RANK_MAX_ROWS: "2500",
      INDEXED_NUMBER_ATTRIBUTES: "weight, rating,weight",
    });
    expect(config.vectorSearch).toEqual({
      mode: "off",
      minRows: 20_000,
      efSearch: 400,
      filterExactMaxRows: 0,
      filterFarExactMaxRows: 1_000,
      probes: 32,
      rerankDepth: 300,
      lexicalRankMaxRows: 2_500,
      indexedNumberAttributes: ["weight", "rating"],
    });
    expect(config.vectorIndexBuildMemory).toBe("256MB");
    expect(config.vectorIndexBuildWorkers).toBe(0);
    expect(config.vectorIndexKind).toBe("halfvec");
  });

  test("the problem names the bad value where it is not a secret", () => {
    const [portProblem] = configError({ PORT: "abc" }).problems;
    expect(portProblem).toContain("'abc'");
    const [algorithmProblem] = configError({ ALGORITHM: "RS256" }).problems;
    expect(algorithmProblem).toContain("'RS256'");
    expect(algorithmProblem).toContain("HS256, HS384, HS512");
  });

  for (const [name, value] of [
    ["PORT", "abc"],
    ["PORT", "65536"],
    ["PORT", "-1"],
    ["PORT", "80.5"],
    ["PORT", "1e3"],
    ["ACCESS_TOKEN_EXPIRE_MINUTES", "0"],
    ["ACCESS_TOKEN_EXPIRE_MINUTES", "-5"],
    ["ACCESS_TOKEN_EXPIRE_MINUTES", "treinta"],
    ["ALGORITHM", "none"],
    ["ALGORITHM", "RS256"],
    ["DATABASE_URL", "mysql://x"],
    ["DATABASE_URL", "localhost:5432"],
    ["DATABASE_READ_URL", "mysql://x"],
    ["READ_YOUR_WRITES_WAIT_MS", "-1"],
    ["SEARCH_REQUIRES_AUTH", "maybe"],
    ["GENERATION_PROVIDERS", "foo"],
    ["GENERATION_PROVIDERS", "local,foo"],
    ["GENERATION_PROVIDERS", ","],
    ["EMBEDDING_PROVIDER", "foo"],
    ["MAX_BODY_BYTES", "10"],
    ["LOG_LEVEL", "verbose"],
    ["OPENAI_EMBEDDING_ENCODING", "binary"],
    ["QUERY_TRANSLATION", "sometimes"],
    ["TRANSLATION_TIMEOUT_MS", "0"],
    ["ADMIN_PASSWORD", "corta"],
    ["ADMIN_PASSWORD", "p".repeat(PASSWORD_MAX_LENGTH + 1)],
    ["ADMIN_USERNAME", "u".repeat(USERNAME_MAX_LENGTH + 1)],
    ["CORS_ORIGINS", "*"],
    ["CORS_ORIGINS", "https://shop.example/app"],
    ["CORS_ORIGINS", "https://shop.example/"],
    ["CORS_ORIGINS", "shop.example"],
    ["CORS_ORIGINS", "ftp://shop.example"],
    ["CORS_ORIGINS", "https://user:pw@shop.example"],
    ["CORS_ORIGINS", "https://*.shop.example"],
    ["UI_IMAGE_ORIGINS", "*"],
    ["UI_IMAGE_ORIGINS", "https://*.cdn.example"],
    ["UI_IMAGE_ORIGINS", "https://cdn.example/img"],
    ["UI_IMAGE_ORIGINS", "http:"],
    ["UI_IMAGE_ORIGINS", "'unsafe-inline'"],
    ["UI_IMAGE_ORIGINS", "https://cdn.example; script-src *"],
    ["METRICS_TOKEN", "corto"],
    ["METRICS_TOKEN", "un token con espacios dentro"],
    ["METRICS_PORT", "8000"],
    ["METRICS_PORT", "0"],
    ["SEARCH_RATE_LIMIT", "-1"],
    ["WRITE_RATE_LIMIT", "muchos"],
    ["RATE_LIMIT_WINDOW_SECONDS", "0"],
    ["VECTOR_INDEX", "always"],
    ["VECTOR_INDEX_MIN_ROWS", "0"],
    ["VECTOR_EF_SEARCH", "5"],
    ["VECTOR_FILTER_EXACT_MAX_ROWS", "mil"],
    ["VECTOR_INDEX_BUILD_MEMORY", "1G"],
    ["VECTOR_INDEX_BUILD_MEMORY", "lots"],
    ["VECTOR_INDEX_BUILD_MEMORY", "Auto"],
    ["VECTOR_INDEX_KIND", "ivfflat"],
    ["VECTOR_RERANK_DEPTH", "5"],
    ["LEXICAL_RANK_MAX_ROWS", "50"],
    ["VECTOR_IVF_PROBES", "0"],
    ["VECTOR_INDEX_BUILD_WORKERS", "-1"],
    ["INDEXED_NUMBER_ATTRIBUTES", "Weight"],
    ["INDEXED_NUMBER_ATTRIBUTES", "size; drop table products"],
    ["INDEXED_NUMBER_ATTRIBUTES", Array.from({ length: 17 }, (_, i) => `n${i}`).join(",")],
  ] as const) {
    test(`${name}=${value.length > 40 ? `(${value.length} characters)` : value} is refused, by name`, () => {
      const { problems } = configError({ [name]: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]?.startsWith(`${name}:`)).toBe(true);
    });
  }

  test("the admin's username and password at their limits are accepted", () => {
    const config = loadConfig({
      ADMIN_USERNAME: "u".repeat(USERNAME_MAX_LENGTH),
      ADMIN_PASSWORD: "p".repeat(PASSWORD_MAX_LENGTH),
    });
    expect(config.adminUsername).toHaveLength(USERNAME_MAX_LENGTH);
    expect(loadConfig({ ADMIN_PASSWORD: "p".repeat(PASSWORD_MIN_LENGTH) }).adminPassword).toHaveLength(
      PASSWORD_MIN_LENGTH,
    );
  });

  test("GENERATION_PROVIDERS is a comma-separated list without repeats", () => {
    expect(loadConfig({ GENERATION_PROVIDERS: " Local , local," }).generationProviders).toEqual(["local"]);
  });
});

describe("loadConfig: model providers", () => {
  const keys = {
    OPENAI_API_KEY: "sk-openai-0123456789",
    ANTHROPIC_API_KEY: "sk-ant-0123456789",
    GOOGLE_API_KEY: "AIza0123456789",
  };

  test("with every key set, OpenAI embeds and the chain is openai, anthropic, google, then local", () => {
    const config = loadConfig(keys);
    expect(config.embeddingProvider).toBe("openai");
    expect(config.generationProviders).toEqual(["openai", "anthropic", "google", "local"]);
    expect(config.providers.openai.apiKey).toBe(keys.OPENAI_API_KEY);
    expect(config.providers.anthropic.apiKey).toBe(keys.ANTHROPIC_API_KEY);
    expect(config.providers.google.apiKey).toBe(keys.GOOGLE_API_KEY);
  });

  test("the default embedder is the first of openai, google whose key is set, else the offline model", () => {
    expect(loadConfig({ GOOGLE_API_KEY: "AIza0123456789" }).embeddingProvider).toBe("google");
    expect(loadConfig({ GEMINI_API_KEY: "AIza0123456789" }).embeddingProvider).toBe("google");
    expect(loadConfig({ ANTHROPIC_API_KEY: "sk-ant-0123456789" }).embeddingProvider).toBe("local");
    expect(loadConfig({ ...keys, EMBEDDING_PROVIDER: "local" }).embeddingProvider).toBe("local");
    expect(loadConfig({ ...keys, EMBEDDING_PROVIDER: "Google" }).embeddingProvider).toBe("google");
  });

  test("GEMINI_API_KEY is accepted for Google; GOOGLE_API_KEY wins when both are set", () => {
    expect(loadConfig({ GEMINI_API_KEY: "gemini-key-1234" }).providers.google.apiKey).toBe("gemini-key-1234");
    const both = loadConfig({ GEMINI_API_KEY: "gemini-key-1234", GOOGLE_API_KEY: "google-key-1234" });
    expect(both.providers.google.apiKey).toBe("google-key-1234");
  });

  test("the default chain takes only the providers with a key, in order, then local", () => {
    expect(
      loadConfig({ GOOGLE_API_KEY: "g-key-12345678", ANTHROPIC_API_KEY: "a-key-12345678" }).generationProviders,
    ).toEqual(["anthropic", "google", "local"]);
  });

  test("an explicit chain keeps its order and ends with local, which is added when left out", () => {
    expect(loadConfig({ ...keys, GENERATION_PROVIDERS: "google,openai" }).generationProviders).toEqual([
      "google",
      "openai",
      "local",
    ]);
    expect(loadConfig({ ...keys, GENERATION_PROVIDERS: "anthropic, local" }).generationProviders).toEqual([
      "anthropic",
      "local",
    ]);
  });

  test("GENERATION_REQUIRED=true leaves local out of the chain, so a search fails when every provider does", () => {
    const config = loadConfig({ ...keys, GENERATION_REQUIRED: "true" });
    expect(config.generationRequired).toBe(true);
    expect(config.generationProviders).toEqual(["openai", "anthropic", "google"]);
  });

  test("model names, base URLs, dimensions, time limits and the cache are read", () => {
    const config = loadConfig({
      OPENAI_API_KEY: "sk-openai-0123456789",
      OPENAI_BASE_URL: "http://127.0.0.1:11434/v1/",
      OPENAI_EMBEDDING_MODEL: "nomic-embed-text",
      OPENAI_GENERATION_MODEL: "llama3.2",
      ANTHROPIC_API_KEY: "sk-ant-0123456789",
      ANTHROPIC_BASE_URL: "https://gateway.example/anthropic",
      ANTHROPIC_GENERATION_MODEL: "claude-sonnet-4-5",
      GOOGLE_API_KEY: "AIza0123456789",
      GOOGLE_BASE_URL: "https://gateway.example/google",
      GOOGLE_EMBEDDING_MODEL: "text-embedding-005",
      GOOGLE_GENERATION_MODEL: "gemini-2.5-flash",
      EMBEDDING_DIMENSIONS: "768",
      PROVIDER_TIMEOUT_MS: "5000",
      PROVIDER_RETRY_BUDGET_MS: "12000",
      PROVIDER_MAX_RETRIES: "2",
      QUERY_CACHE_SIZE: "10",
      QUERY_CACHE_DAYS: "0",
    });
    expect(config.providers).toEqual({
      openai: {
        apiKey: "sk-openai-0123456789",
        baseUrl: "http://127.0.0.1:11434/v1",
        embeddingModel: "nomic-embed-text",
        generationModel: "llama3.2",
      },
      anthropic: {
        apiKey: "sk-ant-0123456789",
        baseUrl: "https://gateway.example/anthropic",
        embeddingModel: undefined,
        generationModel: "claude-sonnet-4-5",
      },
      google: {
        apiKey: "AIza0123456789",
        baseUrl: "https://gateway.example/google",
        embeddingModel: "text-embedding-005",
        generationModel: "gemini-2.5-flash",
      },
    });
    expect(config.embeddingDimensions).toBe(768);
    expect(config.providerRetry).toMatchObject({ attemptTimeoutMs: 5000, budgetMs: 12_000, maxRetries: 2 });
    expect(config.queryCacheSize).toBe(10);
    expect(config.queryCacheDays).toBe(0);
  });

  test("operations settings are read: CORS origins as browsers send them, metrics, rate limits", () => {
    const config = loadConfig({
      CORS_ORIGINS: " https://shop.example, HTTP://LocalHost:3000 ,https://shop.example,https://admin.example:443",
      METRICS_TOKEN: "t".repeat(METRICS_TOKEN_MIN_LENGTH),
      METRICS_PORT: "9464",
      SEARCH_RATE_LIMIT: "0",
      WRITE_RATE_LIMIT: "500",
      RATE_LIMIT_WINDOW_SECONDS: "3600",
    });
    expect(config.corsOrigins).toEqual(["https://shop.example", "http://localhost:3000", "https://admin.example"]);
    expect(
      loadConfig({ UI_IMAGE_ORIGINS: " https://CDN.shop.example , http://127.0.0.1:9000,https:" }).uiImageOrigins,
    ).toEqual(["https://cdn.shop.example", "http://127.0.0.1:9000", "https:"]);
    expect(loadConfig({ UI_IMAGE_ORIGINS: "none" }).uiImageOrigins).toEqual([]);
    expect(config.metrics).toEqual({
      token: "t".repeat(METRICS_TOKEN_MIN_LENGTH),
      port: 9464,
      catalogues: ["default"],
    });
    expect(config.rateLimits).toEqual({ search: 0, write: 500, windowSeconds: 3600 });
    expect(secretsOf(config)).toContain("t".repeat(METRICS_TOKEN_MIN_LENGTH));
  });

  test("translation settings are read", () => {
    const config = loadConfig({
      QUERY_TRANSLATION: "On",
      APERTIUM_DIR: "/opt/apertium",
      TRANSLATION_TIMEOUT_MS: "250",
    });
    expect(config.translation).toEqual({ mode: "on", apertiumDir: "/opt/apertium", timeoutMs: 250 });
    expect(loadConfig({ QUERY_TRANSLATION: "off" }).translation.mode).toBe("off");
  });

  test("a compatible server needs no key: a base URL is enough", () => {
    const config = loadConfig({
      OPENAI_BASE_URL: "http://127.0.0.1:11434/v1",
      EMBEDDING_PROVIDER: "openai",
      GENERATION_PROVIDERS: "openai",
    });
    expect(config.embeddingProvider).toBe("openai");
    expect(config.generationProviders).toEqual(["openai", "local"]);
    expect(config.providers.openai.apiKey).toBeUndefined();
  });

  test.each([
    ["EMBEDDING_PROVIDER: openai needs OPENAI_API_KEY", { EMBEDDING_PROVIDER: "openai" }],
    ["EMBEDDING_PROVIDER: google needs GOOGLE_API_KEY", { EMBEDDING_PROVIDER: "google" }],
    ["EMBEDDING_PROVIDER: must be one of", { EMBEDDING_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "sk-ant-0123456789" }],
    ["GENERATION_PROVIDERS: anthropic needs ANTHROPIC_API_KEY", { GENERATION_PROVIDERS: "anthropic" }],
    ["GENERATION_PROVIDERS: local always answers", { ...keys, GENERATION_PROVIDERS: "local,openai" }],
    [
      "GENERATION_PROVIDERS: leave out local",
      { ...keys, GENERATION_REQUIRED: "true", GENERATION_PROVIDERS: "openai,local" },
    ],
    ["GENERATION_REQUIRED: true needs at least one remote provider", { GENERATION_REQUIRED: "true" }],
    ["OPENAI_BASE_URL: must be an http:// or https:// URL", { OPENAI_BASE_URL: "ftp://x" }],
    ["GOOGLE_BASE_URL: must be an http:// or https:// URL", { GOOGLE_BASE_URL: "not a url" }],
    ["PROVIDER_MAX_RETRIES: must be a whole number from 0 to 10", { PROVIDER_MAX_RETRIES: "11" }],
  ])("refused with %p", (message, env) => {
    expect(configError(env).problems.join("\n")).toContain(message);
  });

  test("no problem message ever contains a key", () => {
    const error = configError({
      ...keys,
      GENERATION_REQUIRED: "true",
      GENERATION_PROVIDERS: "local",
      EMBEDDING_PROVIDER: "x",
    });
    for (const key of Object.values(keys)) expect(error.message).not.toContain(key);
  });

  test(`JWT_SECRET needs at least ${JWT_SECRET_MIN_BYTES} bytes, counted in bytes`, () => {
    expect(configError({ JWT_SECRET: "x".repeat(JWT_SECRET_MIN_BYTES - 1) }).problems[0]).toStartWith("JWT_SECRET:");
    const exact = "x".repeat(JWT_SECRET_MIN_BYTES);
    expect(loadConfig({ JWT_SECRET: exact }).jwtSecret).toBe(exact);
    // 16 characters of 2 bytes each: 32 bytes, accepted; 31 bytes with a multi-byte character, refused.
    const multiByte = "ñ".repeat(JWT_SECRET_MIN_BYTES / 2);
    expect(loadConfig({ JWT_SECRET: multiByte }).jwtSecret).toBe(multiByte);
    expect(configError({ JWT_SECRET: `${"ñ".repeat(JWT_SECRET_MIN_BYTES / 2 - 1)}x` }).problems).toHaveLength(1);
  });

  test("the error never repeats the JWT_SECRET value", () => {
    const secret = "mi-secreto-de-31-bytes-exactos!";
    expect(new TextEncoder().encode(secret).length).toBe(31);
    const error = configError({ JWT_SECRET: secret, PORT: "abc", ALGORITHM: "RS256" });
    expect(error.message).not.toContain(secret);
    expect(error.problems.join("\n")).not.toContain(secret);
    expect(String(error)).not.toContain(secret);
  });

  test("the error never repeats ADMIN_PASSWORD or a DATABASE_URL's password", () => {
    const error = configError({ ADMIN_PASSWORD: "s3cr3t", DATABASE_URL: "mysql://user:claveBD@x/db" });
    expect(error.problems).toHaveLength(2);
    expect(error.message).not.toContain("s3cr3t");
    expect(error.message).not.toContain("claveBD");
  });
});

describe("jwtSecretFor", () => {
  const tempDir = useTempDirs("secrets");

  test("a configured secret is returned as is and nothing is written", () => {
    const dataDir = join(tempDir(), "data");
    const configured = "un-secreto-configurado-de-al-menos-32-bytes";
    expect(jwtSecretFor(configured, dataDir)).toBe(configured);
    expect(() => statSync(dataDir)).toThrow();
  });

  test("without one, a strong secret is generated once, kept with mode 0600 and reused", () => {
    const dataDir = join(tempDir(), "no", "existe", "aun");
    const first = jwtSecretFor(undefined, dataDir);
    expect(new TextEncoder().encode(first).length).toBeGreaterThanOrEqual(JWT_SECRET_MIN_BYTES);

    const file = join(dataDir, "jwt-secret");
    expect(readFileSync(file, "utf8").trim()).toBe(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    expect(jwtSecretFor(undefined, dataDir)).toBe(first);
    expect(jwtSecretFor(undefined, tempDir())).not.toBe(first);
  });

  test("a stored secret too short to trust is replaced", () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "jwt-secret"), "corto\n");
    const secret = jwtSecretFor(undefined, dataDir);
    expect(secret).not.toBe("corto");
    expect(secret.length).toBeGreaterThanOrEqual(JWT_SECRET_MIN_BYTES);
    expect(jwtSecretFor(undefined, dataDir)).toBe(secret);
  });
});
