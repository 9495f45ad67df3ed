import { Elysia, t } from "elysia";
import { DatabaseUnavailable } from "../../../domain/errors.ts";
import type { DatabaseHealth } from "../../../ports/database-health.ts";
import type { EmbeddingSpace } from "../../../ports/embedding-space.ts";
import { HttpProblem, RETRY_AFTER_SECONDS } from "../core/errors.ts";
import { answers, SECURITY, UNAVAILABLE } from "../core/route-docs.ts";

export const READY_MESSAGE = "La API de búsqueda semántica de SKU está lista y la base de datos está conectada";
export const LIVE_MESSAGE = "El proceso está en marcha";
export const READY_PROBE_MESSAGE =
  "Lista: base de datos conectada, migraciones aplicadas y modelo de embeddings cargado";

/** What readiness needs beyond a database round trip; both are settled at startup. */
export interface StartupState {
  /** Every migration this program knows is recorded in the database (a round trip too). */
  migrationsApplied(): Promise<boolean>;
  /** The embedder can answer now (the offline model is loaded; a remote one always can). */
  embedderLoaded(): boolean;
  /** The database takes writes now (false: only hot standbys answer; searches and reads still do). Unset: always. */
  writable?(): Promise<boolean>;
  /**
   * The catalogue's embedding space and this process's, once a reembed elsewhere has moved the
   * catalogue to another model (then searches and product writes answer 503 until a restart); unset: never.
   */
  embeddingSpaceChanged?(): { stored: EmbeddingSpace; configured: EmbeddingSpace } | undefined;
}

export const READ_ONLY_PROBE_MESSAGE =
  "Lista en modo de solo lectura: búsquedas y lecturas atendidas desde una réplica en espera; las escrituras " +
  "responden 503 hasta que haya una base de datos primaria";

/** Not ready: 503 naming the part that is not, with Retry-After. */
export class NotReady extends HttpProblem {
  constructor(part: string, options?: ErrorOptions) {
    super(503, `El servicio no está listo: ${part}`, { "Retry-After": String(RETRY_AFTER_SECONDS.database) }, options);
  }
}

const message = (description: string, example: string) =>
  t.Object({ message: t.String() }, { description, examples: [{ message: example }] });

/** The part that is not ready, as NotReady's `detail` names it. */
const NOT_READY = {
  database: "la base de datos no responde",
  migrationsUnchecked: "no se pudieron comprobar las migraciones de la base de datos",
  migrationsMissing: "faltan migraciones de la base de datos",
  embedder: "el modelo de embeddings aún se está cargando",
  embeddingSpace: ({ stored, configured }: { stored: EmbeddingSpace; configured: EmbeddingSpace }) =>
    `el catálogo ha pasado a otro modelo de embeddings («${stored.model}», ${stored.dimension} dimensiones) y ` +
    `este proceso usa «${configured.model}» (${configured.dimension} dimensiones): reinícielo con el modelo nuevo`,
} as const;

/**
 * GET / (the contract's: answers only after a real round trip to the database, 503 otherwise);
 * GET /health/live (the process answers: for a liveness probe, touches nothing);
 * GET /health/ready (database round trip, migrations applied, embedder loaded: for a readiness probe).
 */
export function healthRoutes({ health, startup }: { health: DatabaseHealth; startup: StartupState }) {
  const pingDatabase = async () => {
    try {
      await health.ping();
    } catch (error) {
      throw error instanceof DatabaseUnavailable ? error : new DatabaseUnavailable(undefined, { cause: error });
    }
  };
  return new Elysia()
    .get(
      "/",
      async () => {
        await pingDatabase();
        return { message: READY_MESSAGE };
      },
      {
        response: {
          200: message("La API está lista y la base de datos responde", READY_MESSAGE),
          503: answers.unavailable("La base de datos no responde.", UNAVAILABLE.database),
        },
        detail: {
          tags: ["health"],
          summary: "Estado de la API y de la base de datos",
          description:
            "Responde 200 solo tras una consulta real a la base de datos; si no responde, 503 con Retry-After.",
          security: SECURITY.none,
        },
      },
    )
    .get("/health/live", () => ({ message: LIVE_MESSAGE }), {
      response: { 200: message("El proceso responde", LIVE_MESSAGE) },
      detail: {
        tags: ["health"],
        summary: "Vivacidad: el proceso responde",
        description: "No consulta la base de datos ni ningún proveedor: para la sonda de vivacidad de un orquestador.",
        security: SECURITY.none,
      },
    })
    .get(
      "/health/ready",
      async () => {
        try {
          await pingDatabase();
        } catch (error) {
          throw new NotReady(NOT_READY.database, { cause: error });
        }
        const applied = await startup.migrationsApplied().catch((error: unknown) => {
          throw new NotReady(NOT_READY.migrationsUnchecked, { cause: error });
        });
        if (!applied) throw new NotReady(NOT_READY.migrationsMissing);
        if (!startup.embedderLoaded()) throw new NotReady(NOT_READY.embedder);
        const spaces = startup.embeddingSpaceChanged?.();
        if (spaces) throw new NotReady(NOT_READY.embeddingSpace(spaces));
        const writable = (await startup.writable?.()) ?? true;
        return writable
          ? { message: READY_PROBE_MESSAGE, read_only: false }
          : { message: READ_ONLY_PROBE_MESSAGE, read_only: true };
      },
      {
        response: {
          200: t.Object(
            {
              message: t.String(),
              read_only: t.Boolean({
                description:
                  "true cuando la base de datos solo admite lecturas (réplica en espera, o cambio de primaria en " +
                  "curso): se atienden búsquedas y lecturas, las escrituras responden 503 con Retry-After",
              }),
            },
            {
              description: "Lista para atender peticiones",
              examples: [
                { message: READY_PROBE_MESSAGE, read_only: false },
                { message: READ_ONLY_PROBE_MESSAGE, read_only: true },
              ],
            },
          ),
          503: answers.unavailable("Aún no puede atender peticiones: `detail` nombra la parte que falla.", {
            "Base de datos caída": new NotReady(NOT_READY.database),
            "Migraciones sin comprobar": new NotReady(NOT_READY.migrationsUnchecked),
            "Migraciones pendientes": new NotReady(NOT_READY.migrationsMissing),
            "Modelo cargándose": new NotReady(NOT_READY.embedder),
            "Catálogo en otro modelo": new NotReady(
              NOT_READY.embeddingSpace({
                stored: { model: "text-embedding-3-large", dimension: 3072 },
                configured: { model: "all-MiniLM-L6-v2", dimension: 384 },
              }),
            ),
          }),
        },
        detail: {
          tags: ["health"],
          summary: "Preparación: base de datos, migraciones y modelo de embeddings",
          description:
            "200 cuando la base de datos responde, sus migraciones están aplicadas, el modelo de embeddings está " +
            "cargado y el catálogo sigue en su espacio de embeddings (read_only dice si admite escrituras); si no, " +
            "503 con Retry-After y un detail que nombra la parte que falla (un catálogo que pasó a otro modelo, " +
            "hasta que el proceso se reinicie con él).",
          security: SECURITY.none,
        },
      },
    );
}
