import { Elysia, t } from "elysia";
import { writerOf } from "../../../domain/caller.ts";
import { NotAuthenticated } from "../../../domain/errors.ts";
import type { ImportJobs } from "../../../domain/import-jobs.ts";
import { checkedField } from "../../../domain/product.ts";
import { IMPORT_ITEMS_PER_UNIT, importCost } from "../../../domain/rate-limit.ts";
import { MALFORMED_ARRAY } from "../../../lib/json/json-items.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { catalogueNotFound, catalogueParams, type ProductPrefix, pluginName } from "../catalogues/catalogue-scope.ts";
import { payloadTooLarge } from "../core/errors.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, messageOf, problem, UNAVAILABLE } from "../core/route-docs.ts";
import {
  ImportJobSchema,
  ImportReport,
  JOB_EXAMPLE,
  jobPath,
  jobView,
  REPORT_ITEM_EXAMPLE,
} from "../jobs/job-schemas.ts";
import { field, NEW_PRODUCT_EXAMPLE, skuField } from "../products/product-schemas.ts";
import { BULK_MEDIA_TYPES, type BulkLimits, noItems, readBulkItems, tooManyItems } from "./bulk-body.ts";

/** Where the bulk import answers, under each product prefix: app.ts lets it take larger bodies than any other route. */
export const BULK_PATH = "/bulk";

/** Whether a request path is a bulk import's (`/products/bulk`, `/catalogues/{catalogue}/products/bulk`). */
export function isBulkPath(path: string): boolean {
  return /^(\/catalogues\/[^/]+)?\/products\/bulk\/?$/.test(path);
}

/** An item of a bulk import, for the OpenAPI document (ImportProducts checks each one). */
const BulkItem = t.Object({
  name: field("name"),
  description: field("description"),
  category: field("category"),
  sku: t.Optional(t.Union([skuField, t.Null()])),
  attributes: t.Optional(
    t.Record(t.String(), t.Unknown(), {
      description: "Atributos (como en POST /products); el elemento es el estado completo: sin ellos, no tiene ninguno",
    }),
  ),
});

/** What the parse stage leaves as the body: nothing is read there, the handler reads the request's stream. */
const STREAMED_BODY = Object.freeze({ streamed: true });

export interface BulkRoutesDeps {
  /** Where it is mounted: `/products` (the default catalogue) or each catalogue's (catalogue-scope.ts). */
  prefix: ProductPrefix;
  importJobs: ImportJobs;
  limits: BulkLimits;
  /** REQUEST_TIMEOUT_MS: an import not done well before it becomes a job. */
  requestTimeoutMs: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * What is kept of a request's time budget when the import hands its work over to a job: enough
 * to answer 202 with a database that is slow (at most 5 s), at most a quarter of the budget.
 */
export const handoverMarginMs = (requestTimeoutMs: number) => Math.min(5_000, Math.floor(requestTimeoutMs / 4));

/** Whether a `Prefer` header (RFC 7240: comma-separated preferences, any case, maybe with parameters) asks for respond-async. */
export function prefersRespondAsync(header: string | undefined): boolean {
  return (header ?? "")
    .split(",")
    .some((preference) => preference.split(/[;=]/)[0]?.trim().toLowerCase() === "respond-async");
}

/**
 * POST /products/bulk: many products in one request, as a JSON array or JSON Lines, each
 * validated and reported by its position. Takes "products.write" and one unit of the write budget
 * per 100 products (spent once the body is read, before anything is stored: 429 when the units do
 * not fit). The body is read as a stream by the handler, so nothing of it is read before the auth
 * check. The import answers 200 with the report when it is done within the request's time, else it
 * becomes a job (domain/import-jobs.ts) and answers 202 with it (Location: /jobs/{id}) once that time
 * nears its end; `Prefer: respond-async` asks for the 202 at once. The same under
 * /catalogues/{catalogue}/products/bulk (`prefix`): skus are matched within the catalogue, and the
 * job (its caller's, at /jobs/{id}) writes there.
 */
export function bulkRoutes({ prefix, importJobs, limits, requestTimeoutMs, auth, rateLimits }: BulkRoutesDeps) {
  const margin = handoverMarginMs(requestTimeoutMs);
  return new Elysia({ name: pluginName("bulk", prefix), prefix })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .post(
      BULK_PATH,
      async ({ request, signal, timeLeftMs, caller, catalogue, headers, set, status, spendRateLimit }) => {
        const owner = writerOf(caller);
        if (owner === undefined) throw new NotAuthenticated();
        const items = await readBulkItems(request, limits);
        await spendRateLimit(importCost(items.length));
        const respondAsync = prefersRespondAsync(headers.prefer);
        // The request's own work stops once its time nears its end (or its client goes away).
        const handover = AbortSignal.timeout(Math.max(0, timeLeftMs() - margin));
        const outcome = respondAsync
          ? { kind: "accepted" as const, job: await importJobs.enqueue(owner, catalogue, items) }
          : await importJobs.submit(owner, catalogue, items, { handover, signal });
        if (outcome.kind === "finished") return { items: outcome.report.items, counts: outcome.report.counts };
        set.headers.location = jobPath(outcome.job.id);
        if (respondAsync) set.headers["preference-applied"] = "respond-async";
        return status(202, jobView(outcome.job));
      },
      {
        auth: "products.write",
        rateLimit: { bucket: "write", spentBy: "handler" },
        parse: () => STREAMED_BODY,
        params: catalogueParams(prefix),
        headers: t.Object({
          prefer: t.Optional(
            t.String({
              description:
                "respond-async (RFC 7240): responder 202 con la importación en curso sin esperar a que termine",
              examples: ["respond-async"],
            }),
          ),
        }),
        response: {
          200: documented(
            ImportReport,
            "Terminada a tiempo: lo que pasó con cada producto, por su posición, y los totales",
            {
              items: [
                REPORT_ITEM_EXAMPLE,
                { index: 1, status: "failed", detail: messageOf(() => checkedField("name", " ")) },
              ],
              counts: { created: 1, updated: 0, unchanged: 0, failed: 1 },
            },
          ),
          202: documented(
            ImportJobSchema,
            "La importación sigue como un trabajo (se pidió con Prefer: respond-async, o no terminaba a tiempo): " +
              "GET /jobs/{id} da su estado y su informe. Lo guardado hasta ahora ya está en él.",
            JOB_EXAMPLE,
            undefined,
            {
              Location: {
                description: "Dónde seguir la importación: /jobs/{id}.",
                schema: { type: "string", format: "uri-reference" },
                example: jobPath(JOB_EXAMPLE.id),
              },
              "Preference-Applied": {
                description: "respond-async cuando la respuesta atiende a Prefer: respond-async (RFC 7240).",
                schema: { type: "string" },
                example: "respond-async",
              },
            },
          ),
          400: problem({
            description:
              "El cuerpo no es un array JSON bien formado (en JSON Lines, cada línea mal formada se informa aparte).",
            examples: { "No es un array": MALFORMED_ARRAY.notArray, "Array incompleto": MALFORMED_ARRAY.incomplete },
          }),
          404: catalogueNotFound(),
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
            "La base de datos no respondió al comprobar el token o al guardar la importación: no se guardó nada.",
            UNAVAILABLE.database,
          ),
        },
        detail: {
          tags: ["products"],
          summary: "Importar productos en bloque (array JSON o JSON Lines)",
          description:
            `Hasta ${limits.maxItems} productos y ${limits.maxBytes} bytes por petición, como array JSON ` +
            "(application/json) o JSON Lines (application/x-ndjson). Cada elemento se valida y se informa por su " +
            "posición: created, updated, unchanged o failed (con el motivo). Con sku, el producto se crea o se " +
            "actualiza por él, y solo se vuelve a calcular el embedding si cambian el nombre, la categoría o la descripción.\n\n" +
            "Si termina a tiempo, la respuesta es 200 con el informe; si no, poco antes del tiempo máximo de la " +
            "petición responde 202 con un trabajo (Location: /jobs/{id}) que ya contiene lo guardado y sigue en " +
            "segundo plano desde el primer producto no guardado (también tras un reinicio). Con " +
            "`Prefer: respond-async` responde 202 en seguida.\n\n" +
            `Cuesta una unidad del cupo de escrituras por cada ${IMPORT_ITEMS_PER_UNIT} productos (o fracción), ` +
            "como mucho el cupo entero; si no caben en lo que queda, 429 y no se guarda nada.",
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
