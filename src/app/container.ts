/**
 * The composition root: the only module that knows every concrete adapter. It opens the
 * database (PGlite in DATA_DIR, or a PostgreSQL server), prepares its schema, creates the first
 * admin, and wires the use cases into the HTTP app.
 */
import { resolve } from "node:path";
import { CachingEmbedder } from "../adapters/cache/caching-embedder.ts";
import { createHttpApp } from "../adapters/http/app.ts";
import { JwtTokenService } from "../adapters/http/jwt-token-service.ts";
import { metricsApp } from "../adapters/http/metrics-routes.ts";
import { requestLogFields } from "../adapters/http/request-context.ts";
import { MemoryRateLimitCounters } from "../adapters/memory/rate-limit-counters.ts";
import { PrometheusMetrics } from "../adapters/metrics/prometheus-metrics.ts";
import { openPglite } from "../adapters/pglite/pglite-client.ts";
import { countProducts } from "../adapters/postgres/catalog-stats.ts";
import { PostgresDatabaseHealth } from "../adapters/postgres/database-health.ts";
import { PostgresProductRepository } from "../adapters/postgres/product-repository.ts";
import {
  PostgresQueryEmbeddingCache,
  type PostgresQueryEmbeddingCacheOptions,
} from "../adapters/postgres/query-embedding-cache.ts";
import { PostgresRateLimitCounters } from "../adapters/postgres/rate-limit-counters.ts";
import { missingMigrations, prepareDatabase } from "../adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../adapters/postgres/sql-client.ts";
import { PostgresUserRepository } from "../adapters/postgres/user-repository.ts";
import { VectorIndex, vectorSessionSettings } from "../adapters/postgres/vector-index.ts";
import { AnthropicGenerator } from "../adapters/providers/anthropic.ts";
import { GeneratorChain } from "../adapters/providers/generator-chain.ts";
import { GoogleEmbedder, GoogleGenerator } from "../adapters/providers/google.ts";
import { LocalEmbedder } from "../adapters/providers/local-embedder.ts";
import { LocalGenerator } from "../adapters/providers/local-generator.ts";
import { INSTALLED_MODEL_DIR } from "../adapters/providers/local-model-files.ts";
import { OpenAIEmbedder, OpenAIGenerator } from "../adapters/providers/openai.ts";
import type { ProviderClientOptions } from "../adapters/providers/provider-client.ts";
import { BunPasswordHasher } from "../adapters/security/bun-password-hasher.ts";
import { ApertiumTranslator, findApertium } from "../adapters/translation/apertium.ts";
import { RememberingTranslator } from "../adapters/translation/remembering-translator.ts";
import { TranslatingEmbedder } from "../adapters/translation/translating-embedder.ts";
import { Authenticate } from "../domain/authenticate.ts";
import { CreateProduct } from "../domain/create-product.ts";
import { ImportProducts } from "../domain/import-products.ts";
import { LoginThrottle } from "../domain/login-throttle.ts";
import { ManageProducts } from "../domain/manage-products.ts";
import { ManageUsers } from "../domain/manage-users.ts";
import { RateLimiter, type RateLimitPolicy } from "../domain/rate-limit.ts";
import { SearchAndRecommend } from "../domain/search-and-recommend.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { Translator } from "../ports/translator.ts";
import type { Config, GenerationProvider, RemoteProvider } from "./config.ts";
import { type Logger, tapLogger } from "./logger.ts";
import { resolveRuntimeAssets } from "./runtime-assets.ts";
import { jwtSecretFor, writeInitialAdminPassword } from "./secrets.ts";

const MINUTE = 60_000;
/**
 * How often the service checks whether the vector index is due: it is built at a check that finds
 * no product written since the previous one, so a bulk load finishes before its build starts.
 */
const VECTOR_INDEX_CHECK_MS = 30_000;

export interface Overrides {
  /** An open database client (tests: PGlite in memory); the container closes it. */
  database?: SqlClient;
  embedder?: Embedder;
  generator?: Generator;
  clock?: Clock;
  /** Tests: argon2id at a low cost, where hashing is not what they test. */
  passwordHasher?: PasswordHasher;
}

export type Container = Awaited<ReturnType<typeof createContainer>>;

/**
 * Opens the configured database, or the embedded one in DATA_DIR. `serving`: the service's own
 * pool, whose statements are bounded by DATABASE_TIMEOUT_MS; the operator's commands (re-embedding,
 * imports) run theirs without a limit.
 */
export async function openDatabase(config: Config, serving = false): Promise<SqlClient> {
  const sessionSettings = vectorSessionSettings(config.vectorSearch);
  if (config.databaseUrl !== undefined) {
    return connectPostgres(config.databaseUrl, {
      sessionSettings,
      ...(serving ? { queryTimeoutMs: config.databaseTimeoutMs } : {}),
    });
  }
  const assets = await resolveRuntimeAssets({ pglite: true });
  return openPglite(resolve(config.dataDir), assets.pglite, sessionSettings);
}

/** The embedder EMBEDDING_PROVIDER names; `log` receives its calls and retries. */
export async function createEmbedder(config: Config, log?: Logger): Promise<Embedder> {
  const { embeddingProvider: provider, embeddingDimensions: dimension } = config;
  switch (provider) {
    case "openai":
      return new OpenAIEmbedder({
        ...clientOptions(config, provider, "embedding", log),
        model: embeddingModel(config, provider),
        dimension,
      });
    case "google":
      return new GoogleEmbedder({
        ...clientOptions(config, provider, "embedding", log),
        model: embeddingModel(config, provider),
        dimension,
      });
    case "local":
      return createLocalEmbedder(config);
  }
}

function embeddingModel(config: Config, provider: "openai" | "google"): string {
  // Both providers have a default embedding model, so config always sets one.
  return config.providers[provider].embeddingModel as string;
}

/**
 * How an adapter reaches its provider. A compatible server (a base URL) may need no key: the SDKs
 * insist on one, so it gets a placeholder the server ignores. Its events name the `kind` of call
 * (for the metrics); each call's outcome is a debug line, retries and giving up are warnings.
 */
function clientOptions(
  config: Config,
  provider: RemoteProvider,
  kind: "embedding" | "generation",
  log: Logger | undefined,
): ProviderClientOptions {
  const settings = config.providers[provider];
  return {
    apiKey: settings.apiKey ?? "no-key",
    baseUrl: settings.baseUrl,
    retry: config.providerRetry,
    log: log && ((event) => (event.event === "provider_call" ? log.debug : log.warn)({ ...event, kind })),
  };
}

async function createLocalEmbedder(config: Config): Promise<Embedder> {
  const assets = await resolveRuntimeAssets({ localModel: true });
  return new LocalEmbedder(config.localModelDir ?? assets.modelDir ?? INSTALLED_MODEL_DIR);
}

export interface TranslationSetup {
  /** `embedder` behind Spanish → English translation; `embedder` itself when translation is off. */
  wrap(embedder: Embedder): Embedder;
  /** The translator for the lexical side of hybrid search (remembering recent queries); none when off. */
  translator: Translator | undefined;
  close(): Promise<void>;
}

/**
 * Translation of the texts to embed, as QUERY_TRANSLATION says: `auto` is on for the English-only
 * offline model when Apertium answers. Says once in the log whether it is on, and why not. Never
 * stops the service: without Apertium, texts are embedded as they are.
 */
export async function setUpTranslation(config: Config, embedder: Embedder, log: Logger): Promise<TranslationSetup> {
  const off = (reason: string, warn = false, details: Record<string, unknown> = {}): TranslationSetup => {
    (warn ? log.warn : log.info)({ event: "translation", enabled: false, reason, ...details });
    return { wrap: (inner) => inner, translator: undefined, close: async () => {} };
  };
  const { mode, apertiumDir, timeoutMs } = config.translation;
  if (mode === "off") return off("QUERY_TRANSLATION=off");
  if (mode === "auto" && !(embedder instanceof LocalEmbedder)) {
    return off(`QUERY_TRANSLATION=auto translates only for the offline model, not ${embedder.model}`);
  }
  const apertium = findApertium(apertiumDir);
  if (!apertium.found) {
    return off(`${apertium.reason}; Spanish texts are embedded as they are (English-only matching)`, mode === "on");
  }
  const translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs });
  try {
    await translator.start();
  } catch (error) {
    await translator.close();
    return off("Apertium does not answer; Spanish texts are embedded as they are", true, {
      apertium: apertium.prefix,
      error,
    });
  }
  log.info({ event: "translation", enabled: true, translator: translator.name, apertium: apertium.prefix });
  return {
    wrap: (inner) =>
      new TranslatingEmbedder(inner, translator, {
        log: (event) => log.warn(event),
        queryMemory: config.queryCacheSize,
      }),
    translator: new RememberingTranslator(translator, config.queryCacheSize),
    close: () => translator.close(),
  };
}

/** The vector index of the products' embeddings of `dimension` in `client`'s database, as VECTOR_* configure it. */
export function openVectorIndex(
  config: Config,
  client: SqlClient,
  dimension: number,
  log: (event: Record<string, unknown>) => void = () => {},
): VectorIndex {
  const { databaseUrl } = config;
  return new VectorIndex(client, dimension, {
    settings: config.vectorSearch,
    server: databaseUrl !== undefined,
    buildMemory: config.vectorIndexBuildMemory,
    // A build takes minutes at 100,000 products: on a connection of its own (its advisory lock is the
    // connection's), without the service's statement limit.
    ...(databaseUrl === undefined ? {} : { openBuilder: () => connectPostgres(databaseUrl, { maxConnections: 1 }) }),
    log,
  });
}

/**
 * The database with its schema ready for the embedder's vector space, plus the repositories.
 * `database`: an open client to use (tests); `serving`: the service's own pool (see openDatabase).
 */
export async function openStore(
  config: Config,
  embedder: Embedder,
  options: {
    database?: SqlClient | undefined;
    serving?: boolean;
    log?: (event: Record<string, unknown>) => void;
    passwordHasher?: PasswordHasher | undefined;
  } = {},
) {
  const client = options.database ?? (await openDatabase(config, options.serving));
  const space = { model: embedder.model, dimension: embedder.dimension };
  try {
    if (options.serving && config.databaseUrl !== undefined && options.database === undefined) {
      // Migrations may rewrite whole tables: on a connection of their own, without the service's statement limit.
      const migrator = connectPostgres(config.databaseUrl, { maxConnections: 1 });
      await prepareDatabase(migrator, space).finally(() => migrator.close());
    } else {
      await prepareDatabase(client, space);
    }
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  const users = new PostgresUserRepository(client);
  const hasher = options.passwordHasher ?? new BunPasswordHasher();
  return {
    client,
    users,
    hasher,
    manageUsers: new ManageUsers({ users, hasher }),
    products: new PostgresProductRepository(client, embedder.dimension, config.vectorSearch),
    vectorIndex: openVectorIndex(config, client, embedder.dimension, options.log),
    health: new PostgresDatabaseHealth(client),
    queryCache: (options: PostgresQueryEmbeddingCacheOptions) => new PostgresQueryEmbeddingCache(client, options),
  };
}

/**
 * The service's metrics when GET /metrics is served (METRICS_TOKEN or METRICS_PORT), else none.
 * `countProducts` is called at scrapes, once the database is open.
 */
function createMetrics(config: Config, countProducts: () => Promise<number>): PrometheusMetrics | undefined {
  const { token, port } = config.metrics;
  if (token === undefined && port === undefined) return undefined;
  return new PrometheusMetrics({ version: config.version, countProducts });
}

/**
 * `log` receives every event of the service; the container adds the id of the request being
 * served to each, and derives the metrics from them (tapLogger).
 */
export async function createContainer(config: Config, baseLog: Logger, overrides: Overrides = {}) {
  let database: SqlClient | undefined;
  const metrics = createMetrics(config, async () => (database ? countProducts(database) : Number.NaN));
  const log = tapLogger(baseLog, { fields: requestLogFields, observe: metrics?.observe });
  const embedder = overrides.embedder ?? (await createEmbedder(config, log));
  const translation = await setUpTranslation(config, embedder, log);
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore(config, embedder, {
      database: overrides.database,
      serving: true,
      log: (event) => (event.event === "vector_index_failed" ? log.warn(event) : log.info(event)),
      passwordHasher: overrides.passwordHasher,
    });
  } catch (error) {
    await translation.close();
    throw error;
  }
  database = store.client;
  try {
    return await wire(config, log, overrides, embedder, store, translation, metrics);
  } catch (error) {
    await translation.close();
    await store.client.close().catch(() => {});
    throw error;
  }
}

/** The ordered chain of GENERATION_PROVIDERS; each link has GENERATION_TIMEOUT_MS, its retries included. */
function createGenerator(config: Config, log: Logger): Generator {
  const model = (provider: RemoteProvider) => config.providers[provider].generationModel;
  const generators: Record<GenerationProvider, () => Generator> = {
    openai: () =>
      new OpenAIGenerator({ ...clientOptions(config, "openai", "generation", log), model: model("openai") }),
    anthropic: () =>
      new AnthropicGenerator({ ...clientOptions(config, "anthropic", "generation", log), model: model("anthropic") }),
    google: () =>
      new GoogleGenerator({ ...clientOptions(config, "google", "generation", log), model: model("google") }),
    local: () => new LocalGenerator(),
  };
  return new GeneratorChain(
    config.generationProviders.map((provider) => generators[provider]()),
    {
      timeoutMs: config.generationTimeoutMs,
      log: (event) => (event.event === "generation_failed" ? log.warn(event) : log.info(event)),
    },
  );
}

/** The budgets RATE_LIMIT_* set; a limit of 0 leaves its bucket unlimited. */
function rateLimitPolicies(config: Config): Partial<Record<"search" | "write", RateLimitPolicy>> {
  const { search, write, windowSeconds } = config.rateLimits;
  const windowMs = windowSeconds * 1000;
  return {
    ...(search > 0 ? { search: { limit: search, windowMs } } : {}),
    ...(write > 0 ? { write: { limit: write, windowMs } } : {}),
  };
}

async function wire(
  config: Config,
  log: Logger,
  overrides: Overrides,
  embedder: Embedder,
  store: Awaited<ReturnType<typeof openStore>>,
  translation: TranslationSetup,
  metrics: PrometheusMetrics | undefined,
) {
  const clock = overrides.clock ?? systemClock;
  const tokens = new JwtTokenService({
    secret: jwtSecretFor(config.jwtSecret, config.dataDir),
    algorithm: config.algorithm,
    expireMinutes: config.accessTokenExpireMinutes,
  });

  const admin = await store.manageUsers.ensureAdmin(config.adminUsername, config.adminPassword);
  if (admin.generatedPassword !== null) {
    // Never in the logs: in a file only this user can read, which the log line names.
    const passwordFile = writeInitialAdminPassword(config.dataDir, admin.generatedPassword);
    log.warn({
      event: "admin_created",
      username: config.adminUsername,
      passwordFile,
      message: `first start: user '${config.adminUsername}' was created; its password is in ${passwordFile} (mode 0600). Change it with 'users reset-password', which deletes that file.`,
    });
  }

  const authenticate = new Authenticate({
    users: store.users,
    hasher: store.hasher,
    tokens,
    usernameThrottle: new LoginThrottle({ maxFailures: 5, windowMs: 15 * MINUTE, lockoutMs: 15 * MINUTE }, clock),
    addressThrottle: new LoginThrottle({ maxFailures: 50, windowMs: 15 * MINUTE, lockoutMs: 15 * MINUTE }, clock),
  });
  const generator = overrides.generator ?? createGenerator(config, log);
  // Translation goes in front of the cache, so the cache keys on the text actually embedded.
  const queryEmbedder = translation.wrap(
    new CachingEmbedder(embedder, {
      memoryEntries: config.queryCacheSize,
      shared:
        config.queryCacheDays > 0
          ? store.queryCache({
              retentionDays: config.queryCacheDays,
              maxRows: config.queryCacheMaxRows,
              log: (event) => log.warn(event),
            })
          : undefined,
      log: (event) => (event.event === "query_cache" ? log.debug : log.warn)(event),
    }),
  );
  /** Every product text (create, update, import) is embedded through this one. */
  const documentEmbedder = translation.wrap(embedder);

  const app = createHttpApp({
    authenticate,
    createProduct: new CreateProduct({ products: store.products, embedder: documentEmbedder }),
    manageProducts: new ManageProducts({ products: store.products, embedder: documentEmbedder }),
    importProducts: new ImportProducts({
      products: store.products,
      embedder: documentEmbedder,
      log: (event) => log.info(event),
    }),
    search: new SearchAndRecommend({
      products: store.products,
      embedder: queryEmbedder,
      generator,
      defaults: { mode: config.searchMode, alpha: config.hybridAlpha },
      translator: translation.translator,
      log: (event) => log.info(event),
    }),
    health: store.health,
    startup: {
      migrationsApplied: async () => (await missingMigrations(store.client)).length === 0,
      embedderLoaded: () => !(embedder instanceof LocalEmbedder) || embedder.loaded,
    },
    rateLimiter: new RateLimiter({
      policies: rateLimitPolicies(config),
      // PGlite admits one process per data directory, so counting in it is exact and spares its
      // single backend a statement per request; replicas on a PostgreSQL server count together there.
      counters:
        config.databaseUrl === undefined
          ? new MemoryRateLimitCounters(clock)
          : new PostgresRateLimitCounters(store.client, { log: (event) => log.warn(event) }),
      log: (event) => log.warn(event),
    }),
    // On the main port only behind its token; with METRICS_PORT, `metricsApp` serves it instead.
    metrics: metrics && config.metrics.port === undefined ? { metrics, token: config.metrics.token } : undefined,
    settings: {
      projectName: config.projectName,
      version: config.version,
      searchRequiresAuth: config.searchRequiresAuth,
      maxBodyBytes: config.maxBodyBytes,
      trustProxy: config.trustProxy,
      requestTimeoutMs: config.requestTimeoutMs,
      bulk: { maxBytes: config.bulkMaxBytes, maxItems: config.bulkMaxItems },
      corsOrigins: config.corsOrigins,
    },
    log: (event) => (event.level === "error" ? log.error : event.level === "warn" ? log.warn : log.info)(event),
  });

  return {
    app,
    embedder,
    manageUsers: store.manageUsers,
    /** GET /metrics alone, for METRICS_PORT; undefined when metrics are off or served by `app`. */
    metricsApp:
      metrics && config.metrics.port !== undefined ? metricsApp({ metrics, token: config.metrics.token }) : undefined,
    /** Loads the offline model now rather than on the first request (until then, not ready). */
    warmUp: async () => {
      if (embedder instanceof LocalEmbedder) await embedder.load();
    },
    /** Builds the vector index when the catalogue grows enough for it (VECTOR_INDEX=auto), checking now and then. */
    maintainVectorIndex: () => store.vectorIndex.start(VECTOR_INDEX_CHECK_MS),
    close: async () => {
      await store.vectorIndex.stop();
      await translation.close();
      await store.client.close();
    },
  };
}
