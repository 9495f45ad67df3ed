import { Elysia, t } from "elysia";
import { writerOf } from "../../../domain/caller.ts";
import { JobNotFound } from "../../../domain/errors.ts";
import type { ImportJobs } from "../../../domain/import-jobs.ts";
import { INVALID_CURSOR } from "../../../domain/manage-products.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { fieldDetail, HttpProblem } from "../core/errors.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, documentedAs, problem, UNAVAILABLE } from "../core/route-docs.ts";
import { ImportJobReportSchema, JOB_EXAMPLE, jobView, REPORT_ITEM_EXAMPLE } from "./job-schemas.ts";

/** Results per page of a job's report: the largest import (BULK_MAX_ITEMS' default) fits one page. */
export const REPORT_LIMIT = { min: 1, max: 5_000, default: 1_000 } as const;

const LIMIT_DESCRIPTION = `Resultados por página, de ${REPORT_LIMIT.min} a ${REPORT_LIMIT.max} (por defecto ${REPORT_LIMIT.default})`;

const INVALID_LIMIT = fieldDetail.invalid("limit", {
  type: "integer",
  minimum: REPORT_LIMIT.min,
  maximum: REPORT_LIMIT.max,
});

const JobIdParams = t.Object({
  id: documentedAs(t.String({ description: "El id de la importación (entero positivo)" }), {
    type: "integer",
    minimum: 1,
    description: "El id de la importación (el de la respuesta 202, o su Location)",
  }),
});

const ReportQuery = t.Object(
  {
    // Whole and in range is checked by the handler: Elysia's own check of a query number's range or
    // multipleOf reports no field name (its error's path is empty), so its 422 could not name it.
    limit: t.Optional(
      documentedAs(t.Numeric({ description: LIMIT_DESCRIPTION }), {
        type: "integer",
        minimum: REPORT_LIMIT.min,
        maximum: REPORT_LIMIT.max,
        default: REPORT_LIMIT.default,
        description: LIMIT_DESCRIPTION,
      }),
    ),
    cursor: t.Optional(t.String({ maxLength: 100, description: "El next_cursor de la página anterior" })),
  },
  { additionalProperties: false },
);

export interface JobRoutesDeps {
  importJobs: ImportJobs;
  auth: AuthMacro;
}

/**
 * GET /jobs/{id}: an import job of the caller's (POST /products/bulk's 202 points here), with its
 * status, counts and a page of its report. Another caller's job is 404, as one that does not exist.
 * Takes "products.write", as the import it follows, in no catalogue: a job is its caller's, whatever
 * catalogue it writes into (a key of one shop reads the jobs of its imports there, which the auth
 * macro would otherwise take for the default catalogue's and answer 404). Reading spends no budget,
 * like other reads.
 */
export function jobRoutes({ importJobs, auth }: JobRoutesDeps) {
  return new Elysia({ name: "jobs" })
    .use(requestContext)
    .use(auth)
    .get(
      "/jobs/:id",
      async ({ params, query, caller }) => {
        const owner = writerOf(caller);
        if (owner === undefined) throw new JobNotFound(params.id);
        const limit = query.limit ?? REPORT_LIMIT.default;
        if (!Number.isInteger(limit) || limit < REPORT_LIMIT.min || limit > REPORT_LIMIT.max) {
          throw new HttpProblem(422, INVALID_LIMIT);
        }
        const page = await importJobs.report(owner, jobId(params.id), { after: reportCursor(query.cursor), limit });
        return { ...jobView(page.job), items: page.items, next_cursor: page.next === null ? null : String(page.next) };
      },
      {
        auth: { permission: "products.write", inCatalogue: false },
        params: JobIdParams,
        query: ReportQuery,
        response: {
          200: documented(ImportJobReportSchema, "La importación, con una página de su informe", {
            ...JOB_EXAMPLE,
            items: [REPORT_ITEM_EXAMPLE],
            next_cursor: "0",
          }),
          404: problem({
            description:
              "No hay ninguna importación con ese id que sea de quien pregunta (la de otro usuario tampoco se muestra).",
            examples: { "Importación inexistente": new JobNotFound(JOB_EXAMPLE.id) },
          }),
          422: problem({
            description: "Un parámetro no es válido.",
            examples: {
              "limit fuera de rango": INVALID_LIMIT,
              "limit no entero": fieldDetail.invalid("limit", {}),
              "Cursor no válido": INVALID_CURSOR,
              "Parámetro desconocido": fieldDetail.notAllowed("page"),
            },
          }),
          503: answers.unavailable("La base de datos no respondió.", UNAVAILABLE.database),
        },
        detail: {
          tags: ["products"],
          summary: "Ver una importación: estado, totales y su informe por páginas",
          description:
            "El trabajo de un POST /products/bulk que respondió 202 (o de uno que terminó a tiempo). status: " +
            "enqueued, processing, succeeded o failed; counts, cuántos productos hay en cada estado (pending: aún " +
            "sin resultado); items, los resultados por posición, de limit en limit (cursor: el next_cursor de la " +
            "página anterior). Se puede consultar hasta JOB_RETENTION_HOURS horas después de terminar.",
        },
      },
    );
}

/** Where a page starts: after the position a next_cursor names (its text), or from the first (none). */
function reportCursor(raw: string | undefined): number {
  if (raw === undefined) return -1;
  if (!/^(0|[1-9][0-9]{0,8})$/.test(raw)) throw new HttpProblem(422, INVALID_CURSOR);
  return Number(raw);
}

/** A job id in a path: anything but a positive integer names no job (404). */
function jobId(raw: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) throw new JobNotFound(raw);
  return Number(raw);
}
