/**
 * The search's request and answers as the OpenAPI document shows them: the body (with this
 * service's ranking defaults), the JSON answer, the event stream and the error answers.
 */
import { t } from "elysia";
import { EmbeddingUnavailable, GenerationUnavailable } from "../../../domain/errors.ts";
import { SEARCH_MODES } from "../../../domain/hybrid-ranking.ts";
import type { ScoredProduct } from "../../../domain/product.ts";
import {
  checkSearchRequest,
  QUERY_MAX_LENGTH,
  SEARCH_LIMIT,
  type SearchDefaults,
  type SearchEvent,
} from "../../../domain/search-and-recommend.ts";
import { mediaTypesOf } from "../core/body.ts";
import { type FieldSchema, fieldDetail } from "../core/errors.ts";
import { answers, documented, messageOf, problem, UNAVAILABLE } from "../core/route-docs.ts";
import {
  categoryFilter,
  integer,
  PRODUCT_EXAMPLE,
  productFields,
  productIdField,
  productView,
} from "../products/product-schemas.ts";
import { HEARTBEAT_MS, searchFrame } from "./event-stream.ts";

const searchLimitField = integer({
  minimum: SEARCH_LIMIT.min,
  maximum: SEARCH_LIMIT.max,
  default: SEARCH_LIMIT.default,
  description: `Cuántos productos devolver como máximo: un entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`,
});

const SEARCH_QUERY_EXAMPLE = "algo para correr por el monte cuando llueve";

/**
 * The search's body. `defaults`: how this service ranks when the request does not say; Elysia
 * fills a missing `mode` with the schema's default, so that default must be the service's own.
 */
export function searchBody(defaults: SearchDefaults) {
  return t.Object(
    {
      query: t.String({
        maxLength: QUERY_MAX_LENGTH,
        description:
          "Lo que se busca, en lenguaje natural; no hace falta que contenga palabras del nombre o la descripción " +
          "del producto",
      }),
      limit: t.Optional(searchLimitField),
      category: categoryFilter,
      mode: t.Optional(
        t.UnionEnum([...SEARCH_MODES], {
          default: defaults.mode,
          description:
            "Cómo se ordenan los productos. semantic: por la similitud coseno del embedding; hybrid: por una " +
            "combinación de esa similitud y la coincidencia de palabras en nombre, categoría y descripción. " +
            `En este servicio, por defecto ${defaults.mode}.`,
        }),
      ),
      alpha: t.Optional(
        t.Number({
          minimum: 0,
          maximum: 1,
          description:
            "Solo con mode hybrid: peso de la similitud semántica frente a la coincidencia de palabras, de 0 " +
            `(solo palabras) a 1 (solo semántica). En este servicio, por defecto ${defaults.alpha}.`,
        }),
      ),
    },
    {
      additionalProperties: false,
      description:
        "La consulta en lenguaje natural y, si se quiere, cuántos resultados, de qué categorías y cómo se " +
        "ordenan (mode, alpha)",
      examples: [
        { query: SEARCH_QUERY_EXAMPLE, limit: 5 },
        { query: SEARCH_QUERY_EXAMPLE, limit: 10, category: ["calzado deportivo"], mode: "hybrid", alpha: 0.75 },
      ],
    },
  );
}

const SearchResponse = t.Object({
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
    }),
    { description: "Los productos encontrados, el más parecido primero (como mucho limit)" },
  ),
});

/** A found product as clients receive it (snake_case, fused_score only in hybrid searches). */
export function scoredView(hit: ScoredProduct) {
  return {
    ...productView(hit),
    score: hit.score,
    ...(hit.fusedScore === undefined ? {} : { fused_score: hit.fusedScore }),
  };
}

/** A search's `results` event as clients receive it (the same fields as the JSON answer). */
export function resultsView({ query, results }: SearchEvent & { type: "results" }) {
  return { query, results: results.map(scoredView) };
}

/** The example recommendation, in the pieces a model might write it in (without the label). */
const RECOMMENDATION_EXAMPLE = [
  "Para correr por montaña con lluvia, ",
  `las Zapatillas de trail Vento [#${PRODUCT_EXAMPLE.id}] `,
  "son impermeables y agarran bien en barro.",
];

/** The event-stream answer of a search, for the OpenAPI document. */
const SEARCH_EVENTS =
  "Eventos enviados por el servidor, cada uno `event: <nombre>` y `data: <JSON>`, en este orden:\n\n" +
  "- `results`, una vez, en cuanto se encuentran los productos: `{query, results}`, como en la respuesta JSON.\n" +
  "- `delta`, varias veces: `{text}`, el siguiente trozo de la recomendación según la escribe el modelo (sin la " +
  "etiqueta del proveedor).\n" +
  "- `reset`: `{}`; el proveedor que escribía falló: se descarta el texto recibido y el siguiente proveedor lo " +
  "escribe desde el principio con nuevos delta.\n" +
  "- `done`, al final: `{recommendation, cited_ids, provider, model, position}`: la recomendación entera, con su " +
  "etiqueta, igual que en la respuesta JSON; los productos que cita; quién la escribió y su lugar en la cadena de " +
  "proveedores (0: el primero). provider, model y position son null si no se encontró ningún producto.\n\n" +
  "Si algo falla después de results, el flujo termina con `error`: `{detail, status}`, el mensaje y el estado " +
  "HTTP que habría tenido la respuesta (p. ej. 503). " +
  `Cada ${HEARTBEAT_MS / 1000} s sin eventos llega un comentario \`: heartbeat\`.`;

const SEARCH_EVENTS_EXAMPLE = [
  searchFrame(
    { type: "results", query: SEARCH_QUERY_EXAMPLE, results: [{ ...PRODUCT_EXAMPLE, score: 0.83 }] },
    resultsView,
  ),
  ...RECOMMENDATION_EXAMPLE.map((text) => searchFrame({ type: "delta", text }, resultsView)),
  searchFrame(
    {
      type: "done",
      recommendation: `[OPENAI - gpt-4o-mini] ${RECOMMENDATION_EXAMPLE.join("")}`,
      citedIds: [PRODUCT_EXAMPLE.id],
      writer: { provider: "OPENAI", model: "gpt-4o-mini", position: 0 },
    },
    resultsView,
  ),
].join("");

/** The search's answers besides 401 (the auth macro documents it when the search needs a token). */
export function searchAnswers(defaults: SearchDefaults) {
  const { properties } = searchBody(defaults);
  const refusal = (request: Parameters<typeof checkSearchRequest>[0]) =>
    messageOf(() => checkSearchRequest(request, defaults));
  return {
    200: documented(
      SearchResponse,
      "Los productos más parecidos a la consulta y la recomendación (con Accept: text/event-stream, como eventos)",
      {
        query: SEARCH_QUERY_EXAMPLE,
        recommendation: `[OPENAI - gpt-4o-mini] ${RECOMMENDATION_EXAMPLE.join("")}`,
        cited_ids: [PRODUCT_EXAMPLE.id],
        results: [{ ...PRODUCT_EXAMPLE, score: 0.83 }],
      },
      { "text/event-stream": { description: SEARCH_EVENTS, example: SEARCH_EVENTS_EXAMPLE } },
    ),
    400: answers.unreadable(["json"]),
    415: answers.unsupportedMediaType(mediaTypesOf(["json"])),
    422: problem({
      description:
        "El cuerpo no cumple el esquema o las reglas de la búsqueda: `detail` nombra el primer campo que falla.",
      examples: {
        "Falta la consulta": fieldDetail.missing("query"),
        "Consulta vacía": refusal({ query: " " }),
        "limit fuera de rango": fieldDetail.invalid("limit", searchLimitField),
        "Categoría vacía": refusal({ query: SEARCH_QUERY_EXAMPLE, category: "" }),
        "Demasiadas categorías": fieldDetail.invalid("category", properties.category as FieldSchema),
        "mode no válido": fieldDetail.invalid("mode", properties.mode),
        "alpha fuera de rango": fieldDetail.invalid("alpha", properties.alpha),
        "alpha sin mode hybrid": refusal({ query: SEARCH_QUERY_EXAMPLE, mode: "semantic", alpha: 0.5 }),
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
