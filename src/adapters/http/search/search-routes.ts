import { Elysia } from "elysia";
import type { Caller } from "../../../domain/caller.ts";
import type { SearchAndRecommend, SearchRequest } from "../../../domain/search-and-recommend.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { catalogueParams, type ProductPrefix, pluginName } from "../catalogues/catalogue-scope.ts";
import { jsonBody } from "../core/body.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { jsonParam } from "../products/product-schemas.ts";
import { endsStream, searchEventStream, wantsEventStream } from "./event-stream.ts";
import {
  BODY_ANSWERS,
  browsedView,
  resultsView,
  SEARCH_DESCRIPTION,
  SearchHeaders,
  scoredView,
  searchAnswers,
  searchBody,
  searchQuery,
} from "./search-schemas.ts";

export interface SearchRoutesDeps {
  /** Where they are mounted: `/products` (the default catalogue) or each catalogue's (catalogue-scope.ts). */
  prefix: ProductPrefix;
  search: SearchAndRecommend;
  maxBodyBytes: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
  /** The event stream's `retry:`, in ms (event-stream.ts's RECONNECT_MS). */
  reconnectMs: number;
}

/** What a search's handler takes from Elysia's context. */
interface SearchContext {
  request: Request;
  signal: AbortSignal;
  requestId: string;
  caller: Caller;
  catalogue: string;
}

/**
 * GET /products/search's parameters as the search request: `filter` and `sort` hold JSON, `facets`
 * names separated by commas.
 */
function fromQueryString({
  filter,
  sort,
  facets,
  ...rest
}: Omit<SearchRequest, "filter" | "sort" | "facets"> & {
  filter?: string;
  sort?: string;
  facets?: string;
}): SearchRequest {
  return {
    ...rest,
    ...(filter === undefined ? {} : { filter: jsonParam("filter", filter) }),
    ...(sort === undefined ? {} : { sort: jsonParam("sort", sort) }),
    ...(facets === undefined ? {} : { facets: facets.split(",").map((name) => name.trim()) }),
  };
}

/**
 * POST /products/search as the contract has it, and GET /products/search with the same fields as
 * query parameters (what EventSource can send): the JSON answer, or with `Accept:
 * text/event-stream` the same search as server-sent events. A reconnect after a stream's last
 * event (its Last-Event-ID ends in `:end`) gets 204 before anything is counted or run, which stops
 * EventSource. Takes "search" (which the service may open to anyone) and the search budget. The same
 * under /catalogues/{catalogue}/products/search (`prefix`): each searches the catalogue the auth
 * macro resolved (the default one for /products), and never returns a product of another.
 */
export function searchRoutes({ prefix, search, maxBodyBytes, auth, rateLimits, reconnectMs }: SearchRoutesDeps) {
  const params = catalogueParams(prefix);
  const answer = async (
    { request, signal, requestId, caller, catalogue }: SearchContext,
    searchRequest: SearchRequest,
  ) => {
    // A tenant token's filter: the request narrows it, never widens it (domain/search-filter.ts).
    const { filter } = caller;
    if (wantsEventStream(request)) {
      const closed = new AbortController();
      const events = search.stream(searchRequest, {
        catalogue,
        signal: AbortSignal.any([signal, closed.signal]),
        filter,
      });
      const stream = await searchEventStream(events, {
        streamId: requestId,
        reconnectMs,
        abort: () => closed.abort(new DOMException("the client closed the stream", "AbortError")),
        view: resultsView,
      });
      // Elysia sends a Response as it is; the route's schema describes the JSON answer only.
      return stream as never;
    }
    const { searchId, query, recommendation, results, citedIds, browsed } = await search.execute(searchRequest, {
      catalogue,
      signal,
      filter,
    });
    return {
      search_id: searchId,
      query,
      recommendation,
      results: results.map(scoredView),
      cited_ids: citedIds,
      ...browsedView(browsed),
    };
  };
  // Runs before the rate-limit macro's check (a route's own hooks run before its macros'): a
  // reconnect to an ended stream costs no search. A Response, sent as it is: Elysia 1.4's `handle`
  // answers nothing at all for `status(204)` returned from a hook.
  const streamEnded = ({ request, set }: { request: Request; set: { status?: number | string } }) => {
    if (!wantsEventStream(request) || !endsStream(request.headers.get("last-event-id"))) return undefined;
    set.status = 204;
    return new Response(null, { status: 204 }) as never;
  };
  const tags = ["products"];

  return new Elysia({ name: pluginName("search", prefix), prefix })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .post("/search", (context) => answer(context, context.body), {
      auth: "search",
      rateLimit: "search",
      headers: SearchHeaders,
      beforeHandle: ({ request, set }) => streamEnded({ request, set }),
      params,
      parse: jsonBody(maxBodyBytes),
      body: searchBody(search.defaults),
      response: { ...searchAnswers(search.defaults, "body"), ...BODY_ANSWERS },
      detail: {
        tags,
        summary: "Búsqueda semántica con recomendación generada",
        description: SEARCH_DESCRIPTION,
      },
    })
    .get("/search", (context) => answer(context, fromQueryString(context.query)), {
      auth: { permission: "search", keyInQuery: true },
      rateLimit: "search",
      headers: SearchHeaders,
      beforeHandle: ({ request, set }) => streamEnded({ request, set }),
      params,
      query: searchQuery(search.defaults),
      response: searchAnswers(search.defaults, "query"),
      detail: {
        tags,
        summary: "La misma búsqueda, con los campos en la URL (para EventSource)",
        description:
          "Los mismos campos que POST /products/search, como parámetros de la URL (category, repetido para " +
          "varias), y las mismas respuestas. Es la forma que puede pedir `EventSource` del navegador, que solo " +
          "hace GET y no envía cabeceras: con `Accept: text/event-stream` la respuesta llega como eventos, y la " +
          'credencial puede ir en el parámetro key (una clave con actions ["search"] o un token de inquilino; ' +
          "nunca se escribe en los registros).",
      },
    });
}
