/**
 * The composition root's second half: the HTTP service wired on the store (store.ts: the database,
 * its repositories, the embedder and translation), with the generator chain, tokens, rate limits
 * and metrics. The only modules that know every concrete adapter are these two.
 */
import { CachingEmbedder } from "../adapters/cache/caching-embedder.ts";
import { createHttpApp } from "../adapters/http/app.ts";
import { JwtTokenService } from "../adapters/http/jwt-token-service.ts";
import { metricsApp } from "../adapters/http/metrics-routes.ts";
import { requestLogFields } from "../adapters/http/request-context.ts";
import { MemoryRateLimitCounters } from "../adapters/in-process/rate-limit-counters.ts";
import { PrometheusMetrics } from "../adapters/metrics/prometheus-metrics.ts";
import { countProducts } from "../adapters/postgres/catalog-stats.ts";
import { PostgresRateLimitCounters } from "../adapters/postgres/rate-limit-counters.ts";
import { missingMigrations } from "../adapters/postgres/schema.ts";
import type { SqlClient } from "../adapters/postgres/sql-client.ts";
import { GeneratorChain } from "../adapters/providers/generator-chain.ts";
import { LocalEmbedder } from "../adapters/providers/local-embedder.ts";
import { LocalGenerator } from "../adapters/providers/local-generator.ts";
import { Authenticate } from "../domain/authenticate.ts";
import { CreateProduct } from "../domain/create-product.ts";
import { ImportProducts } from "../domain/import-products.ts";
import { LoginThrottle } from "../domain/login-throttle.ts";
import { ManageProducts } from "../domain/manage-products.ts";
import { RateLimiter, type RateLimitPolicy } from "../domain/rate-limit.ts";
import { SearchAndRecommend } from "../domain/search-and-recommend.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { Config, RemoteProvider } from "./config.ts";
import { type Logger, tapLogger } from "./logger.ts";
import { jwtSecretFor, writeInitialAdminPassword } from "./secrets.ts";
import { clientOptions, createEmbedder, openStore, setUpTranslation, type TranslationSetup } from "./store.ts";

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

/**
 * The ordered chain of GENERATION_PROVIDERS; each link has GENERATION_TIMEOUT_MS, its retries
 * included. A remote provider's adapter (and its SDK) is loaded only when the chain names it.
 */
async function createGenerator(config: Config, log: Logger): Promise<Generator> {
  const options = (provider: RemoteProvider) => ({
    ...clientOptions(config, provider, "generation", log),
    model: config.providers[provider].generationModel,
  });
  const links = await Promise.all(
    config.generationProviders.map(async (provider): Promise<Generator> => {
      switch (provider) {
        case "openai":
          return new (await import("../adapters/providers/openai.ts")).OpenAIGenerator(options(provider));
        case "anthropic":
          return new (await import("../adapters/providers/anthropic.ts")).AnthropicGenerator(options(provider));
        case "google":
          return new (await import("../adapters/providers/google.ts")).GoogleGenerator(options(provider));
        case "local":
          return new LocalGenerator();
      }
    }),
  );
  return new GeneratorChain(links, {
    timeoutMs: config.generationTimeoutMs,
    log: (event) => (event.event === "generation_failed" ? log.warn(event) : log.info(event)),
  });
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
  const generator = overrides.generator ?? (await createGenerator(config, log));
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
