import { Elysia } from "elysia";
import type { ManageApiKeys } from "../../domain/api-keys.ts";
import type { Authenticate } from "../../domain/authenticate.ts";
import type { AuthenticateKeys } from "../../domain/authenticate-keys.ts";
import type { Permission } from "../../domain/caller.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import type { ImportJobs } from "../../domain/import-jobs.ts";
import type { ManageCatalogues } from "../../domain/manage-catalogues.ts";
import type { ManageProducts } from "../../domain/manage-products.ts";
import type { RateLimiter } from "../../domain/rate-limit.ts";
import type { SearchAnalytics } from "../../domain/search-analytics.ts";
import type { SearchAndRecommend } from "../../domain/search-and-recommend.ts";
import type { ManageSynonyms } from "../../domain/synonyms.ts";
import { canonicalWalPosition } from "../../lib/wal-position.ts";
import type { DatabaseHealth } from "../../ports/database-health.ts";
import { analyticsRoutes } from "./analytics/analytics-routes.ts";
import { authMacro } from "./auth/auth-macro.ts";
import { credentialRoutes } from "./auth/credential-routes.ts";
import { loginRoutes } from "./auth/login-routes.ts";
import type { BulkLimits } from "./bulk/bulk-body.ts";
import { bulkRoutes, isBulkPath } from "./bulk/bulk-routes.ts";
import { catalogueRoutes } from "./catalogues/catalogue-routes.ts";
import { PRODUCT_PREFIXES } from "./catalogues/catalogue-scope.ts";
import { corsRoutes, corsVerdict } from "./core/cors.ts";
import { invalidReadAfter, invalidRequestUrl, notFound, payloadTooLarge, toProblem } from "./core/errors.ts";
import { rateLimits } from "./core/rate-limit.ts";
import {
  currentRequestId,
  endRequest,
  inRequestScope,
  rememberReadAfter,
  requestWroteAt,
} from "./core/request-context.ts";
import { docsAssetRoutes } from "./docs/docs-assets.ts";
import { apiDocs } from "./docs/openapi.ts";
import { healthRoutes, NotReady, type StartupState } from "./health/health-routes.ts";
import { jobRoutes } from "./jobs/job-routes.ts";
import { keyRoutes } from "./keys/key-routes.ts";
import { type MetricsRoutesDeps, metricsRoutes } from "./metrics/metrics-routes.ts";
import { productRoutes } from "./products/product-routes.ts";
import { RECONNECT_MS } from "./search/event-stream.ts";
import { searchRoutes } from "./search/search-routes.ts";
import { synonymRoutes } from "./synonyms/synonym-routes.ts";
import { uiRoutes } from "./ui/ui-routes.ts";

export interface HttpSettings {
  projectName: string;
  version: string;
  /** When false, POST /products/search answers anonymous clients too. */
  searchRequiresAuth: boolean;
  /** Largest request body accepted, in bytes (413 above it). */
  maxBodyBytes: number;
  /** Take the client address for login throttling from X-Forwarded-For (set by our reverse proxy). */
  trustProxy: boolean;
  /** Time budget of one request, in ms: past it the client gets 503 with Retry-After and nothing more is stored. */
  requestTimeoutMs: number;
  /** Largest bulk import request, in bytes and items. */
  bulk: BulkLimits;
  /** Exact origins (`https://shop.example`) whose browser scripts may call the API; none: CORS is off. */
  corsOrigins: readonly string[];
  /** Where the search page's product pictures may come from besides the service itself; unset: any HTTPS origin. */
  uiImageOrigins?: readonly string[];
  /** The search's event stream `retry:`, in ms; unset: RECONNECT_MS (tests shorten it). */
  eventStreamReconnectMs?: number;
}

export type LogEvent = Record<string, unknown>;

export interface HttpDeps {
  authenticate: Authenticate;
  /** API keys and tenant tokens as credentials. */
  authenticateKeys: AuthenticateKeys;
  /** POST, GET and DELETE /keys. */
  manageApiKeys: ManageApiKeys;
  createProduct: CreateProduct;
  manageProducts: ManageProducts;
  /** POST, GET and DELETE /catalogues, and whether the catalogue of a request exists. */
  manageCatalogues: ManageCatalogues;
  /** Bulk imports, as jobs (POST /products/bulk, GET /jobs/{id}). */
  importJobs: ImportJobs;
  search: SearchAndRecommend;
  /** GET and PUT /products/synonyms (and each catalogue's). */
  synonyms: ManageSynonyms;
  /** POST /events and GET /analytics (and each catalogue's). */
  analytics: SearchAnalytics;
  health: DatabaseHealth;
  /** What GET /health/ready checks besides the database. */
  startup: StartupState;
  /** Per-client budgets of searches and writes (each route declares the one it spends: core/rate-limit.ts). */
  rateLimiter: RateLimiter;
  /** GET /metrics on this app, behind its bearer token; unset: not served here (off, or on a port of its own). */
  metrics?: MetricsRoutesDeps | undefined;
  settings: HttpSettings;
  /**
   * Structured events: `{level: "info", event: "request", method, path, route, status, ms, requestId}`
   * per request (`route` is the matched pattern, e.g. "/products/:id"; absent when none matched;
   * `path` never holds the query string, which may carry credentials: auth/auth-macro.ts), and
   * `{level: "error", event: "request_failed", ..., error}` with the real Error behind every 5xx
   * (level "warn" for GET /health/ready's 503).
   */
  log: (event: LogEvent) => void;
}

/** Headers every answer carries: this is a JSON API, nothing in it should be sniffed, cached or framed. */
const SECURITY_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "no-store",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/**
 * The Elysia app (not listening): GET /, /health/live, /health/ready, POST /auth/login, the
 * default catalogue under /products (POST /products/ and POST /products/search as the contract has
 * them) and every catalogue's under /catalogues/{catalogue}/products (the same routes, its synonyms
 * at …/products/synonyms too), the catalogues themselves under /catalogues, search analytics (POST
 * /events and GET /analytics for the default catalogue, /catalogues/{catalogue}/events and
 * …/analytics for each), the bulk import's jobs under /jobs, API keys under /keys, what a
 * credential may do at GET /auth/me,
 * /openapi (Swagger UI with its script and stylesheet served from here, docs/), the search page at
 * /ui (ui/), and GET /metrics when `metrics` is given. Each feature is a plugin of its own folder;
 * core/ holds what they share.
 *
 * Around every route: a request id (the client's X-Request-Id when usable, else a new one) returned
 * as X-Request-Id and carried by every log line written while serving it; the security headers;
 * CORS for the listed origins; and the largest body a route takes.
 */
export function createHttpApp(deps: HttpDeps) {
  const { authenticate, authenticateKeys, manageApiKeys, createProduct, manageProducts, importJobs, search } = deps;
  const { manageCatalogues } = deps;
  const { health, startup, rateLimiter } = deps;
  const { settings, log } = deps;
  const { maxBodyBytes } = settings;
  /** The bulk import takes larger bodies than any other route. */
  const bodyLimit = (path: string) => (isBulkPath(path) ? settings.bulk.maxBytes : maxBodyBytes);
  const corsOrigins = new Set(settings.corsOrigins);
  const anonymousPermissions: Permission[] = settings.searchRequiresAuth ? [] : ["search"];
  const auth = authMacro({
    authenticate,
    keys: authenticateKeys,
    anonymousPermissions,
    catalogueExists: (name) => manageCatalogues.exists(name),
  });
  const limits = rateLimits({ limiter: rateLimiter, trustProxy: settings.trustProxy });

  const docs = apiDocs({
    projectName: settings.projectName,
    version: settings.version,
    bodyLimit,
    rateLimitPolicy: (bucket) => rateLimiter.policy(bucket),
    metrics: deps.metrics?.token !== undefined,
  });
  const docsAssets = docsAssetRoutes();
  const healthFeature = healthRoutes({ health, startup });
  const login = loginRoutes({ authenticate, maxBodyBytes, trustProxy: settings.trustProxy });
  // Each catalogue's routes twice: the contract's /products… (the default catalogue) and /catalogues/{catalogue}/products….
  // The synonyms come before the products: /products/synonyms is not a product's id.
  const inCatalogues = PRODUCT_PREFIXES.flatMap((prefix) => [
    synonymRoutes({ prefix, synonyms: deps.synonyms, maxBodyBytes, auth, rateLimits: limits }),
    productRoutes({ prefix, createProduct, manageProducts, maxBodyBytes, auth, rateLimits: limits }),
    searchRoutes({
      prefix,
      search,
      maxBodyBytes,
      auth,
      rateLimits: limits,
      reconnectMs: settings.eventStreamReconnectMs ?? RECONNECT_MS,
    }),
    bulkRoutes({
      prefix,
      importJobs,
      limits: settings.bulk,
      requestTimeoutMs: settings.requestTimeoutMs,
      auth,
      rateLimits: limits,
    }),
    analyticsRoutes({ prefix, analytics: deps.analytics, maxBodyBytes, auth, rateLimits: limits }),
  ]);
  const catalogues = catalogueRoutes({ manageCatalogues, maxBodyBytes, auth });
  const jobs = jobRoutes({ importJobs, auth });
  const keys = keyRoutes({ manageApiKeys, maxBodyBytes, auth });
  const credential = credentialRoutes({ manageCatalogues, auth, rateLimits: limits });
  const metrics = deps.metrics ? metricsRoutes(deps.metrics) : new Elysia();
  // The search page, with a Content-Security-Policy of its own.
  const ui = uiRoutes({ imageOrigins: settings.uiImageOrigins });
  const methodsByPath = routeTable([
    docs,
    docsAssets,
    healthFeature,
    login,
    ...inCatalogues,
    catalogues,
    jobs,
    keys,
    credential,
    metrics,
    ui,
  ]);

  return (
    // normalize: false makes `additionalProperties: false` reject unknown fields (422) instead of dropping them.
    new Elysia({ normalize: false })
      // Everything below, hooks included, runs inside the request's scope (its id and clock: core/request-context.ts).
      .wrap((handle) => (request: Request) => inRequestScope(request, settings.requestTimeoutMs, () => handle(request)))
      .onRequest(({ request, set }) => {
        Object.assign(set.headers, SECURITY_HEADERS, { "X-Request-Id": currentRequestId() });
        // Preflights are answered by corsRoutes; this adds the CORS headers to everything else.
        const cors = corsVerdict(corsOrigins, request);
        if (cors.kind === "allowed") Object.assign(set.headers, cors.headers);
        // Refuse a declared oversized body before anything reads it; the body readers bound the rest.
        const limit = bodyLimit(requestUrl(request).pathname);
        if (Number(request.headers.get("content-length")) > limit) throw payloadTooLarge(limit);
        // Read-your-writes on any instance: the reads of a request that names a write's position see it.
        const readAfter = request.headers.get("x-read-after");
        if (readAfter !== null) {
          const position = canonicalWalPosition(readAfter);
          if (position === undefined) throw invalidReadAfter();
          rememberReadAfter(position);
        }
      })
      // A write's answer says where its commit is, for the reads that must see it (on any instance).
      .onAfterHandle(({ set }) => {
        const wroteAt = requestWroteAt();
        if (wroteAt !== undefined) set.headers["X-Read-After"] = wroteAt;
      })
      .onError(({ code, error, path, request, route, set }) => {
        const problem = code === "NOT_FOUND" ? notFound(methodsByPath.allowed(path)) : toProblem(error);
        if (problem.status >= 500) {
          log({
            // Not ready is an answer the probes expect now and then (the model loading at startup).
            level: error instanceof NotReady ? "warn" : "error",
            event: "request_failed",
            method: request.method,
            path,
            route: route || undefined,
            status: problem.status,
            error,
          });
        }
        set.status = problem.status;
        Object.assign(set.headers, problem.headers);
        return { detail: problem.detail };
      })
      .onAfterResponse(({ request, path, route, set }) => {
        const served = endRequest();
        log({
          level: "info",
          event: "request",
          method: request.method,
          path,
          route: route || undefined,
          status: typeof set.status === "number" ? set.status : 200,
          ms: served?.ms ?? null,
          requestId: served?.requestId,
        });
      })
      .use(docs)
      .use(docsAssets)
      .use(healthFeature)
      .use(login)
      .use(inCatalogues)
      .use(catalogues)
      .use(jobs)
      .use(keys)
      .use(credential)
      .use(metrics)
      .use(ui)
      .use(corsRoutes(corsOrigins))
  );
}

/**
 * The methods each route answers, for 405 and its Allow header: `allowed(path)` gives those of
 * every route whose pattern matches the path (a `:param` segment matches any one segment).
 */
function routeTable(instances: readonly { routes: readonly { method: string; path: string }[] }[]) {
  const routes = instances
    .flatMap((instance) => instance.routes)
    .map(({ method, path }) => ({
      segments: routeKey(path).split("/"),
      methods: method === "GET" ? ["GET", "HEAD"] : [method],
    }));
  return {
    allowed(path: string): string[] {
      const segments = routeKey(path).split("/");
      const matching = routes.filter(
        (route) =>
          route.segments.length === segments.length &&
          route.segments.every((segment, i) => segment.startsWith(":") || segment === segments[i]),
      );
      return [...new Set(matching.flatMap((route) => route.methods))];
    },
  };
}

/**
 * The request's URL, or 400. Bun builds it from the target and the Host header, and gives a bare
 * path when there is no Host (an HTTP/1.0 request may omit it) or the Host is not a host
 * (`Host: a b`, `x:99999`), and CONNECT's `host:port` as it is: no route can answer those.
 */
function requestUrl(request: Request): URL {
  const url = URL.parse(request.url);
  if (url?.protocol !== "http:" && url?.protocol !== "https:") throw invalidRequestUrl();
  return url;
}

function routeKey(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
