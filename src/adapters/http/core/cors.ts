import { Elysia, NotFoundError } from "elysia";
import { HttpProblem } from "./errors.ts";

/** What a browser script on an allowed origin may read from an answer, beyond the basic headers. */
export const CORS_EXPOSED_HEADERS = [
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "RateLimit-Policy",
  "Retry-After",
  "X-Request-Id",
  "Idempotent-Replayed",
  "WWW-Authenticate",
  // A bulk import that became a job: where to follow it, and whether Prefer: respond-async was heeded.
  "Location",
  "Preference-Applied",
  // A write's commit position, for the reads that must see it (read-your-writes on any instance).
  "X-Read-After",
];

/**
 * What it may send: the token, JSON, our own request headers, the id an event stream resumes from,
 * and Prefer (respond-async: a bulk import answered as a job at once).
 */
export const CORS_ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "Last-Event-ID",
  "Prefer",
  "X-Read-After",
  "X-Request-Id",
];
export const CORS_ALLOWED_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export type CorsVerdict =
  /** Not a cross-origin request, or CORS is off: nothing to add. */
  | { kind: "none" }
  /** A request from an allowed origin: these headers go on its answer. */
  | { kind: "allowed"; headers: Record<string, string> }
  /** A preflight from an allowed origin: answer 204 with these headers. */
  | { kind: "preflight"; headers: Record<string, string> }
  /** A preflight from an origin not listed: refused. */
  | { kind: "refused"; headers: Record<string, string> };

/**
 * Cross-origin requests from the exact origins listed (CORS_ORIGINS): the answer names the origin
 * and the headers a script may read; a preflight (OPTIONS with Access-Control-Request-Method) is
 * answered at once. Credentials mode is not offered: the API takes a bearer token in a header,
 * never a cookie. Every answer of a service with origins listed varies with Origin.
 */
export function corsVerdict(origins: ReadonlySet<string>, request: Request): CorsVerdict {
  if (origins.size === 0) return { kind: "none" };
  const vary = { Vary: "Origin" };
  const origin = request.headers.get("origin");
  const preflight = request.method === "OPTIONS" && request.headers.has("access-control-request-method");
  if (origin === null || !origins.has(origin)) return preflight ? { kind: "refused", headers: vary } : { kind: "none" };
  const allowed = { ...vary, "Access-Control-Allow-Origin": origin };
  if (!preflight) {
    return {
      kind: "allowed",
      headers: { ...allowed, "Access-Control-Expose-Headers": CORS_EXPOSED_HEADERS.join(", ") },
    };
  }
  return {
    kind: "preflight",
    headers: {
      ...allowed,
      "Access-Control-Allow-Methods": CORS_ALLOWED_METHODS.join(", "),
      "Access-Control-Allow-Headers": CORS_ALLOWED_HEADERS.join(", "),
      "Access-Control-Max-Age": String(PREFLIGHT_MAX_AGE_SECONDS),
    },
  };
}

/**
 * OPTIONS on any path, when origins are listed: a preflight from one of them is 204 with the CORS
 * headers, from any other origin 403; an OPTIONS that is no preflight is treated as before (404, or
 * 405 with Allow). Without origins there is no such route, and every OPTIONS is 404 or 405.
 */
export function corsRoutes(origins: ReadonlySet<string>) {
  if (origins.size === 0) return new Elysia();
  return new Elysia().options(
    "/*",
    ({ request, set }) => {
      const verdict = corsVerdict(origins, request);
      if (verdict.kind === "refused") throw new HttpProblem(403, "Origen no permitido", verdict.headers);
      if (verdict.kind !== "preflight") throw new NotFoundError();
      Object.assign(set.headers, verdict.headers);
      set.status = 204;
      return new Response(null, { status: 204 });
    },
    { detail: { hide: true } },
  );
}
