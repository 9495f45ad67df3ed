import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { NotAuthenticated } from "../../domain/errors.ts";
import { notFound, toProblem } from "./errors.ts";

/** What GET /metrics serves: the Prometheus text exposition. */
export interface MetricsSource {
  render(): Promise<{ contentType: string; body: string }>;
}

export interface MetricsRoutesDeps {
  metrics: MetricsSource;
  /** Set: the scraper must send `Authorization: Bearer <token>`; unset: the listener itself is the protection. */
  token?: string | undefined;
}

/** GET /metrics, left out of the OpenAPI document (it is an operator's endpoint, and may be off). */
export function metricsRoutes({ metrics, token }: MetricsRoutesDeps) {
  const expected = token === undefined ? undefined : digest(token);
  return new Elysia().get(
    "/metrics",
    async ({ request }) => {
      if (expected !== undefined) {
        const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
        // Compared as digests, in constant time: the token's length and content leak nothing.
        if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
          throw new NotAuthenticated("Se necesita el token de métricas (Authorization: Bearer <METRICS_TOKEN>)");
        }
      }
      const { contentType, body } = await metrics.render();
      return new Response(body, { headers: { "Content-Type": contentType } });
    },
    { detail: { hide: true } },
  );
}

/**
 * The metrics on a listener of their own (METRICS_PORT): GET /metrics and nothing else, so the
 * port can be opened to the scraper alone.
 */
export function metricsApp(deps: MetricsRoutesDeps) {
  return new Elysia()
    .onRequest(({ set }) => {
      set.headers["Cache-Control"] = "no-store";
      set.headers["X-Content-Type-Options"] = "nosniff";
    })
    .onError(({ code, error, set }) => {
      const problem = code === "NOT_FOUND" ? notFound() : toProblem(error);
      set.status = problem.status;
      Object.assign(set.headers, problem.headers);
      return { detail: problem.detail };
    })
    .use(metricsRoutes(deps));
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
