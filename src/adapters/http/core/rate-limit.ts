import { type DocumentDecoration, Elysia } from "elysia";
import { type Caller, rateLimitClient } from "../../../domain/caller.ts";
import type { RateLimitBucket, RateLimiter, RateLimitState } from "../../../domain/rate-limit.ts";
import { clientAddress, type PeerSource } from "./client-address.ts";

/**
 * Where a route's `rateLimit` declaration waits in its OpenAPI operation until docs/openapi.ts
 * turns it into the policy's 429 answer and headers (and removes it).
 */
export const RATE_LIMIT_EXTENSION = "x-rate-limit-bucket";

/** Likewise, set when the route's handler spends several units (its 429 then says what it cost). */
export const RATE_LIMIT_UNITS_EXTENSION = "x-rate-limit-units";

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

export type RateLimits = ReturnType<typeof rateLimits>;

export interface RateLimitDeps {
  limiter: RateLimiter;
  trustProxy: boolean;
}

/**
 * What the macro reads of a request: the caller the auth macro found (if the route has one), the
 * catalogue it works in, and the peer.
 */
interface RateLimitContext {
  request: Request;
  server: PeerSource | null;
  set: { headers: Record<string, unknown> };
  caller?: Caller;
  catalogue?: string;
}

/**
 * What a route spends: one unit of a bucket per request, counted before its handler (`"write"`), or
 * units its handler counts once it knows them (`{ bucket: "write", spentBy: "handler" }`: the bulk
 * import, which costs by its items and knows them only once it has read its body).
 */
export type RateLimitDeclaration = RateLimitBucket | { bucket: RateLimitBucket; spentBy: "handler" };

/**
 * The `rateLimit` macro: a route declares the budget it spends, `{ rateLimit: "search" }` (POST
 * /products/search) or `"write"` (every catalogue write). Before its handler (after the auth
 * check and body validation, so a refused or malformed request costs nothing) the request is
 * counted against its client, by caller when the route identified one, else by address, and by
 * the catalogue the route works in (a key's searches in one shop spend nothing of its budget in
 * another: `key:3f9a@tienda-norte`); the answer gets the RateLimit-* headers, and RateLimitExceeded (429 with Retry-After) once the
 * budget is spent. A route whose handler spends (`spentBy: "handler"`) calls `spendRateLimit(units)`
 * from its context, before it changes anything. The same declaration puts the policy in the
 * OpenAPI document.
 */
export function rateLimits({ limiter, trustProxy }: RateLimitDeps) {
  const spend = async (
    { request, server, set, caller, catalogue }: RateLimitContext,
    bucket: RateLimitBucket,
    units: number,
  ) => {
    if (!limiter.limits(bucket)) return;
    const counted = caller && rateLimitClient(caller);
    const address = () => `address:${clientAddress(request, server, trustProxy) ?? "unknown"}`;
    const client = counted === undefined ? address() : counted.perAddress ? `${counted.id}|${address()}` : counted.id;
    const state = await limiter.spend(bucket, catalogue === undefined ? client : `${client}@${catalogue}`, units);
    if (state) Object.assign(set.headers, rateLimitHeaders(state));
  };
  return new Elysia({ name: "rate-limits" }).macro({
    rateLimit: (declaration: RateLimitDeclaration) => {
      const bucket = typeof declaration === "string" ? declaration : declaration.bucket;
      const byHandler = typeof declaration !== "string";
      return {
        // An `x-` key is valid OpenAPI, but not in the operation type Elysia takes.
        detail: {
          [RATE_LIMIT_EXTENSION]: bucket,
          ...(byHandler ? { [RATE_LIMIT_UNITS_EXTENSION]: true } : {}),
        } as DocumentDecoration,
        // Each hook names the parts of the context it reads: Elysia reads its hooks' source (sucrose),
        // and one that took the whole context would make every route with the macro parse a body.
        async beforeHandle({ request, server, set, caller, catalogue }: RateLimitContext) {
          if (!byHandler) await spend({ request, server, set, caller, catalogue }, bucket, 1);
        },
        resolve: ({ request, server, set, caller, catalogue }: RateLimitContext) => ({
          /** Counts `units` of the route's bucket (routes declared `spentBy: "handler"` only). */
          spendRateLimit: async (units: number) => {
            if (!byHandler) throw new Error(`the route spends its ${bucket} budget per request, before its handler`);
            await spend({ request, server, set, caller, catalogue }, bucket, units);
          },
        }),
      };
    },
  });
}
