import { Elysia, t } from "elysia";
import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { DatabaseHealth } from "../../ports/database-health.ts";
import { ProblemBody } from "./errors.ts";

export const READY_MESSAGE = "La API de búsqueda semántica de SKU está lista y la base de datos está conectada";

/** GET /: answers only after a real round trip to the database (503 otherwise). */
export function healthRoutes({ health }: { health: DatabaseHealth }) {
  return new Elysia().get(
    "/",
    async () => {
      try {
        await health.ping();
      } catch (error) {
        throw error instanceof DatabaseUnavailable ? error : new DatabaseUnavailable(undefined, { cause: error });
      }
      return { message: READY_MESSAGE };
    },
    {
      response: { 200: t.Object({ message: t.String() }), 503: ProblemBody },
      detail: { tags: ["health"], summary: "Estado de la API y de la base de datos" },
    },
  );
}
