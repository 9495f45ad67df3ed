import { Elysia, t } from "elysia";
import type { ImportProducts } from "../../../domain/import-products.ts";
import { checkedField } from "../../../domain/product.ts";
import { MALFORMED_ARRAY } from "../../../lib/json/json-items.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { payloadTooLarge } from "../core/errors.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, messageOf, problem, UNAVAILABLE } from "../core/route-docs.ts";
import {
  field,
  integer,
  NEW_PRODUCT_EXAMPLE,
  PRODUCT_EXAMPLE,
  productIdField,
  skuField,
} from "../products/product-schemas.ts";
import { BULK_MEDIA_TYPES, type BulkLimits, noItems, readBulkItems, tooManyItems } from "./bulk-body.ts";

/** Where the bulk import answers: app.ts lets it take larger bodies than any other route. */
export const BULK_PATH = "/products/bulk";

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

/** What the parse stage leaves as the body: nothing is read there, the handler reads the request's stream. */
const STREAMED_BODY = Object.freeze({ streamed: true });

export interface BulkRoutesDeps {
  importProducts: ImportProducts;
  limits: BulkLimits;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * POST /products/bulk: many products in one request, as a JSON array or JSON Lines, each
 * validated and reported by its position. Takes "products.write" and the write budget; the body
 * is read as a stream by the handler, so nothing of it is read before the auth check.
 */
export function bulkRoutes({ importProducts, limits, auth, rateLimits }: BulkRoutesDeps) {
  return new Elysia({ name: "bulk" })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .post(
      BULK_PATH,
      async ({ request, signal }) => importProducts.execute(await readBulkItems(request, limits), { signal }),
      {
        auth: "products.write",
        rateLimit: "write",
        parse: () => STREAMED_BODY,
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
          413: problem({
            description: "La importación supera el máximo de bytes o de productos por petición.",
            examples: {
              "Demasiados bytes": payloadTooLarge(limits.maxBytes),
              "Demasiados productos": tooManyItems(limits.maxItems),
            },
          }),
          415: answers.unsupportedMediaType([...BULK_MEDIA_TYPES.array, ...BULK_MEDIA_TYPES.lines]),
          422: problem({
            description: "El cuerpo está vacío o no contiene ningún producto.",
            examples: { "Sin productos": noItems() },
          }),
          503: answers.unavailable(
            "La base de datos no respondió al comprobar el token, o la importación agotó su tiempo (lo guardado se queda).",
            { ...UNAVAILABLE.database, ...UNAVAILABLE.deadline },
          ),
        },
        detail: {
          tags: ["products"],
          summary: "Importar productos en bloque (array JSON o JSON Lines)",
          description:
            `Hasta ${limits.maxItems} productos y ${limits.maxBytes} bytes por petición, como array JSON ` +
            "(application/json) o JSON Lines (application/x-ndjson). Cada elemento se valida y se informa por su " +
            "posición: created, updated, unchanged o failed (con el motivo). Con sku, el producto se crea o se " +
            "actualiza por él, y solo se vuelve a calcular el embedding si cambian el nombre o la descripción.",
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
    );
}
