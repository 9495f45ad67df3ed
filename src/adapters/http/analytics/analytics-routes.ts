import { Elysia, t } from "elysia";
import type { SearchAnalytics, SearchAnalyticsReport } from "../../../domain/search-analytics.ts";
import { type QueryFigures, SEARCH_EVENT_TYPES } from "../../../ports/search-analytics.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { catalogueNotFound, catalogueParams, type ProductPrefix, pluginName } from "../catalogues/catalogue-scope.ts";
import { jsonBody, mediaTypesOf } from "../core/body.ts";
import { fieldDetail } from "../core/errors.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, messageOf, problem, UNAVAILABLE } from "../core/route-docs.ts";
import { integer, productIdField } from "../products/product-schemas.ts";
import { SEARCH_ID_EXAMPLE } from "../search/search-schemas.ts";

const EventBody = t.Object(
  {
    search_id: t.String({
      maxLength: 64,
      description: "El search_id de la respuesta de búsqueda cuyo resultado se abrió o se compró",
    }),
    product_id: productIdField("El id del producto de esos resultados"),
    // Not t.UnionEnum: Elysia fills a missing one with its first value.
    type: t.String({
      enum: [...SEARCH_EVENT_TYPES],
      description: "click: el comprador abrió el producto; conversion: lo compró (o lo añadió al carrito)",
    }),
  },
  { additionalProperties: false, examples: [{ search_id: SEARCH_ID_EXAMPLE, product_id: 42, type: "click" }] },
);

const DaysQuery = t.Object(
  {
    days: t.Optional(
      t.Numeric({
        title: "days",
        minimum: 1,
        multipleOf: 1,
        description:
          "Los últimos cuántos días (por defecto 7; como mucho los que se guardan, ANALYTICS_RETENTION_DAYS)",
      }),
    ),
  },
  { additionalProperties: false },
);

const count = (description: string) => integer({ minimum: 0, description });
const rate = t.Number({
  minimum: 0,
  maximum: 1,
  description: "Búsquedas con al menos un clic sobre búsquedas (0 a 1)",
});

const QueryFiguresSchema = t.Object({
  query: t.String({ description: "La consulta, en minúsculas y con los espacios normalizados" }),
  searches: count("Veces que se buscó"),
  no_results: count("Veces que no encontró ningún producto"),
  clicked_searches: count("Búsquedas de ella con al menos un clic"),
  click_through_rate: rate,
  clicks: count("Clics en sus resultados"),
  conversions: count("Compras de sus resultados"),
});

const ReportSchema = t.Object({
  days: integer({ minimum: 1, description: "Los días del periodo" }),
  since: t.String({ format: "date-time", description: "Desde cuándo cuenta" }),
  searches: count("Búsquedas del periodo"),
  no_result_searches: count("Búsquedas que no encontraron ningún producto"),
  clicked_searches: count("Búsquedas con al menos un clic"),
  click_through_rate: rate,
  clicks: count("Clics"),
  conversions: count("Compras"),
  top_queries: t.Array(QueryFiguresSchema, { description: "Las consultas más buscadas, la que más primero" }),
  no_result_queries: t.Array(QueryFiguresSchema, {
    description:
      "Las consultas que no encontraron nada, la más repetida primero: lo que el catálogo no tiene, o no sabe leer",
  }),
});

const FIGURES_EXAMPLE = {
  query: "zapatillas para correr",
  searches: 40,
  no_results: 0,
  clicked_searches: 26,
  click_through_rate: 0.65,
  clicks: 31,
  conversions: 4,
};

export interface AnalyticsRoutesDeps {
  /**
   * Which catalogue's they are: `/products` stands for the default one (POST /events, GET
   * /analytics), each catalogue's for /catalogues/{catalogue}/events and …/analytics.
   */
  prefix: ProductPrefix;
  analytics: SearchAnalytics;
  maxBodyBytes: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * POST /events (a click or conversion on a search's result, taking "search" and the search budget,
 * as the search it follows: a storefront sends them) and GET /analytics (the catalogue's report,
 * "products.read"), for the default catalogue; /catalogues/{catalogue}/events and …/analytics for
 * each (`prefix`). The catalogue is the one the auth macro resolved (404 for one the credential
 * cannot see); an event counts only for a search of its own catalogue, so a credential of one
 * catalogue can neither read another's figures nor change them. Events are kept behind the answer: 202.
 */
export function analyticsRoutes({ prefix, analytics, maxBodyBytes, auth, rateLimits }: AnalyticsRoutesDeps) {
  const tags = ["analytics"];
  const invalidEvent = (input: { searchId: string; productId: number; type: string }) =>
    messageOf(() => analytics.event({ ...input, catalogue: "default" }));
  const params = catalogueParams(prefix);
  return new Elysia({
    name: pluginName("analytics", prefix),
    prefix: prefix === "/products" ? "" : "/catalogues/:catalogue",
  })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .post(
      "/events",
      ({ body, set, catalogue }) => {
        analytics.event({ catalogue, searchId: body.search_id, productId: body.product_id, type: body.type });
        // A Response, sent as it is: Elysia would write "Accepted" as the body of status(202).
        set.status = 202;
        return new Response(null, { status: 202 }) as never;
      },
      {
        auth: "search",
        rateLimit: "search",
        parse: jsonBody(maxBodyBytes),
        params,
        body: EventBody,
        response: {
          202: t.Void({
            description:
              "Anotado (se guarda en segundo plano); la respuesta no tiene cuerpo. Un evento de una búsqueda que no " +
              "es de este catálogo (o que ya no se guarda) no cuenta en ningún informe.",
          }),
          400: answers.unreadable(["json"]),
          404: catalogueNotFound(),
          415: answers.unsupportedMediaType(mediaTypesOf(["json"])),
          422: problem({
            description: "El cuerpo no cumple el esquema: `detail` nombra el primer campo que falla.",
            examples: {
              "Falta el tipo": fieldDetail.missing("type"),
              "Tipo desconocido": fieldDetail.invalid("type", { enum: SEARCH_EVENT_TYPES }),
              "search_id que no es de una búsqueda": invalidEvent({ searchId: "abc", productId: 1, type: "click" }),
            },
          }),
        },
        detail: {
          tags,
          summary: "Anotar un clic o una compra en un resultado de búsqueda",
          description:
            "Con el search_id de la respuesta de búsqueda (JSON, o los eventos results y done del flujo) y el " +
            "id del producto. Alimenta GET /analytics: la tasa de clics por consulta dice qué búsquedas dan " +
            "resultados que nadie abre. No se guarda nada de quien compra: solo lo que llega en el cuerpo.",
        },
      },
    )
    .get("/analytics", async ({ query, catalogue }) => reportView(await analytics.report(catalogue, query.days ?? 7)), {
      auth: "products.read",
      params,
      query: DaysQuery,
      response: {
        200: documented(ReportSchema, "Las cifras del periodo", {
          days: 7,
          since: "2026-11-18T12:00:00.000Z",
          searches: 1200,
          no_result_searches: 36,
          clicked_searches: 610,
          click_through_rate: 0.508,
          clicks: 790,
          conversions: 95,
          top_queries: [FIGURES_EXAMPLE],
          no_result_queries: [
            {
              ...FIGURES_EXAMPLE,
              query: "patinete electrico",
              no_results: 12,
              searches: 12,
              clicked_searches: 0,
              click_through_rate: 0,
              clicks: 0,
              conversions: 0,
            },
          ],
        }),
        404: catalogueNotFound(),
        422: problem({
          description: "Un parámetro no es válido: `detail` lo nombra.",
          examples: {
            "days fuera de rango": "El parámetro 'days' debe ser un entero entre 1 y 90",
            "Parámetro desconocido": fieldDetail.notAllowed("from"),
          },
        }),
        503: answers.unavailable("La base de datos no responde.", UNAVAILABLE.database),
      },
      detail: {
        tags,
        summary: "Analítica de búsquedas: las más buscadas, las que no encuentran nada y su tasa de clics",
        description:
          "Las consultas de los últimos `days` días del catálogo: cuántas veces se buscaron, cuántas no " +
          "encontraron ningún producto, y cuántas de esas búsquedas tuvieron un clic (POST /events). Las " +
          "búsquedas que fallan a la tienda son las de no_result_queries (falta el producto, o un sinónimo) y " +
          "las de top_queries con una tasa de clics baja (encuentran algo, pero no lo que se buscaba).",
      },
    });
}

function figuresView(figures: QueryFigures) {
  return {
    query: figures.query,
    searches: figures.searches,
    no_results: figures.noResults,
    clicked_searches: figures.clickedSearches,
    click_through_rate: rateOf(figures.clickedSearches, figures.searches),
    clicks: figures.clicks,
    conversions: figures.conversions,
  };
}

function reportView(report: SearchAnalyticsReport) {
  return {
    days: report.days,
    since: report.since.toISOString(),
    searches: report.searches,
    no_result_searches: report.noResultSearches,
    clicked_searches: report.clickedSearches,
    click_through_rate: rateOf(report.clickedSearches, report.searches),
    clicks: report.clicks,
    conversions: report.conversions,
    top_queries: report.topQueries.map(figuresView),
    no_result_queries: report.noResultQueries.map(figuresView),
  };
}

/** `part` over `whole` to three decimals; 0 when there is no whole. */
function rateOf(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((part / whole) * 1000) / 1000;
}
