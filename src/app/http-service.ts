/**
 * The HTTP service (loaded by `serve` alone): the Elysia app wired on the composition root's use
 * cases, with tokens, the generator chain, rate limits and metrics. Every event of the service goes
 * through one tapped logger that adds the id of the request being served and feeds the metrics.
 */
import { CachingEmbedder } from "../adapters/cache/caching-embedder.ts";
import { createHttpApp } from "../adapters/http/app.ts";
import { JwtTokenService } from "../adapters/http/auth/jwt-token-service.ts";
import { currentRequestConsistency, requestLogFields } from "../adapters/http/core/request-context.ts";
import { metricsApp } from "../adapters/http/metrics/metrics-routes.ts";
import { PrometheusMetrics, type PrometheusMetricsOptions } from "../adapters/metrics/prometheus-metrics.ts";
import { countProducts } from "../adapters/postgres/catalog-stats.ts";
import { LocalEmbedder, OFFLINE_MODEL_MIN_SCORE } from "../adapters/providers/local-embedder.ts";
import { Authenticate } from "../domain/authenticate.ts";
import { AuthenticateKeys } from "../domain/authenticate-keys.ts";
import { CreateProduct } from "../domain/create-product.ts";
import { LoginThrottle } from "../domain/login-throttle.ts";
import { ManageProducts } from "../domain/manage-products.ts";
import { RateLimiter, type RateLimitPolicy } from "../domain/rate-limit.ts";
import { SearchAnalytics } from "../domain/search-analytics.ts";
import { SearchAndRecommend } from "../domain/search-and-recommend.ts";
import type { Embedder } from "../ports/embedder.ts";
import { CompositionRoot, type Overrides } from "./composition-root.ts";
import type { Config } from "./config.ts";
import { type Logger, tapLogger } from "./logger.ts";
import { writeInitialAdminPassword } from "./secrets.ts";

const MINUTE = 60_000;

/**
 * Verified tokens remembered per process: a request then costs neither the signature's check nor
 * a read of its user. A change to users forgets them all at once (Authenticate); the age limit
 * only bounds how long one lost notification could matter.
 */
const VERIFIED_TOKENS = { maxEntries: 10_000, maxAgeMs: 5 * MINUTE };

/**
 * API keys' rows remembered per process, likewise: a revocation on any instance forgets the key at
 * once (a notification); the age limit bounds how long a lost one could matter.
 */
const REMEMBERED_KEYS = { maxEntries: 10_000, maxAgeMs: MINUTE };

export type HttpService = Awaited<ReturnType<typeof createHttpService>>;

/**
 * The service's metrics when GET /metrics is served (METRICS_TOKEN or METRICS_PORT), else none.
 * `read` is called at scrapes, once the database is open: the products, the vector index.
 */
function createMetrics(
  config: Config,
  read: Pick<PrometheusMetricsOptions, "countProducts" | "vectorIndexStatus">,
): PrometheusMetrics | undefined {
  const { token, port, catalogues } = config.metrics;
  if (token === undefined && port === undefined) return undefined;
  return new PrometheusMetrics({ version: config.version, ...read, labelledCatalogues: catalogues });
}

/**
 * SEARCH_MIN_SCORE: as set, or for "auto" the threshold calibrated for the offline model (none for
 * another model, whose cosines fall elsewhere: README "Honest empty answers" says how to choose one).
 */
export function relevanceThreshold(setting: number | "auto", embedder: Embedder): number {
  if (setting !== "auto") return setting;
  return embedder instanceof LocalEmbedder ? OFFLINE_MODEL_MIN_SCORE : 0;
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

/**
 * The service on its database, migrated, with its first admin made: `app` to listen (or to handle
 * requests in tests), `metricsApp` for METRICS_PORT, `warmUp` to load the offline model, and the
 * root whose `close` ends it all.
 */
export async function createHttpService(config: Config, baseLog: Logger, overrides: Overrides = {}) {
  let root: CompositionRoot | undefined;
  const metrics = createMetrics(config, {
    countProducts: async () => {
      if (!root) throw new Error("the database is not open yet");
      return countProducts(await root.readDatabase());
    },
    vectorIndexStatus: async () => {
      if (!root) throw new Error("not started");
      return root.vectorIndexesStatus();
    },
  });
  const log = tapLogger(baseLog, { fields: requestLogFields, observe: metrics?.observe });
  root = new CompositionRoot(config, log, {
    serving: true,
    overrides,
    request: currentRequestConsistency,
  });
  try {
    return await wire(root, log, metrics);
  } catch (error) {
    await root.close();
    throw error;
  }
}

async function wire(root: CompositionRoot, log: Logger, metrics: PrometheusMetrics | undefined) {
  const { config, clock } = root;
  // What the start spends its time on, for the `started` log line (the model loads after listening).
  const startupMs: Record<string, number> = {};
  const timed = async <T>(part: string, make: Promise<T>): Promise<T> => {
    const started = performance.now();
    const made = await make;
    startupMs[part] = Math.round(performance.now() - started);
    return made;
  };
  const [embedder, translation, documentEmbedder, products, users, manageUsers, apiKeys, manageApiKeys] =
    await Promise.all([
      root.embedder(),
      timed("translation", root.translation()),
      root.documentEmbedder(),
      timed("database", root.products()),
      root.users(),
      root.manageUsers(),
      root.apiKeys(),
      root.manageApiKeys(),
    ]);
  const tokens = new JwtTokenService({
    secret: root.jwtSecret(),
    algorithm: config.algorithm,
    expireMinutes: config.accessTokenExpireMinutes,
  });

  // On a standby nothing can be written: the first admin is made by an instance on the primary.
  const readOnlyStart = await root.readOnlyStart();
  const admin = readOnlyStart
    ? { generatedPassword: null }
    : await timed("admin", manageUsers.ensureAdmin(config.adminUsername, config.adminPassword));
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
    users,
    hasher: root.passwordHasher(),
    tokens,
    usernameThrottle: new LoginThrottle({ maxFailures: 5, windowMs: 15 * MINUTE, lockoutMs: 15 * MINUTE }, clock),
    addressThrottle: new LoginThrottle({ maxFailures: 50, windowMs: 15 * MINUTE, lockoutMs: 15 * MINUTE }, clock),
    verifiedTokens: VERIFIED_TOKENS,
    clock,
  });
  // A password change or removal by any process on the database ends remembered tokens when it
  // commits (a notification); until the watch starts, or if it cannot, every token is verified.
  const stopRememberingTokens = await authenticate.rememberVerifiedTokens().catch((error) => {
    log.warn({ event: "token_memory_off", error });
    return async () => {};
  });
  const authenticateKeys = new AuthenticateKeys({
    keys: apiKeys,
    secrets: root.apiKeySecrets(),
    clock,
    remembered: REMEMBERED_KEYS,
    log: (event) => log.debug(event),
  });
  // A key revoked by any process on the database is forgotten when the revocation commits.
  const stopRememberingKeys = await authenticateKeys.rememberKeys().catch((error) => {
    log.warn({ event: "key_memory_off", error });
    return async () => {};
  });
  // The search translates its query once (translation.translator) and embeds the English through
  // this cache, so the cache keys on the text actually embedded.
  const queryEmbedder = new CachingEmbedder(embedder, {
    memoryEntries: config.queryCacheSize,
    shared: await root.queryEmbeddingCache(),
    log: (event) => (event.event === "query_cache" ? log.debug : log.warn)(event),
  });
  // Once a reembed elsewhere has moved the catalogue to another model, no search (cached or not).
  const spaceWatch = await root.spaceWatch();
  const [synonymStore, analyticsStore] = await Promise.all([root.synonymStore(), root.searchAnalyticsStore()]);
  const analytics = new SearchAnalytics({
    store: analyticsStore,
    clock,
    retentionDays: config.analyticsRetentionDays,
    log: (event) => log.info(event),
  });

  const search = new SearchAndRecommend({
    products,
    embedder: spaceWatch ? spaceWatch.guard(queryEmbedder) : queryEmbedder,
    generator: await root.generator(),
    defaults: { mode: config.searchMode, alpha: config.hybridAlpha },
    ranking: {
      categoryBoost: config.categoryBoost,
      minScore: relevanceThreshold(config.searchMinScore, embedder),
      relevantShare: config.relevantShare,
    },
    synonyms: synonymStore,
    analytics,
    // Time-ordered (UUID version 7): the analytics tables' keys grow at their end, where random
    // ones would touch a random page of an index that outgrows memory as months of searches pile up.
    newSearchId: () => Bun.randomUUIDv7(),
    translator: translation.translator,
    log: (event) => (event.event === "translation_failed" ? log.warn : log.info)(event),
  });

  const app = createHttpApp({
    authenticate,
    authenticateKeys,
    manageApiKeys,
    createProduct: new CreateProduct({ products, embedder: documentEmbedder }),
    manageProducts: new ManageProducts({ products, embedder: documentEmbedder }),
    manageCatalogues: await root.manageCatalogues(),
    importJobs: await root.importJobs(),
    search,
    synonyms: await root.manageSynonyms(),
    analytics,
    health: await root.databaseHealth(),
    startup: {
      migrationsApplied: () => root.migrationsApplied(),
      embedderLoaded: () => !(embedder instanceof LocalEmbedder) || embedder.loaded,
      writable: () => root.writable(),
      embeddingSpaceChanged: () =>
        spaceWatch?.changedTo && { stored: spaceWatch.changedTo, configured: spaceWatch.configured },
    },
    rateLimiter: new RateLimiter({
      policies: rateLimitPolicies(config),
      ...(await root.rateLimitCounters()),
      clock,
      // One line per request counted in memory would flood the log: the metrics count them.
      log: (event) => (event.event === "rate_limit_fallback" ? log.debug : log.warn)(event),
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
      uiImageOrigins: config.uiImageOrigins,
    },
    log: (event) => (event.level === "error" ? log.error : event.level === "warn" ? log.warn : log.info)(event),
  });

  return {
    app,
    root,
    embedder,
    /** The search use case the routes call (with its query cache and analytics): bench/http-target.ts calls it bare. */
    search,
    /** Milliseconds the start spent opening and migrating the database, starting translation, making the first admin. */
    startupMs,
    /** GET /metrics alone, for METRICS_PORT; undefined when metrics are off or served by `app`. */
    metricsApp:
      metrics && config.metrics.port !== undefined ? metricsApp({ metrics, token: config.metrics.token }) : undefined,
    /** Loads the offline model now rather than on the first request (until then, not ready). */
    warmUp: async () => {
      if (embedder instanceof LocalEmbedder) await embedder.load();
    },
    close: async () => {
      await stopRememberingTokens();
      await stopRememberingKeys();
      await root.close();
    },
  };
}
