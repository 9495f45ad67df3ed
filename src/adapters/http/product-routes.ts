import { Elysia, t } from "elysia";
import { type Authenticate, TOKEN_REFUSALS } from "../../domain/authenticate.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import {
  ConcurrentModification,
  EmbeddingUnavailable,
  GenerationUnavailable,
  IdempotencyKeyReused,
  NotAuthenticated,
  ProductNotFound,
  SkuTaken,
} from "../../domain/errors.ts";
import { SEARCH_MODES } from "../../domain/hybrid-ranking.ts";
import type { ImportProducts } from "../../domain/import-products.ts";
import {
  INVALID_CURSOR,
  LIST_LIMIT,
  LIST_ORDERS,
  MAX_CATEGORIES,
  type ManageProducts,
  normalizeCategories,
} from "../../domain/manage-products.ts";
import { checkedField, PRODUCT_FIELD_MAX_LENGTH, type Product, type ScoredProduct } from "../../domain/product.ts";
import {
  checkSearchRequest,
  QUERY_MAX_LENGTH,
  SEARCH_LIMIT,
  type SearchAndRecommend,
  type SearchDefaults,
  type SearchEvent,
} from "../../domain/search-and-recommend.ts";
import { MALFORMED_ARRAY } from "../../lib/json/json-items.ts";
import { mediaTypesOf, readBody } from "./body.ts";
import { BULK_MEDIA_TYPES, type BulkLimits, noItems, readBulkItems, tooManyItems } from "./bulk-body.ts";
import { type FieldSchema, fieldDetail, HttpProblem, NOT_AN_OBJECT, payloadTooLarge } from "./errors.ts";
import { HEARTBEAT_MS, searchEventStream, searchFrame, wantsEventStream } from "./event-stream.ts";
import { answers, documented, messageOf, problem, SECURITY, UNAVAILABLE } from "./openapi.ts";
import { contextOf } from "./request-context.ts";

/** Elysia's t.Integer also takes numeric strings ("5"); a number that is a multiple of 1 does not. */
function integer(options: Parameters<typeof t.Number>[0] = {}) {
  return t.Number({ multipleOf: 1, ...options });
}

/** What each field of a product is, in the OpenAPI document. */
const FIELD_DESCRIPTIONS = {
  name: "Nombre del producto",
  description: "Descripción detallada; con el nombre, es el texto del que se calcula el embedding",
  category: "Categoría, texto libre (GET /products/categories da las que hay)",
} as const;

const field = (name: keyof typeof FIELD_DESCRIPTIONS, description: string = FIELD_DESCRIPTIONS[name]) =>
  t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH[name], description });
const skuField = t.String({
  maxLength: PRODUCT_FIELD_MAX_LENGTH.sku,
  description: "Clave propia del comercio; única cuando se da",
});
const productIdField = (description = "Identificador del producto, asignado por el servicio") =>
  integer({ description });

/** A product as a client sends it: the example of the OpenAPI document. */
const NEW_PRODUCT_EXAMPLE = {
  name: "Zapatillas de trail Vento",
  description: "Zapatillas ligeras e impermeables con suela de tacos para correr por montaña",
  category: "calzado deportivo",
  sku: "VEN-TRAIL-42",
};

const NewProductBody = t.Object(
  {
    name: field("name"),
    description: field("description"),
    category: field("category"),
    sku: t.Optional(t.Union([skuField, t.Null()])),
  },
  {
    additionalProperties: false,
    description: "El producto: nombre, descripción y categoría (el embedding lo calcula el servicio)",
    examples: [NEW_PRODUCT_EXAMPLE],
  },
);

const ProductChangesBody = t.Object(
  {
    name: t.Optional(field("name")),
    description: t.Optional(field("description")),
    category: t.Optional(field("category")),
    sku: t.Optional(t.Union([skuField, t.Null()], { description: "null quita el SKU" })),
  },
  { additionalProperties: false, minProperties: 1, description: "Los campos que cambian (al menos uno)" },
);

const categoryFilter = t.Optional(
  t.Union(
    [
      field("category", "Una categoría"),
      t.Array(field("category", "Una de las categorías"), { minItems: 1, maxItems: MAX_CATEGORIES }),
    ],
    { description: `Una categoría, o una lista de hasta ${MAX_CATEGORIES}: solo productos de esas categorías` },
  ),
);

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
function searchBody(defaults: SearchDefaults) {
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

const ListQuery = t.Object(
  {
    limit: t.Optional(
      t.Numeric({
        minimum: LIST_LIMIT.min,
        maximum: LIST_LIMIT.max,
        multipleOf: 1,
        description: `Productos por página, de ${LIST_LIMIT.min} a ${LIST_LIMIT.max} (por defecto ${LIST_LIMIT.default})`,
      }),
    ),
    cursor: t.Optional(t.String({ maxLength: 100, description: "El next_cursor de la página anterior" })),
    order: t.Optional(
      t.UnionEnum([...LIST_ORDERS], {
        description: "id: por id ascendente (por defecto); newest: los más recientes primero",
      }),
    ),
    category: categoryFilter,
  },
  { additionalProperties: false },
);

/** A product as the service answers it (never its embedding). */
const productFields = {
  id: productIdField(),
  name: t.String({ description: FIELD_DESCRIPTIONS.name }),
  description: t.String({ description: FIELD_DESCRIPTIONS.description }),
  category: t.String({ description: FIELD_DESCRIPTIONS.category }),
  sku: t.Optional(t.String({ description: "Clave propia del comercio; solo si el producto tiene una" })),
};

const ProductResponse = t.Object(productFields);

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

const ListResponse = t.Object({
  items: t.Array(ProductResponse, { description: "Los productos de esta página, en el orden pedido" }),
  total: integer({ description: "Productos que cumplen el filtro, en todas las páginas" }),
  next_cursor: t.Union([t.String(), t.Null()], { description: "Para la página siguiente; null en la última" }),
});

const ImportResponse = t.Object({
  items: t.Array(
    t.Object({
      index: integer({ description: "Posición del producto en el cuerpo, desde 0" }),
      status: t.UnionEnum(["created", "updated", "unchanged", "failed"], {
        // UnionEnum's own default (the first value) means nothing in an answer.
        default: undefined,
        description:
          "created: producto nuevo; updated: el del mismo sku, cambiado; unchanged: el del mismo sku, ya igual; " +
          "failed: no se guardó (detail dice por qué)",
      }),
      id: t.Optional(productIdField("El id del producto guardado (salvo failed)")),
      sku: t.Optional(t.String({ description: "El sku del producto, si lo tiene" })),
      detail: t.Optional(t.String({ description: "Solo en failed: por qué no se guardó" })),
    }),
    { description: "Un resultado por producto enviado, en el mismo orden" },
  ),
  counts: t.Object(
    {
      created: integer({ description: "Productos creados" }),
      updated: integer({ description: "Productos actualizados" }),
      unchanged: integer({ description: "Productos que ya estaban igual" }),
      failed: integer({ description: "Productos que no se guardaron" }),
    },
    { description: "Cuántos productos acabaron en cada estado" },
  ),
});

/** An item of a bulk import, for the OpenAPI document (ImportProducts checks each one). */
const BulkItem = t.Object({
  name: field("name"),
  description: field("description"),
  category: field("category"),
  sku: t.Optional(t.Union([skuField, t.Null()])),
});

/** A stored product: the example of the OpenAPI document. */
const PRODUCT_EXAMPLE = { id: 42, ...NEW_PRODUCT_EXAMPLE };

const MALFORMED_AUTHORIZATION = "El encabezado Authorization debe tener la forma 'Bearer <token>'";

const malformedIdempotencyKey = () =>
  new HttpProblem(400, "La cabecera Idempotency-Key debe tener entre 1 y 255 caracteres ASCII visibles");

/** The error answers of these routes, documented with the messages they send (see openapi.ts). */
const ANSWERS = {
  unreadable: answers.unreadable(["json"]),
  unreadableCreate: answers.unreadable(["json"], { "Idempotency-Key mal formada": malformedIdempotencyKey() }),
  unauthenticated: problem({
    description: "Falta el token, no es válido, ha caducado o su usuario ya no puede usarlo: inicie sesión de nuevo.",
    examples: {
      "Sin token": TOKEN_REFUSALS.missing,
      "Token no válido o caducado": TOKEN_REFUSALS.invalid,
      "Contraseña cambiada": TOKEN_REFUSALS.passwordChanged,
      "Usuario borrado": TOKEN_REFUSALS.userGone,
      "Cabecera mal formada": MALFORMED_AUTHORIZATION,
    },
    headers: ["WWW-Authenticate"],
  }),
  notFound: problem({
    description: "No hay ningún producto con ese id (un id que no es un entero positivo no nombra ninguno).",
    examples: { "Producto inexistente": new ProductNotFound(PRODUCT_EXAMPLE.id) },
  }),
  conflict: problem({
    description: "Otro producto ya tiene ese SKU, o el producto cambió a la vez por otra petición (puede repetirse).",
    examples: { "SKU repetido": new SkuTaken(PRODUCT_EXAMPLE.sku), "Cambio simultáneo": new ConcurrentModification() },
  }),
  notJson: answers.unsupportedMediaType(mediaTypesOf(["json"])),
  invalidProduct: (more: Record<string, string | Error> = {}) =>
    problem({
      description:
        "El cuerpo no cumple el esquema o las reglas del producto: `detail` nombra el primer campo que falla.",
      examples: {
        "Campo demasiado largo": fieldDetail.invalid("name", NewProductBody.properties.name),
        "Campo vacío": messageOf(() => checkedField("name", " ")),
        "Embedding enviado": fieldDetail.notAllowed("embedding"),
        ...more,
      },
    }),
  invalidSearch: (defaults: SearchDefaults) => {
    const { properties } = searchBody(defaults);
    const refusal = (request: Parameters<typeof checkSearchRequest>[0]) =>
      messageOf(() => checkSearchRequest(request, defaults));
    return problem({
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
    });
  },
  invalidList: problem({
    description: "Un parámetro no es válido: `detail` lo nombra.",
    examples: {
      "Parámetro desconocido": fieldDetail.notAllowed("page"),
      "limit no numérico": fieldDetail.invalid("limit", ListQuery.properties.limit),
      "Cursor no válido": INVALID_CURSOR,
      "Categoría vacía": messageOf(() => normalizeCategories("")),
    },
  }),
  databaseDown: answers.unavailable("La base de datos no responde.", UNAVAILABLE.database),
  writeUnavailable: answers.unavailable(
    "La base de datos o el servicio de embeddings no responden, o la petición agotó su tiempo: no se guardó nada.",
    { ...UNAVAILABLE.database, "Embeddings no disponibles": new EmbeddingUnavailable(), ...UNAVAILABLE.deadline },
  ),
  searchUnavailable: answers.unavailable(
    "No se pudo buscar: la base de datos o el servicio de embeddings no responden, ningún proveedor pudo escribir " +
      "la recomendación (cuando se exige un proveedor remoto), o la petición agotó su tiempo.",
    {
      ...UNAVAILABLE.database,
      "Embeddings no disponibles": new EmbeddingUnavailable(),
      "Sin recomendación": new GenerationUnavailable(),
      ...UNAVAILABLE.deadline,
    },
  ),
  importUnavailable: answers.unavailable(
    "La base de datos no respondió al comprobar el token, o la importación agotó su tiempo (lo guardado se queda).",
    { ...UNAVAILABLE.database, ...UNAVAILABLE.deadline },
  ),
};

export interface ProductRoutesDeps {
  authenticate: Authenticate;
  createProduct: CreateProduct;
  manageProducts: ManageProducts;
  importProducts: ImportProducts;
  search: SearchAndRecommend;
  searchRequiresAuth: boolean;
  maxBodyBytes: number;
  bulk: BulkLimits;
}

/**
 * The catalogue: POST /products/ (create) and POST /products/search as the contract has them,
 * plus GET /products (list), GET, PATCH, PUT and DELETE /products/{id}, and POST /products/bulk.
 * Every route takes the bearer token (search too, unless SEARCH_REQUIRES_AUTH=false).
 */
export function productRoutes(deps: ProductRoutesDeps) {
  const { authenticate, createProduct, manageProducts, importProducts, search, maxBodyBytes } = deps;
  // The bearer check runs in the parse stage, the first one Elysia runs per route: an anonymous
  // client gets 401 before its body is read or validated. The user is kept for the handler.
  const requireBearer = async ({ request }: { request: Request }) => {
    contextOf(request).user = await authenticate.userForToken(bearerToken(request.headers.get("authorization")));
  };
  const jsonBody = ({ request }: { request: Request }) => readBody(request, maxBodyBytes, ["json"]);
  // Our reader decides; the "json" after it never runs and only tells OpenAPI the content type.
  const authenticatedJson = [requireBearer, jsonBody, "json"] as const;
  // A route without a body checks the token in the transform stage, before its query is validated.
  const authenticatedOnly = requireBearer;
  // The bulk route reads its body itself, as a stream: parsing stops at the bearer check.
  const authenticatedStream = async (context: { request: Request }) => {
    await requireBearer(context);
    return STREAMED_BODY;
  };
  const bearer = SECURITY.token;
  const tags = ["products"];
  // 413 (a body over the limit), 429 (rate limits) and 500 can come from any route: openapi.ts documents them.
  const product = (description: string) => documented(ProductResponse, description, PRODUCT_EXAMPLE);
  const searchAnswers = {
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
    400: ANSWERS.unreadable,
    415: ANSWERS.notJson,
    422: ANSWERS.invalidSearch(search.defaults),
    503: ANSWERS.searchUnavailable,
  };
  const id = { params: t.Object({ id: t.String({ description: "El id del producto (entero positivo)" }) }) };

  return new Elysia({ prefix: "/products" })
    .post(
      "/",
      async ({ body, request, set, status }) => {
        const { user, signal } = contextOf(request);
        const key = idempotencyKey(request.headers.get("idempotency-key"));
        const { product, replayed } = await createProduct.execute(body, {
          signal,
          idempotency: key === undefined || !user ? undefined : { userId: user.id, key },
        });
        if (replayed) set.headers["Idempotent-Replayed"] = "true";
        return status(201, productView(product));
      },
      {
        parse: [...authenticatedJson],
        body: NewProductBody,
        response: {
          201: product("El producto creado, sin su embedding"),
          400: ANSWERS.unreadableCreate,
          401: ANSWERS.unauthenticated,
          409: ANSWERS.conflict,
          415: ANSWERS.notJson,
          422: ANSWERS.invalidProduct({
            "Falta un campo": fieldDetail.missing("category"),
            "Idempotency-Key con otro cuerpo": new IdempotencyKeyReused(),
          }),
          503: ANSWERS.writeUnavailable,
        },
        detail: {
          tags,
          summary: "Crear un producto (se calcula y guarda su embedding)",
          description:
            "Con la cabecera opcional Idempotency-Key (1 a 255 caracteres ASCII visibles), repetir la misma " +
            "petición durante 24 horas devuelve la primera respuesta sin crear otro producto; la misma clave " +
            "con otro cuerpo es un 422. Un SKU que ya tiene otro producto es un 409.",
          security: bearer,
        },
      },
    )
    .get(
      "/",
      async ({ query }) => {
        const page = await manageProducts.list({
          limit: query.limit,
          cursor: query.cursor,
          order: query.order,
          category: query.category,
        });
        return { items: page.items.map(productView), total: page.total, next_cursor: page.nextCursor };
      },
      {
        transform: authenticatedOnly,
        query: ListQuery,
        response: {
          200: documented(ListResponse, "Una página de productos", {
            items: [PRODUCT_EXAMPLE],
            total: 1,
            next_cursor: null,
          }),
          401: ANSWERS.unauthenticated,
          422: ANSWERS.invalidList,
          503: ANSWERS.databaseDown,
        },
        detail: {
          tags,
          summary: "Listar productos, por páginas",
          description:
            `Parámetros: limit (${LIST_LIMIT.min} a ${LIST_LIMIT.max}, por defecto ${LIST_LIMIT.default}), ` +
            "order (id: por id ascendente, por defecto; newest: los más recientes primero), category (repetible) " +
            "y cursor (el next_cursor de la página anterior).",
          security: bearer,
        },
      },
    )
    .get("/categories", async () => ({ categories: await manageProducts.categories() }), {
      transform: authenticatedOnly,
      response: {
        200: documented(
          t.Object({
            categories: t.Array(
              t.Object({ name: t.String(), products: integer({ description: "Productos de la categoría" }) }),
            ),
          }),
          "Cada categoría con su número de productos",
          { categories: [{ name: PRODUCT_EXAMPLE.category, products: 12 }] },
        ),
        401: ANSWERS.unauthenticated,
        503: ANSWERS.databaseDown,
      },
      detail: {
        tags,
        summary: "Categorías del catálogo, con cuántos productos tiene cada una",
        description: "Los nombres que admiten los filtros category de la búsqueda y del listado.",
        security: bearer,
      },
    })
    .post(
      "/search",
      async ({ body, request }) => {
        const context = contextOf(request);
        if (wantsEventStream(request)) {
          const abort = new AbortController();
          const signal = AbortSignal.any([context.signal, abort.signal]);
          const stream = await searchEventStream(
            search.stream(body, signal),
            () => abort.abort(new DOMException("the client closed the stream", "AbortError")),
            resultsView,
            {},
          );
          // Elysia sends a Response as it is; the route's schema describes the JSON answer only.
          return stream as never;
        }
        const { query, recommendation, results, citedIds } = await search.execute(body, context.signal);
        return { query, recommendation, results: results.map(scoredView), cited_ids: citedIds };
      },
      {
        parse: deps.searchRequiresAuth ? [...authenticatedJson] : [jsonBody, "json"],
        body: searchBody(search.defaults),
        response: deps.searchRequiresAuth ? { ...searchAnswers, 401: ANSWERS.unauthenticated } : searchAnswers,
        detail: {
          tags,
          summary: "Búsqueda semántica con recomendación generada",
          description:
            "Convierte la consulta en un embedding, ordena los productos por similitud coseno con él (o, con " +
            "mode hybrid, combinada con la coincidencia de palabras), se queda con los limit primeros (de las " +
            "categorías pedidas, si se piden) y un modelo de lenguaje escribe una recomendación basada solo en " +
            "ellos; si el primer proveedor falla, la escribe el siguiente.\n\n" +
            "Con `Accept: text/event-stream` la respuesta llega como eventos, según se escribe: results, delta, " +
            "reset, done y, si algo falla a mitad, error (ver la respuesta 200). Un error antes de los resultados " +
            'responde igual que sin eventos: su estado y `{"detail"}` en JSON.',
          security: deps.searchRequiresAuth ? bearer : SECURITY.none,
        },
      },
    )
    .post(
      "/bulk",
      async ({ request }) => {
        const items = await readBulkItems(request, deps.bulk);
        const report = await importProducts.execute(items, { signal: contextOf(request).signal });
        return report;
      },
      {
        parse: authenticatedStream,
        response: {
          200: documented(ImportResponse, "Lo que pasó con cada producto, por su posición, y los totales", {
            items: [
              { index: 0, status: "created", id: PRODUCT_EXAMPLE.id, sku: PRODUCT_EXAMPLE.sku },
              { index: 1, status: "failed", detail: messageOf(() => checkedField("name", " ")) },
            ],
            counts: { created: 1, updated: 0, unchanged: 0, failed: 1 },
          }),
          400: problem({
            description:
              "El cuerpo no es un array JSON bien formado (en JSON Lines, cada línea mal formada se informa aparte).",
            examples: { "No es un array": MALFORMED_ARRAY.notArray, "Array incompleto": MALFORMED_ARRAY.incomplete },
          }),
          401: ANSWERS.unauthenticated,
          413: problem({
            description: "La importación supera el máximo de bytes o de productos por petición.",
            examples: {
              "Demasiados bytes": payloadTooLarge(deps.bulk.maxBytes),
              "Demasiados productos": tooManyItems(deps.bulk.maxItems),
            },
          }),
          415: answers.unsupportedMediaType([...BULK_MEDIA_TYPES.array, ...BULK_MEDIA_TYPES.lines]),
          422: problem({
            description: "El cuerpo está vacío o no contiene ningún producto.",
            examples: { "Sin productos": noItems() },
          }),
          503: ANSWERS.importUnavailable,
        },
        detail: {
          tags,
          summary: "Importar productos en bloque (array JSON o JSON Lines)",
          description:
            `Hasta ${deps.bulk.maxItems} productos y ${deps.bulk.maxBytes} bytes por petición, como array JSON ` +
            "(application/json) o JSON Lines (application/x-ndjson). Cada elemento se valida y se informa por su " +
            "posición: created, updated, unchanged o failed (con el motivo). Con sku, el producto se crea o se " +
            "actualiza por él, y solo se vuelve a calcular el embedding si cambian el nombre o la descripción.",
          security: bearer,
          requestBody: {
            required: true,
            description:
              "Los productos, cada uno con name, description, category y, si se quiere, sku (otros campos se " +
              "ignoran; embedding no se admite). JSON Lines se admite también como application/jsonl o " +
              "application/x-jsonlines.",
            content: {
              // openapi-types wants a `type` on every schema; TypeBox's union (sku: string or null) has none.
              "application/json": { schema: t.Array(BulkItem) as never, example: [NEW_PRODUCT_EXAMPLE] },
              "application/x-ndjson": {
                schema: { type: "string" },
                example: `${JSON.stringify(NEW_PRODUCT_EXAMPLE)}\n`,
              },
            },
          },
        },
      },
    )
    .get("/:id", async ({ params }) => productView(await manageProducts.get(productId(params.id))), {
      transform: authenticatedOnly,
      ...id,
      response: {
        200: product("El producto, sin su embedding"),
        401: ANSWERS.unauthenticated,
        404: ANSWERS.notFound,
        503: ANSWERS.databaseDown,
      },
      detail: { tags, summary: "Ver un producto", description: "El producto con ese id.", security: bearer },
    })
    .patch(
      "/:id",
      async ({ params, body, request }) =>
        productView(await manageProducts.update(productId(params.id), body, contextOf(request).signal)),
      {
        parse: [...authenticatedJson],
        ...id,
        body: ProductChangesBody,
        response: {
          200: product("El producto tras el cambio"),
          400: ANSWERS.unreadable,
          401: ANSWERS.unauthenticated,
          404: ANSWERS.notFound,
          409: ANSWERS.conflict,
          415: ANSWERS.notJson,
          422: ANSWERS.invalidProduct({ "Sin cambios": NOT_AN_OBJECT }),
          503: ANSWERS.writeUnavailable,
        },
        detail: {
          tags,
          summary: "Cambiar algunos campos de un producto",
          description:
            "Solo se vuelve a calcular el embedding si cambian el nombre o la descripción; si no se puede " +
            "calcular, la respuesta es 503 y el producto no cambia.",
          security: bearer,
        },
      },
    )
    .put(
      "/:id",
      async ({ params, body, request }) =>
        productView(await manageProducts.update(productId(params.id), body, contextOf(request).signal)),
      {
        parse: [...authenticatedJson],
        ...id,
        body: NewProductBody,
        response: {
          200: product("El producto tras el cambio"),
          400: ANSWERS.unreadable,
          401: ANSWERS.unauthenticated,
          404: ANSWERS.notFound,
          409: ANSWERS.conflict,
          415: ANSWERS.notJson,
          422: ANSWERS.invalidProduct({ "Falta un campo": fieldDetail.missing("category") }),
          503: ANSWERS.writeUnavailable,
        },
        detail: {
          tags,
          summary: "Sustituir nombre, descripción y categoría de un producto",
          description: "El SKU se conserva salvo que se envíe (null lo quita).",
          security: bearer,
        },
      },
    )
    .delete(
      "/:id",
      async ({ params, status }) => {
        await manageProducts.remove(productId(params.id));
        return status(204, undefined);
      },
      {
        transform: authenticatedOnly,
        ...id,
        response: {
          204: t.Void({ description: "Borrado; la respuesta no tiene cuerpo" }),
          401: ANSWERS.unauthenticated,
          404: ANSWERS.notFound,
          503: ANSWERS.databaseDown,
        },
        detail: {
          tags,
          summary: "Borrar un producto",
          description: "Borra el producto y su embedding; deja de aparecer en las búsquedas.",
          security: bearer,
        },
      },
    );
}

/** A search's `results` event as clients receive it (the same fields as the JSON answer). */
function resultsView({ query, results }: SearchEvent & { type: "results" }) {
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

/** What the bulk route's parse stage leaves as its body: the handler reads the request's stream. */
const STREAMED_BODY = Object.freeze({ streamed: true });

/** A product id in a path: anything but a positive integer names no product (404). */
function productId(raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) throw new ProductNotFound(raw);
  return Number(raw);
}

/** Printable ASCII, 1 to 255 characters, as Stripe and the IETF idempotency-key draft use. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** The Idempotency-Key header's value, or undefined without one; 400 when it is malformed. */
function idempotencyKey(header: string | null): string | undefined {
  if (header === null) return undefined;
  const key = header.trim();
  if (!IDEMPOTENCY_KEY.test(key)) {
    throw malformedIdempotencyKey();
  }
  return key;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) throw new NotAuthenticated(MALFORMED_AUTHORIZATION);
  return match[1];
}

function productView({ id, name, description, category, sku }: Product) {
  return { id, name, description, category, ...(sku === undefined ? {} : { sku }) };
}

function scoredView(hit: ScoredProduct) {
  return {
    ...productView(hit),
    score: hit.score,
    ...(hit.fusedScore === undefined ? {} : { fused_score: hit.fusedScore }),
  };
}
