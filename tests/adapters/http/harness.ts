import { expect } from "bun:test";
import { createHttpApp, type HttpSettings, type LogEvent } from "../../../src/adapters/http/app.ts";
import type { JwtAlgorithm } from "../../../src/adapters/http/auth/jwt-algorithms.ts";
import { JwtTokenService } from "../../../src/adapters/http/auth/jwt-token-service.ts";
import { requestLogFields } from "../../../src/adapters/http/core/request-context.ts";
import { MemoryRateLimitCounters } from "../../../src/adapters/in-process/rate-limit-counters.ts";
import { PrometheusMetrics } from "../../../src/adapters/metrics/prometheus-metrics.ts";
import { HmacApiKeys } from "../../../src/adapters/security/hmac-api-keys.ts";
import { type Logger, tapLogger } from "../../../src/app/logger.ts";
import { ManageApiKeys, type NewApiKey } from "../../../src/domain/api-keys.ts";
import { Authenticate } from "../../../src/domain/authenticate.ts";
import { AuthenticateKeys } from "../../../src/domain/authenticate-keys.ts";
import { CreateProduct } from "../../../src/domain/create-product.ts";
import { EmbedStaleProducts } from "../../../src/domain/embed-stale-products.ts";
import { type ImportJobSettings, ImportJobs } from "../../../src/domain/import-jobs.ts";
import { ImportProducts } from "../../../src/domain/import-products.ts";
import { LoginThrottle } from "../../../src/domain/login-throttle.ts";
import { ManageCatalogues } from "../../../src/domain/manage-catalogues.ts";
import { ManageProducts } from "../../../src/domain/manage-products.ts";
import { ManageUsers } from "../../../src/domain/manage-users.ts";
import { type RateLimitBucket, RateLimiter, type RateLimitPolicy } from "../../../src/domain/rate-limit.ts";
import { SearchAnalytics } from "../../../src/domain/search-analytics.ts";
import { type Ranking, SearchAndRecommend, type SearchDefaults } from "../../../src/domain/search-and-recommend.ts";
import { ManageSynonyms } from "../../../src/domain/synonyms.ts";
import type { Generator } from "../../../src/ports/generator.ts";
import { systemTimers } from "../../../src/ports/timers.ts";
import { FakeClock } from "../../fakes/fake-clock.ts";
import { FakeEmbedder } from "../../fakes/fake-embedder.ts";
import { FakeGenerator } from "../../fakes/fake-generator.ts";
import { MemoryApiKeyRepository } from "../../fakes/memory-api-key-repository.ts";
import { MemoryDatabaseHealth } from "../../fakes/memory-database-health.ts";
import { MemoryImportJobRepository } from "../../fakes/memory-import-job-repository.ts";
import { MemoryProductRepository } from "../../fakes/memory-product-repository.ts";
import { MemorySearchAnalytics } from "../../fakes/memory-search-analytics.ts";
import { MemorySynonymStore } from "../../fakes/memory-synonym-store.ts";
import { MemoryUserRepository } from "../../fakes/memory-user-repository.ts";
import { type CallOptions, callApp } from "../../support/app-client.ts";
import { lowCostHasher } from "../../support/password-hasher.ts";

export const SECRET = "secreto-de-pruebas-que-nunca-debe-salir-en-una-respuesta";
export const USERNAME = "ana";
export const PASSWORD = "contraseña-de-ana";
export const USERNAME_POLICY = { maxFailures: 5, windowMs: 15 * 60_000, lockoutMs: 15 * 60_000 };
export const ADDRESS_POLICY = { maxFailures: 50, windowMs: 15 * 60_000, lockoutMs: 15 * 60_000 };

export interface HarnessOptions {
  settings?: Partial<HttpSettings>;
  algorithm?: JwtAlgorithm;
  addressPolicy?: typeof ADDRESS_POLICY;
  /** Per-client budgets (none: nothing is rate limited). */
  rateLimits?: Partial<Record<RateLimitBucket, RateLimitPolicy>>;
  /** GET /metrics on the app, behind this token (unset: not served). */
  metricsToken?: string;
  /** The generator the search uses, instead of the FakeGenerator (e.g. a chain of fakes logging to `log`). */
  generator?: (log: Logger) => Generator;
  /** How the search ranks when a request does not say (SEARCH_MODE, HYBRID_ALPHA); unset: the domain's. */
  searchDefaults?: SearchDefaults;
  /** The category boost and relevance threshold (HYBRID_CATEGORY_BOOST, SEARCH_MIN_SCORE); unset: the domain's. */
  ranking?: Ranking;
  /** Days the search analytics keep (ANALYTICS_RETENTION_DAYS); unset: 90. */
  analyticsRetentionDays?: number;
  /** How import jobs are worked (unset: the domain's defaults). */
  jobSettings?: Partial<ImportJobSettings>;
}

/**
 * The real app and use cases over in-memory repositories, a fake embedder, generator and clock.
 * Events go through the service's own tap (request ids, metrics) into `logs`.
 */
export async function createHarness(options: HarnessOptions = {}) {
  const users = new MemoryUserRepository();
  const products = new MemoryProductRepository();
  const health = new MemoryDatabaseHealth();
  const embedder = new FakeEmbedder();
  const generator = new FakeGenerator();
  const clock = new FakeClock();
  const jobs = new MemoryImportJobRepository(products);
  const synonymStore = new MemorySynonymStore();
  const analyticsStore = new MemorySearchAnalytics();
  /** What readiness sees besides the database; `migrated` as an Error makes the migration check fail with it. */
  const startup: { migrated: boolean | Error; embedderLoaded: boolean; writable: boolean } = {
    migrated: true,
    embedderLoaded: true,
    writable: true,
  };
  const counters = new MemoryRateLimitCounters(clock);
  const metrics = new PrometheusMetrics({
    version: "1.0.0",
    processMetrics: false,
    countProducts: async () => (await products.list()).map(({ name, products }) => ({ catalogue: name, products })),
    productCountMaxAgeMs: 0,
  });
  const hasher = lowCostHasher();
  const tokens = new JwtTokenService({ secret: SECRET, algorithm: options.algorithm ?? "HS256", expireMinutes: 30 });
  const authenticate = new Authenticate({
    users,
    hasher,
    tokens,
    usernameThrottle: new LoginThrottle(USERNAME_POLICY, clock),
    addressThrottle: new LoginThrottle(options.addressPolicy ?? ADDRESS_POLICY, clock),
    // As the service runs: tokens remembered while user changes are watched.
    verifiedTokens: { maxEntries: 100, maxAgeMs: 60_000 },
    clock,
  });
  await authenticate.rememberVerifiedTokens();
  const user = await new ManageUsers({ users, hasher }).add(USERNAME, PASSWORD, "admin");
  const apiKeys = new MemoryApiKeyRepository(clock);
  const keySecrets = new HmacApiKeys(SECRET);
  const authenticateKeys = new AuthenticateKeys({
    keys: apiKeys,
    secrets: keySecrets,
    clock,
    remembered: { maxEntries: 100, maxAgeMs: 60_000 },
  });
  await authenticateKeys.rememberKeys();
  const manageApiKeys = new ManageApiKeys({ keys: apiKeys, secrets: keySecrets, clock });
  const logs: LogEvent[] = [];
  const push = (event: LogEvent) => void logs.push(event);
  const log: Logger = tapLogger(
    { debug: push, info: push, warn: push, error: push },
    { fields: requestLogFields, observe: metrics.observe },
  );
  const importJobs = new ImportJobs({
    jobs,
    importProducts: new ImportProducts({ products, embedder, log: (event) => log.info(event) }),
    clock,
    timers: systemTimers,
    ...(options.jobSettings ? { settings: options.jobSettings } : {}),
    log: (event) => log.info(event),
  });
  const analytics = new SearchAnalytics({
    store: analyticsStore,
    clock,
    retentionDays: options.analyticsRetentionDays ?? 90,
    log: (event) => log.info(event),
  });
  const app = createHttpApp({
    authenticate,
    authenticateKeys,
    manageApiKeys,
    createProduct: new CreateProduct({ products, embedder }),
    manageProducts: new ManageProducts({ products, embedder }),
    manageCatalogues: new ManageCatalogues({
      catalogues: products,
      staleProducts: new EmbedStaleProducts({ products, embedder }),
      clock,
    }),
    importJobs,
    search: new SearchAndRecommend({
      products,
      embedder,
      generator: options.generator?.(log) ?? generator,
      defaults: options.searchDefaults,
      ...(options.ranking ? { ranking: options.ranking } : {}),
      synonyms: synonymStore,
      analytics,
      log: (event) => log.info(event),
    }),
    synonyms: new ManageSynonyms(synonymStore),
    analytics,
    health,
    startup: {
      migrationsApplied: async () => {
        if (startup.migrated instanceof Error) throw startup.migrated;
        return startup.migrated;
      },
      embedderLoaded: () => startup.embedderLoaded,
      writable: async () => startup.writable,
    },
    rateLimiter: new RateLimiter({ policies: options.rateLimits ?? {}, counters, log: (event) => log.warn(event) }),
    metrics: options.metricsToken === undefined ? undefined : { metrics, token: options.metricsToken },
    settings: {
      projectName: "sku-search",
      version: "1.0.0",
      searchRequiresAuth: true,
      maxBodyBytes: 64 * 1024,
      trustProxy: false,
      requestTimeoutMs: 30_000,
      bulk: { maxBytes: 1024 * 1024, maxItems: 1000 },
      corsOrigins: [],
      ...options.settings,
    },
    log: (event) => (event.level === "error" ? log.error : log.info)(event),
  });
  const token = await tokens.issue({ userId: user.id, username: user.username, tokenVersion: user.tokenVersion });

  /** A token of another user (an admin unless `role` says otherwise), made on the spot. */
  async function tokenOf(username: string, role: "admin" | "viewer" = "admin") {
    const other = await new ManageUsers({ users, hasher }).add(username, `${PASSWORD}-${username}`, role);
    return tokens.issue({ userId: other.id, username: other.username, tokenVersion: other.tokenVersion });
  }

  /** An API key made on the spot (name "prueba", never expiring unless said): its key and id. */
  async function keyOf(request: Partial<NewApiKey> & Pick<NewApiKey, "actions">) {
    const created = await manageApiKeys.create({ name: "prueba", catalogues: ["*"], expiresAt: null, ...request });
    return { key: created.key, id: created.apiKey.id };
  }

  /** Sends one request through the app in process; the request log line is written just after the response. */
  async function call(method: string, path: string, init: CallOptions = {}) {
    const result = await callApp(app, method, path, init);
    await Bun.sleep(0);
    return result;
  }

  /**
   * GET a job (`location`, e.g. `/jobs/7`) until it has ended, as the admin unless `init` says who
   * asks; every look answered 200. The test's time limit bounds the wait.
   */
  async function endedJob(location: string, init: CallOptions = { token }) {
    for (;;) {
      const job = await call("GET", location, init);
      expect(job.status).toBe(200);
      if (job.json.status === "succeeded" || job.json.status === "failed") return job.json;
      await Bun.sleep(5);
    }
  }

  return {
    app,
    users,
    apiKeys,
    keySecrets,
    keyOf,
    products,
    jobs,
    importJobs,
    synonymStore,
    analyticsStore,
    tokenOf,
    health,
    startup,
    counters,
    metrics,
    log,
    embedder,
    generator,
    clock,
    tokens,
    user,
    token,
    logs,
    call,
    endedJob,
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;
