import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia, t } from "elysia";
import { NotAuthenticated } from "../../../domain/errors.ts";
import { notFound, toProblem } from "../core/errors.ts";
import { documented, problem, SECURITY } from "../core/route-docs.ts";

/** What GET /metrics serves: the Prometheus text exposition. */
export interface MetricsSource {
  render(): Promise<{ contentType: string; body: string }>;
}

export interface MetricsRoutesDeps {
  metrics: MetricsSource;
  /** Set: the scraper must send `Authorization: Bearer <token>`; unset: the listener itself is the protection. */
  token?: string | undefined;
}

const METRICS_TOKEN_REFUSAL = "Se necesita el token de métricas (Authorization: Bearer <METRICS_TOKEN>)";

/** A scrape's first lines, for the OpenAPI document. */
const SCRAPE_EXAMPLE = `# HELP sku_build_info Always 1; the version label names the running service's VERSION.
# TYPE sku_build_info gauge
sku_build_info{version="1.0.0"} 1
# HELP sku_products Products stored (counted at a scrape, at most once every 60 s; NaN when the count failed).
# TYPE sku_products gauge
sku_products 1250
`;

/**
 * GET /metrics. Behind a token it is in the OpenAPI document of the service's port (with its own
 * security scheme, metricsToken); the listener of its own (metricsApp) has no document.
 */
export function metricsRoutes({ metrics, token }: MetricsRoutesDeps) {
  const expected = token === undefined ? undefined : digest(token);
  return new Elysia().get(
    "/metrics",
    async ({ request }) => {
      if (expected !== undefined) {
        const presented = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
        // Compared as digests, in constant time: the token's length and content leak nothing.
        if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
          throw new NotAuthenticated(METRICS_TOKEN_REFUSAL);
        }
      }
      const { contentType, body } = await metrics.render();
      return new Response(body, { headers: { "Content-Type": contentType } });
    },
    {
      response: {
        200: documented(
          t.String(),
          "Las métricas en el formato de texto de Prometheus (text/plain; version=0.0.4)",
          SCRAPE_EXAMPLE,
        ),
        401: problem({
          description: "Falta el token de métricas o no es el configurado (METRICS_TOKEN).",
          examples: { "Sin token de métricas": METRICS_TOKEN_REFUSAL },
          headers: ["WWW-Authenticate"],
        }),
      },
      detail: {
        // Without a token (its own listener) nobody reads this app's document; `hide: false` would end up in it.
        ...(expected === undefined ? { hide: true } : {}),
        tags: ["metrics"],
        summary: "Métricas para Prometheus",
        description:
          "Peticiones por método, ruta y estado, tiempos de cada etapa de la búsqueda, recomendaciones por " +
          "proveedor, llamadas a proveedores, caché de consultas, importaciones y productos guardados. Para el " +
          "recolector de quien opera el servicio: pide el token de métricas, no el de un usuario.",
        security: SECURITY.metrics,
      },
    },
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
