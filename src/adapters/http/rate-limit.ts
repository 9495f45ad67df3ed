import type { RateLimitBucket, RateLimiter, RateLimitState } from "../../domain/rate-limit.ts";
import { clientAddress, type PeerSource } from "./client-address.ts";
import type { RequestContext } from "./request-context.ts";

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * The budget a request spends, from its method and route pattern: POST /products/search spends the
 * search budget; any other write (POST, PUT, PATCH, DELETE) under /products spends the write
 * budget; everything else (reads, login, health, docs, metrics) is not limited here.
 */
export function bucketOf(method: string, route: string): RateLimitBucket | null {
  if (route !== "/products" && !route.startsWith("/products/")) return null;
  if (method === "POST" && (route === "/products/search" || route === "/products/search/")) return "search";
  return WRITE_METHODS.has(method) ? "write" : null;
}

/**
 * The IETF draft's headers (draft-ietf-httpapi-ratelimit-headers, as most gateways send them):
 * the limit, what is left of it, whole seconds until the window ends, and the policy.
 */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    "RateLimit-Limit": String(state.limit),
    "RateLimit-Remaining": String(state.remaining),
    "RateLimit-Reset": String(state.resetSeconds),
    "RateLimit-Policy": `${state.limit};w=${state.windowSeconds}`,
  };
}

export interface RateLimitHookDeps {
  limiter: RateLimiter;
  trustProxy: boolean;
  context: (request: Request) => RequestContext;
}

/**
 * Before a limited route's handler (after its bearer check and body validation, so a refused or
 * malformed request costs nothing): counts the request against its client, by user when the route
 * authenticated one, else by address; sets the RateLimit-* headers; throws RateLimitExceeded (429
 * with Retry-After) when the budget is spent.
 */
export function rateLimitHook({ limiter, trustProxy, context }: RateLimitHookDeps) {
  return async ({
    request,
    route,
    server,
    set,
  }: {
    request: Request;
    route: string;
    server: PeerSource | null;
    set: { headers: Record<string, unknown> };
  }) => {
    const bucket = bucketOf(request.method, route);
    if (bucket === null || !limiter.limits(bucket)) return;
    const user = context(request).user;
    const client = user ? `user:${user.id}` : `address:${clientAddress(request, server, trustProxy) ?? "unknown"}`;
    const state = await limiter.spend(bucket, client);
    if (state) Object.assign(set.headers, rateLimitHeaders(state));
  };
}
