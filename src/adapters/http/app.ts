import { Elysia } from "elysia";
import type { Authenticate } from "../../domain/authenticate.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import type { ImportProducts } from "../../domain/import-products.ts";
import type { ManageProducts } from "../../domain/manage-products.ts";
import type { RateLimiter } from "../../domain/rate-limit.ts";
import type { SearchAndRecommend } from "../../domain/search-and-recommend.ts";
import type { DatabaseHealth } from "../../ports/database-health.ts";
import { authRoutes } from "./auth-routes.ts";
import type { BulkLimits } from "./bulk-body.ts";
import { corsRoutes, corsVerdict } from "./cors.ts";
import { docsAssetRoutes } from "./docs-assets.ts";
import { notFound, payloadTooLarge, toProblem } from "./errors.ts";
import { healthRoutes, NotReady, type StartupState } from "./health-routes.ts";
import { type MetricsRoutesDeps, metricsRoutes } from "./metrics-routes.ts";
import { apiDocs } from "./openapi.ts";
import { productRoutes } from "./product-routes.ts";
import { bucketOf, rateLimitHook } from "./rate-limit.ts";
import { beginRequest, contextOf, endRequest, inRequestScope } from "./request-context.ts";
import { uiRoutes } from "./ui-routes.ts";

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
}

export type LogEvent = Record<string, unknown>;

export interface HttpDeps {
  authenticate: Authenticate;
  createProduct: CreateProduct;
  manageProducts: ManageProducts;
  importProducts: ImportProducts;
  search: SearchAndRecommend;
  health: DatabaseHealth;
  /** What GET /health/ready checks besides the database. */
  startup: StartupState;
  /** Per-client budgets of searches and writes (see rate-limit.ts for which routes spend which). */
  rateLimiter: RateLimiter;
  /** GET /metrics on this app, behind its bearer token; unset: not served here (off, or on a port of its own). */
  metrics?: MetricsRoutesDeps | undefined;
  settings: HttpSettings;
  /**
   * Structured events: `{level: "info", event: "request", method, path, route, status, ms, requestId}`
   * per request (`route` is the matched pattern, e.g. "/products/:id"; absent when none matched), and
   * `{level: "error", event: "request_failed", ..., error}` with the real Error behind every 5xx
   * (level "warn" for GET /health/ready's 503).
   */
  log: (event: LogEvent) => void;
}

const BULK_PATH = "/products/bulk";

/** Headers every answer carries: this is a JSON API, nothing in it should be sniffed, cached or framed. */
const SECURITY_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "no-store",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/**
 * The Elysia app (not listening): GET /, /health/live, /health/ready, POST /auth/login, POST /products/,
 * POST /products/search, /openapi (Swagger UI with its script and stylesheet served from here,
 * docs-assets.ts), the search page at /ui (ui-routes.ts), and GET /metrics when `metrics` is given.
 *
 * Around every route: a request id (the client's X-Request-Id when usable, else a new one) returned
 * as X-Request-Id and carried by every log line written while serving it; the security headers;
 * CORS for the listed origins; and the per-client rate limits of searches and writes.
 */
export function createHttpApp(deps: HttpDeps) {
  const {
    authenticate,
    createProduct,
    manageProducts,
    importProducts,
    search,
    health,
    startup,
    rateLimiter,
    settings,
  } = deps;
  const { log } = deps;
  const { maxBodyBytes } = settings;
  /** The bulk import takes larger bodies than any other route. */
  const bodyLimit = (path: string) => (routeKey(path) === BULK_PATH ? settings.bulk.maxBytes : maxBodyBytes);
  const corsOrigins = new Set(settings.corsOrigins);

  const healthGroup = healthRoutes({ health, startup });
  const authGroup = authRoutes({ authenticate, maxBodyBytes, trustProxy: settings.trustProxy });
  const productGroup = productRoutes({
    authenticate,
    createProduct,
    manageProducts,
    importProducts,
    search,
    searchRequiresAuth: settings.searchRequiresAuth,
    maxBodyBytes,
    bulk: settings.bulk,
  });
  const docsAssets = docsAssetRoutes();
  const docs = apiDocs({
    projectName: settings.projectName,
    version: settings.version,
    bodyLimit,
    rateLimitPolicy: (method, route) => {
      const bucket = bucketOf(method, route);
      return bucket === null ? undefined : rateLimiter.policy(bucket);
    },
    metrics: deps.metrics?.token !== undefined,
  });
  const metricsGroup = deps.metrics ? metricsRoutes(deps.metrics) : new Elysia();
  const corsGroup = corsRoutes(corsOrigins);
  // The search page (ui-routes.ts), with a Content-Security-Policy of its own.
  const uiGroup = uiRoutes();
  const methodsByPath = routeTable([healthGroup, authGroup, productGroup, docs, docsAssets, metricsGroup, uiGroup]);

  return (
    // normalize: false makes `additionalProperties: false` reject unknown fields (422) instead of dropping them.
    new Elysia({ normalize: false })
      // Everything below, hooks included, runs inside the request's scope (its id for the logs).
      .wrap((handle) => (request: Request) => inRequestScope(request, () => handle(request)))
      .onRequest(({ request, set }) => {
        const { requestId } = beginRequest(request, settings.requestTimeoutMs);
        Object.assign(set.headers, SECURITY_HEADERS, { "X-Request-Id": requestId });
        // Preflights are answered by corsRoutes; this adds the CORS headers to everything else.
        const cors = corsVerdict(corsOrigins, request);
        if (cors.kind === "allowed") Object.assign(set.headers, cors.headers);
        // Refuse a declared oversized body before anything reads it; readBody bounds the rest.
        const limit = bodyLimit(new URL(request.url).pathname);
        if (Number(request.headers.get("content-length")) > limit) throw payloadTooLarge(limit);
      })
      .onBeforeHandle(rateLimitHook({ limiter: rateLimiter, trustProxy: settings.trustProxy, context: contextOf }))
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
        const context = endRequest(request);
        log({
          level: "info",
          event: "request",
          method: request.method,
          path,
          route: route || undefined,
          status: typeof set.status === "number" ? set.status : 200,
          ms: context ? Math.round((performance.now() - context.startedAt) * 10) / 10 : null,
          requestId: context?.requestId,
        });
      })
      .use(docs)
      .use(docsAssets)
      .use(healthGroup)
      .use(authGroup)
      .use(productGroup)
      .use(metricsGroup)
      .use(uiGroup)
      .use(corsGroup)
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

function routeKey(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
