/**
 * An import and its job as the HTTP API shows them, shared by POST /products/bulk (its report, its
 * 202) and GET /jobs/{id}: the schemas, their examples and the views of the domain's objects.
 */
import { t } from "elysia";
import { IMPORT_JOB_STATUSES, type ImportJob } from "../../../domain/import-jobs.ts";
import { integer, PRODUCT_EXAMPLE, productIdField } from "../products/product-schemas.ts";

/** Where a job is read: the 202's Location. */
export const jobPath = (id: number) => `/jobs/${id}`;

/** What became of one item of an import. */
export const ImportItemResult = t.Object({
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
});

const statusCount = (description: string) => integer({ minimum: 0, description });

const importCounts = {
  created: statusCount("Productos creados"),
  updated: statusCount("Productos actualizados"),
  unchanged: statusCount("Productos que ya estaban igual"),
  failed: statusCount("Productos que no se guardaron"),
};

/** The report of an import that finished within its request (POST /products/bulk's 200). */
export const ImportReport = t.Object({
  items: t.Array(ImportItemResult, { description: "Un resultado por producto enviado, en el mismo orden" }),
  counts: t.Object(importCounts, { description: "Cuántos productos acabaron en cada estado" }),
});

const time = (description: string) => t.String({ format: "date-time", description });
const nullable = <T extends ReturnType<typeof t.String>>(schema: T) =>
  t.Union([schema, t.Null()], { description: schema.description });

const jobFields = {
  id: integer({ minimum: 1, description: "El id de la importación (GET /jobs/{id})" }),
  status: t.UnionEnum([...IMPORT_JOB_STATUSES], {
    default: undefined,
    description:
      "enqueued: espera a empezar; processing: en curso (o esperando a reanudarse tras un reinicio); " +
      "succeeded: cada producto tiene su resultado (algunos pueden ser failed); failed: se detuvo antes del " +
      "final (error dice por qué) y los productos no guardados constan como failed con el motivo",
  }),
  total: integer({ minimum: 0, description: "Productos enviados" }),
  counts: t.Object(
    { ...importCounts, pending: statusCount("Productos que aún no tienen resultado") },
    { description: "Cuántos productos hay en cada estado" },
  ),
  error: nullable(t.String({ description: "Por qué falló la importación (solo en failed)" })),
  enqueued_at: time("Cuándo llegó"),
  started_at: nullable(time("Cuándo empezó a procesarse")),
  finished_at: nullable(time("Cuándo terminó")),
};

/** A job without its items (POST /products/bulk's 202). */
export const ImportJobSchema = t.Object(jobFields, {
  description: "Una importación en curso o terminada",
});

/** A job with a page of its report (GET /jobs/{id}). */
export const ImportJobReportSchema = t.Object(
  {
    ...jobFields,
    items: t.Array(ImportItemResult, {
      description:
        "Los resultados de esta página, por posición (los productos aún sin resultado no aparecen); el informe " +
        "es definitivo cuando status es succeeded o failed",
    }),
    next_cursor: t.Union([t.String(), t.Null()], {
      description: "Para la página siguiente (parámetro cursor); null si no hay más resultados por ahora",
    }),
  },
  { description: "La importación con una página de su informe" },
);

/** The job as the API shows it. */
export function jobView(job: ImportJob) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: job.id,
    status: job.status,
    total: job.total,
    counts: job.counts,
    error: job.error,
    enqueued_at: new Date(job.enqueuedAt).toISOString(),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
  };
}

/** A job as the examples of the OpenAPI document show it. */
export const JOB_EXAMPLE = {
  id: 7,
  status: "processing" as const,
  total: 1500,
  counts: { created: 512, updated: 0, unchanged: 0, failed: 0, pending: 988 },
  error: null,
  enqueued_at: "2025-01-01T12:00:00.000Z",
  started_at: "2025-01-01T12:00:00.000Z",
  finished_at: null,
};

export const REPORT_ITEM_EXAMPLE = {
  index: 0,
  status: "created" as const,
  id: PRODUCT_EXAMPLE.id,
  sku: PRODUCT_EXAMPLE.sku,
};
