/**
 * The search's request and answers as the OpenAPI document shows them: the body (with this
 * service's ranking defaults), the JSON answer, the event stream and the error answers.
 */
import { t } from "elysia";
import { BROWSE_LIMITS, RESULT_WINDOW } from "../../../domain/browse-results.ts";
import { EmbeddingUnavailable, GenerationUnavailable } from "../../../domain/errors.ts";
import { SEARCH_MODES } from "../../../domain/hybrid-ranking.ts";
import type { ScoredProduct } from "../../../domain/product.ts";
import {
  type BrowsedSummary,
  checkSearchRequest,
  QUERY_MAX_LENGTH,
  SEARCH_LIMIT,
  type SearchDefaults,
  type SearchEvent,
} from "../../../domain/search-and-recommend.ts";
import { catalogueNotFound } from "../catalogues/catalogue-scope.ts";
import { mediaTypesOf } from "../core/body.ts";
import { type FieldSchema, fieldDetail } from "../core/errors.ts";
import { answers, documented, messageOf, problem, readAfterParameter, UNAVAILABLE } from "../core/route-docs.ts";
import {
  categoryFilter,
  categoryQuery,
  FILTER_EXAMPLE,
  filterBody,
  filterQuery,
  integer,
  PRODUCT_EXAMPLE,
  productFields,
  productIdField,
  productView,
} from "../products/product-schemas.ts";
import { eventIds, FAILURE_EVENT, HEARTBEAT_MS, RECONNECT_MS, searchFrame } from "./event-stream.ts";

const searchLimitField = integer({
  minimum: SEARCH_LIMIT.min,
  maximum: SEARCH_LIMIT.max,
  default: SEARCH_LIMIT.default,
  description: `Cuántos productos devolver como máximo: un entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`,
});

const SEARCH_QUERY_EXAMPLE = "algo para correr por el monte cuando llueve";

const QUERY_DESCRIPTION =
  "Lo que se busca, en lenguaje natural; no hace falta que contenga palabras del nombre o la descripción del " +
  "producto";

const modeDescription = (defaults: SearchDefaults) =>
  "Cómo se ordenan los productos. semantic: por la similitud coseno del embedding; hybrid: por una combinación de " +
  "esa similitud y la coincidencia de palabras en nombre, categoría y descripción (con los sinónimos del catálogo, " +
  "otras traducciones de las palabras y tolerancia a erratas), que además favorece las categorías que dominan entre " +
  "los productos más parecidos; lexical: por la coincidencia de palabras (la similitud solo ordena lo que las " +
  `palabras no distinguen). En este servicio, por defecto ${defaults.mode}.`;

const alphaDescription = (defaults: SearchDefaults) =>
  "Solo con mode hybrid: peso de la similitud semántica frente a la coincidencia de palabras, de 0 (solo palabras) " +
  `a 1 (solo semántica). En este servicio, por defecto ${defaults.alpha}.`;

/** What the search's description says of its two forms and of its event stream. */
export const SEARCH_DESCRIPTION =
  "Convierte la consulta en un embedding, ordena los productos por similitud coseno con él (o, con mode hybrid, " +
  "combinada con la coincidencia de palabras), se queda con los limit primeros (de las categorías pedidas, si se " +
  "piden) y un modelo de lenguaje escribe una recomendación basada solo en ellos; si el primer proveedor falla, la " +
  "escribe el siguiente.\n\n" +
  "Con `Accept: text/event-stream` la respuesta llega como eventos, según se escribe: results, delta, reset, done " +
  `y, si algo falla a mitad, ${FAILURE_EVENT} (ver la respuesta 200). Un error antes de los resultados responde ` +
  'igual que sin eventos: su estado y `{"detail"}` en JSON. Una reconexión con el Last-Event-ID del último evento ' +
  "de un flujo (done o failure) recibe 204: la búsqueda ya terminó.";
const HIGHLIGHT_DESCRIPTION =
  "true: cada resultado lleva highlights: {name, description} con las palabras de la consulta (y de su traducción " +
  "y sinónimos) marcadas con <mark>, escapado el resto como HTML; la descripción, recortada a 200 caracteres en " +
  "torno a la primera coincidencia.";
const OFFSET_DESCRIPTION =
  `Resultados que se saltan (paginación; offset + limit ≤ ${RESULT_WINDOW}). Con offset, sort o facets la respuesta ` +
  `es una página de los resultados relevantes (de los ${RESULT_WINDOW} mejores, los que puntúan al menos una parte ` +
  "de la puntuación del mejor, RELEVANT_RESULTS_MIN_SHARE: 0.7 por defecto) e incluye total y total_relation.";
const SORT_DESCRIPTION =
  `Orden de los resultados relevantes por atributos (o category), hasta ${BROWSE_LIMITS.sortKeys}: ` +
  '[{"price": "asc"}]; los que no tienen el atributo van al final; a igualdad, el más relevante primero, y luego el id.';
const FACETS_DESCRIPTION =
  "Atributos (o category) de los que contar valores sobre los resultados relevantes: los textos, sus " +
  `${BROWSE_LIMITS.facetValues} valores más frecuentes; los números, mínimo, máximo y ${BROWSE_LIMITS.buckets} tramos.`;

/**
 * The search's body. `defaults`: how this service ranks when the request does not say; Elysia
 * fills a missing `mode` with the schema's default, so that default must be the service's own.
 */
export function searchBody(defaults: SearchDefaults) {
  return t.Object(
    {
      query: t.String({ maxLength: QUERY_MAX_LENGTH, description: QUERY_DESCRIPTION }),
      limit: t.Optional(searchLimitField),
      category: categoryFilter,
      filter: filterBody,
      offset: t.Optional(integer({ minimum: 0, maximum: RESULT_WINDOW - 1, description: OFFSET_DESCRIPTION })),
      sort: t.Optional(
        t.Array(t.Record(t.String(), t.UnionEnum(["asc", "desc"])), {
          maxItems: BROWSE_LIMITS.sortKeys,
          description: SORT_DESCRIPTION,
          examples: [[{ price: "asc" }]],
        }),
      ),
      facets: t.Optional(
        t.Array(t.String(), {
          maxItems: BROWSE_LIMITS.facets,
          description: FACETS_DESCRIPTION,
          examples: [["brand", "price"]],
        }),
      ),
      highlight: t.Optional(t.Boolean({ description: HIGHLIGHT_DESCRIPTION })),
      mode: t.Optional(
        t.UnionEnum([...SEARCH_MODES], { default: defaults.mode, description: modeDescription(defaults) }),
      ),
      alpha: t.Optional(t.Number({ minimum: 0, maximum: 1, description: alphaDescription(defaults) })),
    },
    {
      additionalProperties: false,
      description:
        "La consulta en lenguaje natural y, si se quiere, cuántos resultados, de qué categorías y cómo se " +
        "ordenan (mode, alpha)",
      examples: [
        { query: SEARCH_QUERY_EXAMPLE, limit: 5 },
        { query: SEARCH_QUERY_EXAMPLE, limit: 10, category: ["calzado deportivo"], mode: "hybrid", alpha: 0.75 },
        { query: SEARCH_QUERY_EXAMPLE, limit: 10, filter: FILTER_EXAMPLE },
        { query: SEARCH_QUERY_EXAMPLE, limit: 10, offset: 10, sort: [{ price: "asc" }], facets: ["brand", "price"] },
      ],
    },
  );
}

/**
 * GET /products/search's query string: the body's fields. The numbers are t.Numeric (a query holds
 * text), titled so that a value refused while it is decoded is named in the 422 (core/errors.ts);
 * `category` repeats. A missing mode is the service's own (the use case's default).
 */
export function searchQuery(defaults: SearchDefaults) {
  return t.Object(
    {
      query: t.String({ maxLength: QUERY_MAX_LENGTH, description: QUERY_DESCRIPTION }),
      limit: t.Optional(
        t.Numeric({
          title: "limit",
          minimum: SEARCH_LIMIT.min,
          maximum: SEARCH_LIMIT.max,
          multipleOf: 1,
          description: `${searchLimitField.description} (por defecto ${SEARCH_LIMIT.default})`,
        }),
      ),
      category: categoryQuery,
      filter: filterQuery,
      offset: t.Optional(
        t.Numeric({
          title: "offset",
          minimum: 0,
          maximum: RESULT_WINDOW - 1,
          multipleOf: 1,
          description: OFFSET_DESCRIPTION,
        }),
      ),
      sort: t.Optional(t.String({ description: `${SORT_DESCRIPTION} En la URL, como JSON: [{"price":"asc"}]` })),
      facets: t.Optional(
        t.String({ description: `${FACETS_DESCRIPTION} En la URL, separados por comas: brand,price` }),
      ),
      highlight: t.Optional(t.BooleanString({ description: HIGHLIGHT_DESCRIPTION })),
      mode: t.Optional(t.UnionEnum([...SEARCH_MODES], { description: modeDescription(defaults) })),
      alpha: t.Optional(t.Numeric({ title: "alpha", minimum: 0, maximum: 1, description: alphaDescription(defaults) })),
    },
    { additionalProperties: false },
  );
}

/** The headers the search reads besides Authorization (documented as the search's parameters). */
export const SearchHeaders = t.Object({
  accept: t.Optional(
    t.String({
      description: "`text/event-stream` pide la respuesta como eventos enviados por el servidor; si no, JSON.",
      examples: ["text/event-stream"],
    }),
  ),
  "last-event-id": t.Optional(
    t.String({
      description:
        "El id del último evento recibido, al reconectar (EventSource lo envía solo). El de un último evento " +
        "(acaba en `:end`) recibe 204; cualquier otro repite la búsqueda desde el principio.",
      examples: ["4f1c2e9a-7b3d-4c8e-9f0a-1b2c3d4e5f60:end"],
    }),
  ),
  "x-read-after": readAfterParameter,
});

/** The search id's field, in the JSON answer and in the stream's results and done events. */
const searchIdField = t.String({
  format: "uuid",
  description:
    "Identifica esta búsqueda: envíelo en POST /events con los clics y compras de sus resultados (analítica)",
});

/** The fields a browsing search (offset, sort or facets) adds to its answer and its results event. */
const browsedFields = {
  total: t.Optional(
    integer({
      description: `Solo si se pidió offset, sort o facets: cuántos resultados relevantes hay (los ${RESULT_WINDOW} mejores como mucho)`,
    }),
  ),
  total_relation: t.Optional(
    t.UnionEnum(["eq", "gte"], {
      description: `eq: total es exacto; gte: se llegó a ${RESULT_WINDOW} y puede haber más`,
    }),
  ),
  facets: t.Optional(
    t.Record(
      t.String(),
      t.Union([
        t.Array(t.Object({ value: t.Union([t.String(), t.Number(), t.Boolean()]), count: integer() }), {
          description: `Atributo de textos: sus ${BROWSE_LIMITS.facetValues} valores más frecuentes, con cuántos resultados relevantes lo tienen`,
        }),
        t.Object(
          {
            min: t.Number(),
            max: t.Number(),
            buckets: t.Array(t.Object({ from: t.Number(), to: t.Number(), count: integer() })),
          },
          {
            description: `Atributo numérico: mínimo, máximo y ${BROWSE_LIMITS.buckets} tramos iguales (el último incluye max)`,
          },
        ),
      ]),
      { description: "Solo si se pidió facets: los recuentos de cada atributo pedido sobre los resultados relevantes" },
    ),
  ),
};

/** The browsing fields of an answer, when the search browsed. */
export function browsedView(browsed: BrowsedSummary | undefined) {
  if (!browsed) return {};
  return {
    total: browsed.total.value,
    total_relation: browsed.total.relation,
    ...(browsed.facets ? { facets: browsed.facets } : {}),
  };
}

const SearchResponse = t.Object({
  ...browsedFields,
  search_id: searchIdField,
  query: t.String({ description: "La consulta, tal como se envió" }),
  recommendation: t.String({
    description:
      "La recomendación, escrita solo a partir de los productos de results. Empieza con la etiqueta " +
      "[PROVEEDOR - modelo] de quien la escribió y cita los productos como [#id].",
  }),
  cited_ids: t.Array(productIdField("Id de un producto de results"), {
    description: "Ids de los productos de results que cita la recomendación (como [#id]), en orden de aparición",
  }),
  results: t.Array(
    t.Object({
      ...productFields,
      score: t.Number({ description: "Similitud coseno con la consulta" }),
      fused_score: t.Optional(
        t.Number({ description: "Solo en búsquedas híbridas: la puntuación combinada que ordena los resultados" }),
      ),
      highlights: t.Optional(
        t.Object(
          { name: t.String(), description: t.String() },
          {
            description: "Solo con highlight: nombre y descripción (recortada) con <mark> en las palabras encontradas",
          },
        ),
      ),
    }),
    {
      description:
        "Los productos encontrados, el más parecido primero (como mucho limit); ninguno cuando nada del catálogo se " +
        "parece lo bastante a la consulta (el umbral de relevancia)",
    },
  ),
});

/** A found product as clients receive it (snake_case, fused_score only in hybrid searches). */
export function scoredView(hit: ScoredProduct) {
  return {
    ...productView(hit),
    score: hit.score,
    ...(hit.fusedScore === undefined ? {} : { fused_score: hit.fusedScore }),
    ...(hit.highlights === undefined ? {} : { highlights: hit.highlights }),
  };
}

/** A search's `results` event as clients receive it (the same fields as the JSON answer). */
export function resultsView({ searchId, query, results, browsed }: SearchEvent & { type: "results" }) {
  return { search_id: searchId, query, results: results.map(scoredView), ...browsedView(browsed) };
}

/** The example recommendation, in the pieces a model might write it in (without the label). */
const RECOMMENDATION_EXAMPLE = [
  "Para correr por montaña con lluvia, ",
  `las Zapatillas de trail Vento [#${PRODUCT_EXAMPLE.id}] `,
  "son impermeables y agarran bien en barro.",
];

/** The example search's id (time-ordered: UUID version 7, as the service makes them). */
export const SEARCH_ID_EXAMPLE = "019ac3d1-5e3a-7b4c-9d1e-2f3a4b5c6d7e";

/** The example stream's id (a request id). */
const STREAM_ID_EXAMPLE = "4f1c2e9a-7b3d-4c8e-9f0a-1b2c3d4e5f60";

/** The event-stream answer of a search, for the OpenAPI document. */
const SEARCH_EVENTS =
  `El flujo empieza con \`retry: ${RECONNECT_MS}\` (milisegundos que un cliente espera antes de reconectar). ` +
  "Cada evento lleva `id: <flujo>:<n>` (el último, `id: <flujo>:end`; <flujo> es el X-Request-Id de la " +
  "respuesta), `event: <nombre>` y `data: <JSON>`, en este orden:\n\n" +
  "- `results`, una vez, en cuanto se encuentran los productos: `{search_id, query, results}`, como en la respuesta " +
  "JSON.\n" +
  "- `delta`, varias veces: `{text}`, el siguiente trozo de la recomendación según la escribe el modelo (sin la " +
  "etiqueta del proveedor).\n" +
  "- `reset`: `{}`; el proveedor que escribía falló: se descarta el texto recibido y el siguiente proveedor lo " +
  "escribe desde el principio con nuevos delta.\n" +
  "- `done`, al final: `{search_id, recommendation, cited_ids, provider, model, position}`: la recomendación entera, con su " +
  "etiqueta, igual que en la respuesta JSON; los productos que cita; quién la escribió y su lugar en la cadena de " +
  "proveedores (0: el primero). provider, model y position son null si no se encontró ningún producto.\n\n" +
  `Si algo falla después de results, el flujo termina con \`${FAILURE_EVENT}\`: \`{detail, status}\`, el mensaje y ` +
  "el estado HTTP que habría tenido la respuesta (p. ej. 503); no se llama `error` porque EventSource da ese nombre " +
  "a sus propios fallos de conexión. " +
  `Cada ${HEARTBEAT_MS / 1000} s sin eventos llega un comentario \`: heartbeat\`. Tras done o ${FAILURE_EVENT} el ` +
  "servidor cierra el flujo; EventSource reconecta con `Last-Event-ID: <flujo>:end` y recibe 204, que lo detiene.";

const exampleIds = eventIds(STREAM_ID_EXAMPLE);
const SEARCH_EVENTS_EXAMPLE = [
  `retry: ${RECONNECT_MS}\n\n`,
  searchFrame(
    {
      type: "results",
      searchId: SEARCH_ID_EXAMPLE,
      query: SEARCH_QUERY_EXAMPLE,
      results: [{ ...PRODUCT_EXAMPLE, score: 0.83 }],
    },
    resultsView,
    exampleIds,
  ),
  ...RECOMMENDATION_EXAMPLE.map((text) => searchFrame({ type: "delta", text }, resultsView, exampleIds)),
  searchFrame(
    {
      type: "done",
      searchId: SEARCH_ID_EXAMPLE,
      recommendation: `[OPENAI - gpt-4o-mini] ${RECOMMENDATION_EXAMPLE.join("")}`,
      citedIds: [PRODUCT_EXAMPLE.id],
      writer: { provider: "OPENAI", model: "gpt-4o-mini", position: 0 },
    },
    resultsView,
    exampleIds,
  ),
].join("");

/** What POST /products/search answers about its body besides the 422. */
export const BODY_ANSWERS = {
  400: answers.unreadable(["json"]),
  415: answers.unsupportedMediaType(mediaTypesOf(["json"])),
};

/**
 * The search's answers besides 401 (the auth macro documents it when the search needs a token), as
 * POST takes its fields (`body`; BODY_ANSWERS too) or GET (`query`).
 */
export function searchAnswers(defaults: SearchDefaults, from: "body" | "query" = "body") {
  const { properties } = searchBody(defaults);
  const refusal = (request: Parameters<typeof checkSearchRequest>[0]) =>
    messageOf(() => checkSearchRequest(request, defaults));
  const fields = from === "body" ? "El cuerpo no cumple" : "Los parámetros de la URL no cumplen";
  return {
    200: documented(
      SearchResponse,
      "Los productos más parecidos a la consulta y la recomendación (con Accept: text/event-stream, como eventos)",
      {
        search_id: SEARCH_ID_EXAMPLE,
        query: SEARCH_QUERY_EXAMPLE,
        recommendation: `[OPENAI - gpt-4o-mini] ${RECOMMENDATION_EXAMPLE.join("")}`,
        cited_ids: [PRODUCT_EXAMPLE.id],
        results: [{ ...PRODUCT_EXAMPLE, score: 0.83 }],
      },
      { "text/event-stream": { description: SEARCH_EVENTS, example: SEARCH_EVENTS_EXAMPLE } },
    ),
    204: t.Void({
      description:
        "Con `Accept: text/event-stream` y el Last-Event-ID del último evento de un flujo (`<flujo>:end`): esa " +
        "búsqueda ya terminó y no hay nada más que enviar (EventSource deja de reconectar). No cuenta en el cupo.",
    }),
    404: catalogueNotFound("Nunca devuelve productos de otro catálogo."),
    422: problem({
      description: `${fields} el esquema o las reglas de la búsqueda: \`detail\` nombra el primer campo que falla.`,
      examples: {
        "Falta la consulta": fieldDetail.missing("query"),
        "Consulta vacía": refusal({ query: " " }),
        "limit fuera de rango": fieldDetail.invalid("limit", searchLimitField),
        "Categoría vacía": refusal({ query: SEARCH_QUERY_EXAMPLE, category: "" }),
        "Categoría demasiado larga": refusal({ query: SEARCH_QUERY_EXAMPLE, category: "x".repeat(101) }),
        "Demasiadas categorías": fieldDetail.invalid("category", properties.category as FieldSchema),
        "mode no válido": fieldDetail.invalid("mode", properties.mode),
        "alpha fuera de rango": fieldDetail.invalid("alpha", properties.alpha),
        "alpha sin mode hybrid": refusal({ query: SEARCH_QUERY_EXAMPLE, mode: "semantic", alpha: 0.5 }),
        "Filtro no válido": refusal({ query: SEARCH_QUERY_EXAMPLE, filter: { price: { gte: "10" } } }),
        "Atributo no válido en el filtro": refusal({ query: SEARCH_QUERY_EXAMPLE, filter: { Marca: "Acme" } }),
        "offset + limit demasiado grande": refusal({ query: SEARCH_QUERY_EXAMPLE, limit: 10, offset: 995 }),
        "sort no válido": refusal({ query: SEARCH_QUERY_EXAMPLE, sort: [{ price: "up" }] }),
        "facets no válido": refusal({ query: SEARCH_QUERY_EXAMPLE, facets: ["Marca"] }),
        ...(from === "query" ? { "Parámetro desconocido": fieldDetail.notAllowed("top_k") } : {}),
      },
    }),
    503: answers.unavailable(
      "No se pudo buscar: la base de datos o el servicio de embeddings no responden, ningún proveedor pudo escribir " +
        "la recomendación (cuando se exige un proveedor remoto), o la petición agotó su tiempo.",
      {
        ...UNAVAILABLE.database,
        "Embeddings no disponibles": new EmbeddingUnavailable(),
        "Sin recomendación": new GenerationUnavailable(),
        ...UNAVAILABLE.deadline,
      },
    ),
  };
}
