import { Elysia } from "elysia";
import type { SearchAndRecommend } from "../../../domain/search-and-recommend.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { jsonBody } from "../core/body.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { searchEventStream, wantsEventStream } from "./event-stream.ts";
import { resultsView, scoredView, searchAnswers, searchBody } from "./search-schemas.ts";

export interface SearchRoutesDeps {
  search: SearchAndRecommend;
  maxBodyBytes: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * POST /products/search as the contract has it: the JSON answer, or with `Accept:
 * text/event-stream` the same search as server-sent events. Takes "search" (which the service may
 * open to anyone) and the search budget.
 */
export function searchRoutes({ search, maxBodyBytes, auth, rateLimits }: SearchRoutesDeps) {
  return new Elysia({ name: "search", prefix: "/products" })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .post(
      "/search",
      async ({ body, request, signal }) => {
        if (wantsEventStream(request)) {
          const closed = new AbortController();
          const stream = await searchEventStream(
            search.stream(body, AbortSignal.any([signal, closed.signal])),
            () => closed.abort(new DOMException("the client closed the stream", "AbortError")),
            resultsView,
            {},
          );
          // Elysia sends a Response as it is; the route's schema describes the JSON answer only.
          return stream as never;
        }
        const { query, recommendation, results, citedIds } = await search.execute(body, signal);
        return { query, recommendation, results: results.map(scoredView), cited_ids: citedIds };
      },
      {
        auth: "search",
        rateLimit: "search",
        parse: jsonBody(maxBodyBytes),
        body: searchBody(search.defaults),
        response: searchAnswers(search.defaults),
        detail: {
          tags: ["products"],
          summary: "Búsqueda semántica con recomendación generada",
          description:
            "Convierte la consulta en un embedding, ordena los productos por similitud coseno con él (o, con " +
            "mode hybrid, combinada con la coincidencia de palabras), se queda con los limit primeros (de las " +
            "categorías pedidas, si se piden) y un modelo de lenguaje escribe una recomendación basada solo en " +
            "ellos; si el primer proveedor falla, la escribe el siguiente.\n\n" +
            "Con `Accept: text/event-stream` la respuesta llega como eventos, según se escribe: results, delta, " +
            "reset, done y, si algo falla a mitad, error (ver la respuesta 200). Un error antes de los resultados " +
            'responde igual que sin eventos: su estado y `{"detail"}` en JSON.',
        },
      },
    );
}
