/**
 * How a route documents its answers, next to its code: its `security`, a `problem(...)` schema for
 * each error status (when it gives it, example bodies taken from the code that writes them, its
 * headers) and `documented(...)` for its success body. docs/openapi.ts turns them into the
 * OpenAPI document.
 */
import { type Static, type TSchema, t } from "elysia";
import { DatabaseUnavailable, DeadlineExceeded } from "../../../domain/errors.ts";
import { jsonTooDeep } from "./body.ts";
import { malformedForm, malformedJson, RETRY_AFTER_SECONDS, unsupportedMediaType } from "./errors.ts";

/** An operation's `security` (its `detail`): alternatives, any one of which is enough. */
export const SECURITY: Record<"credential" | "queryKey" | "metrics" | "none", Record<string, string[]>[]> = {
  /**
   * The token of POST /auth/login, pasted as is (bearerAuth) or obtained by Swagger UI's Authorize
   * (oauth2); an API key as a bearer (bearerKey) or in X-API-Key (apiKey); a tenant token (bearerKey too).
   */
  credential: [{ bearerAuth: [] }, { oauth2: [] }, { bearerKey: [] }, { apiKey: [] }],
  /** GET /products/search's `key` query parameter: a search-only key or a tenant token (for EventSource). */
  queryKey: [{ queryKey: [] }],
  /** GET /metrics on the service's own port: the operator's METRICS_TOKEN, not a user's. */
  metrics: [{ metricsToken: [] }],
  /** Anyone may call it. */
  none: [],
};

/** The body of every error answer. */
export const ProblemBody = t.Object({ detail: t.String({ description: "Qué ha pasado, en español" }) });

/** The headers error answers document, by name (the OpenAPI document holds each once, under components). */
export const ERROR_HEADERS = {
  "WWW-Authenticate": {
    description: "El esquema de autenticación que se espera: `Bearer`.",
    schema: { type: "string" },
    example: "Bearer",
  },
  "Retry-After": {
    description: "Segundos que conviene esperar antes de repetir la petición.",
    schema: { type: "integer", minimum: 1 },
    example: RETRY_AFTER_SECONDS.database,
  },
  Allow: {
    description: "Los métodos que admite la ruta.",
    schema: { type: "string" },
    example: "GET, HEAD, POST",
  },
} as const;

export type ErrorHeader = keyof typeof ERROR_HEADERS;

/** What a route says about one of its error statuses. */
export interface ProblemDoc {
  /** When the route gives this status. */
  description: string;
  /** Label of each case → the `detail` the service sends (an Error stands for its message). */
  examples: Record<string, string | Error>;
  /** Headers that come with it. */
  headers?: readonly ErrorHeader[];
}

/** Where a problem schema keeps its documentation until completeDocument turns it into a response. */
export const PROBLEM_DOC = "x-problem";

export interface ResolvedProblemDoc {
  description: string;
  examples: Record<string, string>;
  headers: readonly ErrorHeader[];
}

/**
 * The schema of an error status in a route's `response` map: `{"detail": string}`, documented
 * with when the route gives it, an example body for each case, and its headers.
 */
export function problem({ description, examples, headers = [] }: ProblemDoc) {
  const resolved: ResolvedProblemDoc = {
    description,
    examples: Object.fromEntries(
      Object.entries(examples).map(([label, detail]) => [label, typeof detail === "string" ? detail : detail.message]),
    ),
    headers,
  };
  return t.Object(ProblemBody.properties, { description, [PROBLEM_DOC]: resolved });
}

/** Another media type the same answer may come in (content negotiation by Accept), with an example. */
export interface AlternativeContent {
  /** What the body is in this form. */
  description: string;
  example: string;
}

/** Where a success schema keeps its other media types until completeDocument adds them to the response. */
export const ALTERNATIVES = "x-alternatives";

/** A header a success answer carries, as the OpenAPI document describes it. */
export interface HeaderDoc {
  description: string;
  schema: { type: "string" | "integer"; format?: string };
  example: string | number;
}

/** Where a success schema keeps its headers until completeDocument adds them to the response. */
export const SUCCESS_HEADERS = "x-success-headers";

/**
 * A success body's schema with the response's description and an example of it; `alternatives`:
 * the other media types the route answers in (e.g. text/event-stream), each a text with its example;
 * `headers`: the headers the answer carries (e.g. a 202's Location).
 */
export function documented<T extends TSchema>(
  schema: T,
  description: string,
  example: Static<T>,
  alternatives?: Record<string, AlternativeContent>,
  headers?: Record<string, HeaderDoc>,
): T {
  return {
    ...schema,
    description,
    examples: [example],
    ...(alternatives ? { [ALTERNATIVES]: alternatives } : {}),
    ...(headers ? { [SUCCESS_HEADERS]: headers } : {}),
  };
}

/** Where a schema keeps what the document shows instead of it, until completeDocument swaps them. */
export const DOCUMENTED_AS = "x-documented-as";

/**
 * A request value's schema that the document shows as `shown`: for a value the route reads itself,
 * with answers of its own, where Elysia's validation would answer differently (a product id in the
 * path, which is any text to the router and a 404 unless it is a positive integer; the
 * Idempotency-Key header, whose malformed value is a 400).
 */
export function documentedAs<T extends TSchema>(schema: T, shown: Record<string, unknown>): T {
  return { ...schema, [DOCUMENTED_AS]: shown };
}

/** The message of the error `refuse` throws: an example taken from the code that writes it. */
export function messageOf(refuse: () => unknown): string {
  try {
    refuse();
  } catch (error) {
    if (error instanceof Error) return error.message;
  }
  throw new Error("messageOf: nothing was refused");
}

/** Error answers that several route groups share. */
export const answers = {
  /** 400: a body that cannot be read as the Content-Type it declares. */
  unreadable: (formats: readonly ("json" | "form")[], more: Record<string, string | Error> = {}) =>
    problem({
      description:
        "El cuerpo no se puede leer: no es JSON válido (o formulario válido), o está anidado a más niveles de " +
        "los que admite.",
      examples: {
        "JSON no válido": malformedJson(),
        "Demasiado anidado": jsonTooDeep(),
        ...(formats.includes("form") ? { "Formulario no válido": malformedForm() } : {}),
        ...more,
      },
    }),
  /** 415: a Content-Type the route does not take (`accepted`: those it takes). */
  unsupportedMediaType: (accepted: readonly string[]) =>
    problem({
      description: "El Content-Type del cuerpo no es uno de los que admite la ruta; `detail` los nombra.",
      examples: { "Content-Type no admitido": unsupportedMediaType(accepted) },
    }),
  /** 503 with Retry-After: a dependency is down, or the request ran out of time. */
  unavailable: (description: string, examples: Record<string, string | Error>) =>
    problem({ description, examples, headers: ["Retry-After"] }),
};

/** Examples of 503 causes, by what failed. */
export const UNAVAILABLE = {
  database: { "Base de datos caída": new DatabaseUnavailable() },
  deadline: { "Tiempo agotado": new DeadlineExceeded() },
};

/**
 * X-Read-After (app.ts): the WAL position at or past the commit of a write, which its answer
 * carries; a read that sends it back sees that write, whichever instance serves it.
 */
export const READ_AFTER_EXAMPLE = "0/16B3748";

/** The X-Read-After of a write's answer (docs/openapi.ts adds it to every write's success). */
export const READ_AFTER_HEADER: HeaderDoc = {
  description:
    "La posición en el registro de la base de datos (WAL) de lo que guardó esta escritura, en un servicio sobre " +
    "un servidor PostgreSQL. Enviada de vuelta en X-Read-After, una lectura o búsqueda la ve, la atienda la " +
    "instancia que la atienda.",
  schema: { type: "string" },
  example: READ_AFTER_EXAMPLE,
};

/** X-Read-After as the reads (lists, products, searches) document it; app.ts reads it on every route. */
export const readAfterParameter = t.Optional(
  documentedAs(t.String(), {
    type: "string",
    pattern: "^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$",
    description:
      "Opcional. La cabecera X-Read-After de la respuesta a una escritura: la lectura ve esa escritura en " +
      "cualquier instancia (espera a que la réplica la haya aplicado, un tiempo acotado, y si no lee de la " +
      "primaria). Sin ella, cada instancia recuerda durante 30 s las escrituras de quien la llamó. Un valor " +
      "mal formado es un 400.",
    example: READ_AFTER_EXAMPLE,
  }),
);
