import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import type { Authenticate } from "../../domain/authenticate.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import type { ImportProducts } from "../../domain/import-products.ts";
import type { ManageProducts } from "../../domain/manage-products.ts";
import type { SearchAndRecommend } from "../../domain/search-and-recommend.ts";
import type { DatabaseHealth } from "../../ports/database-health.ts";
import { authRoutes } from "./auth-routes.ts";
import type { BulkLimits } from "./bulk-body.ts";
import { DOCS_ASSETS, docsAssetRoutes } from "./docs-assets.ts";
import { notFound, payloadTooLarge, toProblem } from "./errors.ts";
import { healthRoutes } from "./health-routes.ts";
import { productRoutes } from "./product-routes.ts";
import { beginRequest, endRequest } from "./request-context.ts";

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
}

export type LogEvent = Record<string, unknown>;

export interface HttpDeps {
  authenticate: Authenticate;
  createProduct: CreateProduct;
  manageProducts: ManageProducts;
  importProducts: ImportProducts;
  search: SearchAndRecommend;
  health: DatabaseHealth;
  settings: HttpSettings;
  /**
   * Structured events: `{level: "info", event: "request", method, path, status, ms}` per request, and
   * `{level: "error", event: "request_failed", ..., error}` with the real Error behind every 5xx.
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
 * The Elysia app (not listening): GET /, POST /auth/login, POST /products/, POST /products/search, and
 * /openapi (Swagger UI with its script and stylesheet served from here, docs-assets.ts).
 */
export function createHttpApp(deps: HttpDeps) {
  const { authenticate, createProduct, manageProducts, importProducts, search, health, settings } = deps;
  const { log } = deps;
  const { maxBodyBytes } = settings;
  /** The bulk import takes larger bodies than any other route. */
  const bodyLimit = (path: string) => (routeKey(path) === BULK_PATH ? settings.bulk.maxBytes : maxBodyBytes);

  const healthGroup = healthRoutes({ health });
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
  const docs = openapi({
    path: "/openapi",
    // Swagger UI from this server (docs-assets.ts), not a CDN: the page works offline.
    provider: "swagger-ui",
    swagger: {
      cdn: DOCS_ASSETS.script,
      theme: DOCS_ASSETS.stylesheet,
      // No badge fetched from swagger.io's online validator.
      validatorUrl: "none",
    },
    documentation: {
      info: {
        title: settings.projectName,
        version: settings.version,
        description: 'Búsqueda semántica de productos con una recomendación generada. Errores: {"detail": "..."}.',
      },
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
  });
  const methodsByPath = routeTable([healthGroup, authGroup, productGroup, docs, docsAssets]);

  return (
    // normalize: false makes `additionalProperties: false` reject unknown fields (422) instead of dropping them.
    new Elysia({ normalize: false })
      .onRequest(({ request, set }) => {
        beginRequest(request, settings.requestTimeoutMs);
        Object.assign(set.headers, SECURITY_HEADERS);
        // Refuse a declared oversized body before anything reads it; readBody bounds the rest.
        const limit = bodyLimit(new URL(request.url).pathname);
        if (Number(request.headers.get("content-length")) > limit) throw payloadTooLarge(limit);
      })
      .onError(({ code, error, path, request, set }) => {
        const problem = code === "NOT_FOUND" ? notFound(methodsByPath.get(routeKey(path))) : toProblem(error);
        if (problem.status >= 500) {
          log({ level: "error", event: "request_failed", method: request.method, path, status: problem.status, error });
        }
        set.status = problem.status;
        Object.assign(set.headers, problem.headers);
        return { detail: problem.detail };
      })
      .onAfterResponse(({ request, path, set }) => {
        const context = endRequest(request);
        log({
          level: "info",
          event: "request",
          method: request.method,
          path,
          status: typeof set.status === "number" ? set.status : 200,
          ms: context ? Math.round((performance.now() - context.startedAt) * 10) / 10 : null,
        });
      })
      .use(docs)
      .use(docsAssets)
      .use(healthGroup)
      .use(authGroup)
      .use(productGroup)
  );
}

/** Path (without trailing slash) → the methods it answers, for 405 and its Allow header. */
function routeTable(instances: readonly { routes: readonly { method: string; path: string }[] }[]) {
  const table = new Map<string, string[]>();
  for (const { method, path } of instances.flatMap((instance) => instance.routes)) {
    const methods = table.get(routeKey(path)) ?? [];
    const all = method === "GET" ? ["GET", "HEAD"] : [method];
    table.set(routeKey(path), [...new Set([...methods, ...all])]);
  }
  return table;
}

function routeKey(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
