import { Elysia, t } from "elysia";
import type { Authenticate } from "../../domain/authenticate.ts";
import type { CreateProduct } from "../../domain/create-product.ts";
import { NotAuthenticated, ProductNotFound } from "../../domain/errors.ts";
import { SEARCH_MODES } from "../../domain/hybrid-ranking.ts";
import type { ImportProducts } from "../../domain/import-products.ts";
import { LIST_LIMIT, LIST_ORDERS, MAX_CATEGORIES, type ManageProducts } from "../../domain/manage-products.ts";
import { PRODUCT_FIELD_MAX_LENGTH, type Product, type ScoredProduct } from "../../domain/product.ts";
import { QUERY_MAX_LENGTH, SEARCH_LIMIT, type SearchAndRecommend } from "../../domain/search-and-recommend.ts";
import { readBody } from "./body.ts";
import { type BulkLimits, readBulkItems } from "./bulk-body.ts";
import { HttpProblem, ProblemBody } from "./errors.ts";
import { searchEventStream, wantsEventStream } from "./event-stream.ts";
import { contextOf } from "./request-context.ts";

/** Elysia's t.Integer also takes numeric strings ("5"); a number that is a multiple of 1 does not. */
function integer(options: Parameters<typeof t.Number>[0] = {}) {
  return t.Number({ multipleOf: 1, ...options });
}

const field = (name: keyof typeof PRODUCT_FIELD_MAX_LENGTH) => t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH[name] });
const skuField = t.String({
  maxLength: PRODUCT_FIELD_MAX_LENGTH.sku,
  description: "Clave propia del comercio; única cuando se da",
});

const NewProductBody = t.Object(
  {
    name: field("name"),
    description: field("description"),
    category: field("category"),
    sku: t.Optional(t.Union([skuField, t.Null()])),
  },
  { additionalProperties: false },
);

const ProductChangesBody = t.Object(
  {
    name: t.Optional(field("name")),
    description: t.Optional(field("description")),
    category: t.Optional(field("category")),
    sku: t.Optional(t.Union([skuField, t.Null()], { description: "null quita el SKU" })),
  },
  { additionalProperties: false, minProperties: 1 },
);

const categoryFilter = t.Optional(
  t.Union([field("category"), t.Array(field("category"), { minItems: 1, maxItems: MAX_CATEGORIES })], {
    description: `Una categoría, o una lista de hasta ${MAX_CATEGORIES}: solo productos de esas categorías`,
  }),
);

const SearchBody = t.Object(
  {
    query: t.String({ maxLength: QUERY_MAX_LENGTH }),
    limit: t.Optional(
      integer({
        minimum: SEARCH_LIMIT.min,
        maximum: SEARCH_LIMIT.max,
        default: SEARCH_LIMIT.default,
        description: `Entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`,
      }),
    ),
    category: categoryFilter,
    mode: t.Optional(
      t.UnionEnum([...SEARCH_MODES], {
        description:
          "semantic (por defecto): por similitud del embedding; hybrid: combinada con la coincidencia de palabras",
      }),
    ),
    alpha: t.Optional(
      t.Number({
        minimum: 0,
        maximum: 1,
        description: "Solo con mode hybrid: peso de la similitud semántica, de 0 a 1",
      }),
    ),
  },
  { additionalProperties: false },
);

const ListQuery = t.Object(
  {
    limit: t.Optional(t.Numeric({ minimum: LIST_LIMIT.min, maximum: LIST_LIMIT.max, multipleOf: 1 })),
    cursor: t.Optional(t.String({ maxLength: 100 })),
    order: t.Optional(t.UnionEnum([...LIST_ORDERS])),
    category: categoryFilter,
  },
  { additionalProperties: false },
);

const ProductResponse = t.Object({
  id: integer(),
  name: t.String(),
  description: t.String(),
  category: t.String(),
  sku: t.Optional(t.String()),
});

const SearchResponse = t.Object({
  query: t.String(),
  recommendation: t.String(),
  cited_ids: t.Array(integer(), {
    description: "Ids de los productos de results que cita la recomendación (como [#id]), en orden de aparición",
  }),
  results: t.Array(
    t.Object({
      id: integer(),
      name: t.String(),
      description: t.String(),
      category: t.String(),
      sku: t.Optional(t.String()),
      score: t.Number({ description: "Similitud coseno con la consulta" }),
      fused_score: t.Optional(
        t.Number({ description: "Solo en búsquedas híbridas: la puntuación combinada que ordena los resultados" }),
      ),
    }),
  ),
});

const ListResponse = t.Object({
  items: t.Array(ProductResponse),
  total: integer({ description: "Productos que cumplen el filtro, en todas las páginas" }),
  next_cursor: t.Union([t.String(), t.Null()], { description: "Para la página siguiente; null en la última" }),
});

const ImportResponse = t.Object({
  items: t.Array(
    t.Object({
      index: integer(),
      status: t.UnionEnum(["created", "updated", "unchanged", "failed"]),
      id: t.Optional(integer()),
      sku: t.Optional(t.String()),
      detail: t.Optional(t.String()),
    }),
  ),
  counts: t.Object({ created: integer(), updated: integer(), unchanged: integer(), failed: integer() }),
});

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
  const bearer = [{ bearerAuth: [] }];
  const tags = ["products"];

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
          201: ProductResponse,
          400: ProblemBody,
          401: ProblemBody,
          409: ProblemBody,
          422: ProblemBody,
          503: ProblemBody,
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
        response: { 200: ListResponse, 401: ProblemBody, 422: ProblemBody, 503: ProblemBody },
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
        200: t.Object({
          categories: t.Array(
            t.Object({ name: t.String(), products: integer({ description: "Productos de la categoría" }) }),
          ),
        }),
        401: ProblemBody,
        503: ProblemBody,
      },
      detail: { tags, summary: "Categorías del catálogo, con cuántos productos tiene cada una", security: bearer },
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
            ({ query, results }) => ({ query, results: results.map(scoredView) }),
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
        body: SearchBody,
        response: { 200: SearchResponse, 401: ProblemBody, 422: ProblemBody, 503: ProblemBody },
        detail: {
          tags,
          summary: "Búsqueda semántica con recomendación generada",
          description:
            "Con Accept: text/event-stream la respuesta son eventos: results (los productos, en cuanto se " +
            "encuentran), delta (el texto de la recomendación según se escribe), reset (lo enviado se descarta " +
            "y lo sustituye el siguiente redactor), done (la recomendación entera, cited_ids y quién la escribió) " +
            "o error.",
          security: deps.searchRequiresAuth ? bearer : [],
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
        response: { 200: ImportResponse, 400: ProblemBody, 401: ProblemBody, 413: ProblemBody, 415: ProblemBody },
        detail: {
          tags,
          summary: "Importar productos en bloque (array JSON o JSON Lines)",
          description:
            `Hasta ${deps.bulk.maxItems} productos y ${deps.bulk.maxBytes} bytes por petición, como array JSON ` +
            "(application/json) o JSON Lines (application/x-ndjson). Cada elemento se valida y se informa por su " +
            "posición: created, updated, unchanged o failed (con el motivo). Con sku, el producto se crea o se " +
            "actualiza por él, y solo se vuelve a calcular el embedding si cambian el nombre o la descripción.",
          security: bearer,
        },
      },
    )
    .get("/:id", async ({ params }) => productView(await manageProducts.get(productId(params.id))), {
      transform: authenticatedOnly,
      response: { 200: ProductResponse, 401: ProblemBody, 404: ProblemBody, 503: ProblemBody },
      detail: { tags, summary: "Ver un producto", security: bearer },
    })
    .patch(
      "/:id",
      async ({ params, body, request }) =>
        productView(await manageProducts.update(productId(params.id), body, contextOf(request).signal)),
      {
        parse: [...authenticatedJson],
        body: ProductChangesBody,
        response: {
          200: ProductResponse,
          401: ProblemBody,
          404: ProblemBody,
          409: ProblemBody,
          422: ProblemBody,
          503: ProblemBody,
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
        body: NewProductBody,
        response: {
          200: ProductResponse,
          401: ProblemBody,
          404: ProblemBody,
          409: ProblemBody,
          422: ProblemBody,
          503: ProblemBody,
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
        response: { 204: t.Void(), 401: ProblemBody, 404: ProblemBody, 503: ProblemBody },
        detail: { tags, summary: "Borrar un producto", security: bearer },
      },
    );
}

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
    throw new HttpProblem(400, "La cabecera Idempotency-Key debe tener entre 1 y 255 caracteres ASCII visibles");
  }
  return key;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) throw new NotAuthenticated("El encabezado Authorization debe tener la forma 'Bearer <token>'");
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
