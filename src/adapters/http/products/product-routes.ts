import { Elysia, t } from "elysia";
import { writerOf } from "../../../domain/caller.ts";
import type { CreateProduct } from "../../../domain/create-product.ts";
import {
  ConcurrentModification,
  EmbeddingUnavailable,
  IdempotencyKeyReused,
  ProductNotFound,
  SkuTaken,
} from "../../../domain/errors.ts";
import {
  INVALID_CURSOR,
  LIST_LIMIT,
  LIST_ORDERS,
  type ManageProducts,
  normalizeCategories,
} from "../../../domain/manage-products.ts";
import { checkedField, type ProductChanges } from "../../../domain/product.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import {
  catalogueNotFound,
  catalogueParams,
  type ProductPrefix,
  pathParams,
  pluginName,
} from "../catalogues/catalogue-scope.ts";
import { jsonBody, mediaTypesOf } from "../core/body.ts";
import { fieldDetail, HttpProblem, NOT_AN_OBJECT } from "../core/errors.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import {
  answers,
  documented,
  documentedAs,
  messageOf,
  problem,
  readAfterParameter,
  UNAVAILABLE,
} from "../core/route-docs.ts";
import {
  categoryQuery,
  filterParam,
  filterQuery,
  integer,
  NewProductBody,
  PRODUCT_EXAMPLE,
  productFields,
  productModels,
  productView,
} from "./product-schemas.ts";

const ListQuery = t.Object(
  {
    limit: t.Optional(
      t.Numeric({
        // Names the parameter in the 422 of a value refused while decoding (core/errors.ts).
        title: "limit",
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
    category: categoryQuery,
    filter: filterQuery,
  },
  { additionalProperties: false },
);

const ListResponse = t.Object({
  items: t.Array(t.Object(productFields), { description: "Los productos de esta página, en el orden pedido" }),
  total: integer({ description: "Productos que cumplen el filtro, en todas las páginas" }),
  next_cursor: t.Union([t.String(), t.Null()], { description: "Para la página siguiente; null en la última" }),
});

const CategoriesResponse = t.Object({
  categories: t.Array(t.Object({ name: t.String(), products: integer({ description: "Productos de la categoría" }) })),
});

/** Any text to the router: an id that is not a positive integer names no product (404, `productId`). */
const productIdParam = {
  id: documentedAs(t.String({ description: "El id del producto (entero positivo)" }), {
    type: "integer",
    minimum: 1,
    description: "El id del producto",
    example: PRODUCT_EXAMPLE.id,
  }),
};

/** Printable ASCII, 1 to 255 characters, as Stripe and the IETF idempotency-key draft use. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** Read by `idempotencyKey` (a malformed one is 400, not the 422 of a schema). */
const CreateHeaders = t.Object({
  "idempotency-key": t.Optional(
    documentedAs(t.String(), {
      type: "string",
      minLength: 1,
      maxLength: 255,
      pattern: IDEMPOTENCY_KEY.source,
      description:
        "Opcional. Repetir la misma petición con la misma clave durante 24 horas devuelve la primera respuesta " +
        "(con Idempotent-Replayed: true) sin crear otro producto; la misma clave con otro cuerpo es un 422.",
      example: "alta-zapatillas-2026-11-25-001",
    }),
  ),
});

/** What the reads document besides Authorization: X-Read-After (app.ts reads it). */
const ReadHeaders = t.Object({ "x-read-after": readAfterParameter });

const malformedIdempotencyKey = () =>
  new HttpProblem(400, "La cabecera Idempotency-Key debe tener entre 1 y 255 caracteres ASCII visibles");

/** The error answers of these routes, documented with the messages they send (see core/route-docs.ts). */
const ANSWERS = {
  unreadable: answers.unreadable(["json"]),
  unreadableCreate: answers.unreadable(["json"], { "Idempotency-Key mal formada": malformedIdempotencyKey() }),
  notFound: catalogueNotFound(
    "No hay ningún producto con ese id en el catálogo (un id que no es un entero positivo no nombra ninguno; " +
      "un producto de otro catálogo tampoco está aquí).",
    { "Producto inexistente": new ProductNotFound(PRODUCT_EXAMPLE.id) },
  ),
  catalogueNotFound: catalogueNotFound(),
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
};

/** What PATCH and PUT answer besides the product (they differ only in the 422's examples). */
const changeAnswers = (invalid: Record<string, string | Error>) => ({
  200: "Product" as const,
  400: ANSWERS.unreadable,
  404: ANSWERS.notFound,
  409: ANSWERS.conflict,
  415: ANSWERS.notJson,
  422: ANSWERS.invalidProduct(invalid),
  503: ANSWERS.writeUnavailable,
});

export interface ProductRoutesDeps {
  /** Where they are mounted: `/products` (the default catalogue) or each catalogue's (catalogue-scope.ts). */
  prefix: ProductPrefix;
  createProduct: CreateProduct;
  manageProducts: ManageProducts;
  maxBodyBytes: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * A catalogue's products: POST /products/ (create) as the contract has it, plus GET /products (list),
 * GET /products/categories, and GET, PATCH, PUT and DELETE /products/{id}; the same under
 * /catalogues/{catalogue}/products (`prefix`). Each works in the catalogue the auth macro resolved
 * (the default one for /products). Reading takes "products.read", writing "products.write" and the
 * write budget.
 */
export function productRoutes({
  prefix,
  createProduct,
  manageProducts,
  maxBodyBytes,
  auth,
  rateLimits,
}: ProductRoutesDeps) {
  const tags = ["products"];
  const ProductIdParams = pathParams(prefix, productIdParam);
  // The contract's POST /products/ keeps its slash; a catalogue's collection has none (either is served).
  const root = prefix === "/products" ? "/" : "";
  const CatalogueParams = catalogueParams(prefix);
  const json = jsonBody(maxBodyBytes);
  // 413 (a body over the limit), 429 (rate limits) and 500 can come from any route: docs/openapi.ts documents them.

  /** PATCH and PUT: the same change, of some fields or of the contract's three. */
  const update = async ({
    params,
    body,
    signal,
    catalogue,
  }: {
    params: { id: string };
    body: ProductChanges;
    signal: AbortSignal;
    catalogue: string;
  }) => productView(await manageProducts.update(catalogue, productId(params.id), body, signal));

  return new Elysia({ name: pluginName("products", prefix), prefix })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .use(productModels)
    .post(
      root,
      async ({ body, caller, catalogue, headers, signal, set, status }) => {
        const key = idempotencyKey(headers["idempotency-key"]);
        // Kept per caller (a user, an API key): another caller's same key is another key.
        const owner = writerOf(caller);
        const { product, replayed } = await createProduct.execute(body, {
          catalogue,
          signal,
          idempotency: key === undefined || owner === undefined ? undefined : { owner, key },
        });
        if (replayed) set.headers["Idempotent-Replayed"] = "true";
        return status(201, productView(product));
      },
      {
        auth: "products.write",
        rateLimit: "write",
        parse: json,
        headers: CreateHeaders,
        params: CatalogueParams,
        body: "NewProduct",
        response: {
          201: "Product",
          400: ANSWERS.unreadableCreate,
          404: ANSWERS.catalogueNotFound,
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
        },
      },
    )
    .get(
      root,
      async ({ catalogue, query: { limit, cursor, order, category, filter } }) => {
        const page = await manageProducts.list(catalogue, {
          limit,
          cursor,
          order,
          category,
          filter: filterParam(filter),
        });
        return { items: page.items.map(productView), total: page.total, next_cursor: page.nextCursor };
      },
      {
        auth: "products.read",
        headers: ReadHeaders,
        params: CatalogueParams,
        query: ListQuery,
        response: {
          200: documented(ListResponse, "Una página de productos", {
            items: [PRODUCT_EXAMPLE],
            total: 1,
            next_cursor: null,
          }),
          404: ANSWERS.catalogueNotFound,
          422: ANSWERS.invalidList,
          503: ANSWERS.databaseDown,
        },
        detail: {
          tags,
          summary: "Listar productos, por páginas",
          description:
            `Parámetros: limit (${LIST_LIMIT.min} a ${LIST_LIMIT.max}, por defecto ${LIST_LIMIT.default}), ` +
            "order (id: por id ascendente, por defecto; newest: los más recientes primero), category (repetible), " +
            'filter (condiciones sobre los atributos, como JSON: ?filter={"brand":"Acme","price":{"lt":60}}) ' +
            "y cursor (el next_cursor de la página anterior).",
        },
      },
    )
    .get("/categories", async ({ catalogue }) => ({ categories: await manageProducts.categories(catalogue) }), {
      auth: "products.read",
      headers: ReadHeaders,
      params: CatalogueParams,
      response: {
        200: documented(CategoriesResponse, "Cada categoría con su número de productos", {
          categories: [{ name: PRODUCT_EXAMPLE.category, products: 12 }],
        }),
        404: ANSWERS.catalogueNotFound,
        503: ANSWERS.databaseDown,
      },
      detail: {
        tags,
        summary: "Categorías del catálogo, con cuántos productos tiene cada una",
        description: "Los nombres que admiten los filtros category de la búsqueda y del listado.",
      },
    })
    .get(
      "/:id",
      async ({ params, catalogue }) => productView(await manageProducts.get(catalogue, productId(params.id))),
      {
        auth: "products.read",
        headers: ReadHeaders,
        params: ProductIdParams,
        response: { 200: "Product", 404: ANSWERS.notFound, 503: ANSWERS.databaseDown },
        detail: { tags, summary: "Ver un producto", description: "El producto con ese id." },
      },
    )
    .patch("/:id", update, {
      auth: "products.write",
      rateLimit: "write",
      parse: json,
      params: ProductIdParams,
      body: "ProductChanges",
      response: changeAnswers({ "Sin cambios": NOT_AN_OBJECT }),
      detail: {
        tags,
        summary: "Cambiar algunos campos de un producto",
        description:
          "Solo se vuelve a calcular el embedding si cambian el nombre, la categoría o la descripción; si no se puede " +
          "calcular, la respuesta es 503 y el producto no cambia.",
      },
    })
    .put("/:id", update, {
      auth: "products.write",
      rateLimit: "write",
      parse: json,
      params: ProductIdParams,
      body: "NewProduct",
      response: changeAnswers({ "Falta un campo": fieldDetail.missing("category") }),
      detail: {
        tags,
        summary: "Sustituir nombre, descripción y categoría de un producto",
        description: "El SKU se conserva salvo que se envíe (null lo quita).",
      },
    })
    .delete(
      "/:id",
      async ({ params, catalogue, status }) => {
        await manageProducts.remove(catalogue, productId(params.id));
        return status(204, undefined);
      },
      {
        auth: "products.write",
        rateLimit: "write",
        params: ProductIdParams,
        response: {
          204: t.Void({ description: "Borrado; la respuesta no tiene cuerpo" }),
          404: ANSWERS.notFound,
          503: ANSWERS.databaseDown,
        },
        detail: {
          tags,
          summary: "Borrar un producto",
          description: "Borra el producto y su embedding; deja de aparecer en las búsquedas.",
        },
      },
    );
}

/** A product id in a path: anything but a positive integer names no product (404). */
function productId(raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) throw new ProductNotFound(raw);
  return Number(raw);
}

/** The Idempotency-Key header's value, or undefined without one; 400 when it is malformed. */
function idempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const key = header.trim();
  if (!IDEMPOTENCY_KEY.test(key)) throw malformedIdempotencyKey();
  return key;
}
