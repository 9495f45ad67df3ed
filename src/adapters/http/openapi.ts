/**
 * The OpenAPI document (GET /openapi/json) and Swagger UI (GET /openapi).
 *
 * Each route describes itself next to its code: `detail` (summary, description, `security`) and a
 * `response` map whose error statuses are `problem(...)` schemas, which carry the answer's
 * description, headers and example bodies. @elysiajs/openapi turns the routes into a document;
 * `completeDocument` then writes what the plugin cannot express: those error answers as responses
 * with examples (the body as one shared `Problem` schema), the answers app.ts gives on any route
 * (413, 429 where a rate limit applies, 500), the headers every answer carries, a 204 without a
 * body, and the other media types of a success answer (`documented`'s alternatives: the search's
 * text/event-stream).
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia, type Static, type TSchema, t } from "elysia";
import { DatabaseUnavailable, DeadlineExceeded, RateLimitExceeded } from "../../domain/errors.ts";
import { type RateLimitPolicy, rateLimitState } from "../../domain/rate-limit.ts";
import { jsonTooDeep } from "./body.ts";
import { DOCS_ASSETS } from "./docs-assets.ts";
import {
  INTERNAL_ERROR,
  malformedForm,
  malformedJson,
  payloadTooLarge,
  RETRY_AFTER_SECONDS,
  unsupportedMediaType,
} from "./errors.ts";
import { rateLimitHeaders } from "./rate-limit.ts";

const DOCS_PATH = "/openapi";
const SPEC_PATH = `${DOCS_PATH}/json`;

/** An operation's `security` (its `detail`): alternatives, any one of which is enough. */
export const SECURITY: Record<"token" | "metrics" | "none", Record<string, string[]>[]> = {
  /** The token of POST /auth/login, pasted as is (bearerAuth) or obtained by Swagger UI's Authorize (oauth2). */
  token: [{ bearerAuth: [] }, { oauth2: [] }],
  /** GET /metrics on the service's own port: the operator's METRICS_TOKEN, not a user's. */
  metrics: [{ metricsToken: [] }],
  /** Anyone may call it. */
  none: [],
};

/** The body of every error answer. */
const ProblemBody = t.Object({ detail: t.String({ description: "Qué ha pasado, en español" }) });

/** The headers error answers document, by name (the OpenAPI document holds each once, under components). */
const ERROR_HEADERS = {
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
} as const;

type ErrorHeader = keyof typeof ERROR_HEADERS;

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
const PROBLEM_DOC = "x-problem";

interface ResolvedProblemDoc {
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
const ALTERNATIVES = "x-alternatives";

/**
 * A success body's schema with the response's description and an example of it; `alternatives`:
 * the other media types the route answers in (e.g. text/event-stream), each a text with its example.
 */
export function documented<T extends TSchema>(
  schema: T,
  description: string,
  example: Static<T>,
  alternatives?: Record<string, AlternativeContent>,
): T {
  return { ...schema, description, examples: [example], ...(alternatives ? { [ALTERNATIVES]: alternatives } : {}) };
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

export interface ApiDocsSettings {
  projectName: string;
  version: string;
  /** Largest body a path takes, in bytes (app.ts refuses a larger declared one on any route). */
  bodyLimit: (path: string) => number;
  /** The rate-limit policy an operation spends from (`route` as Elysia writes it: /products/:id); none: not limited. */
  rateLimitPolicy: (method: string, route: string) => RateLimitPolicy | undefined;
  /** GET /metrics is served on this port (behind METRICS_TOKEN): its scheme and tag are documented. */
  metrics: boolean;
}

/** GET /openapi (Swagger UI, its files served by docs-assets.ts) and GET /openapi/json (the document). */
export function apiDocs(settings: ApiDocsSettings) {
  const completed = new WeakMap<object, OpenApiDocument>();
  const plugin = openapi({
    path: DOCS_PATH,
    specPath: SPEC_PATH,
    // Swagger UI from this server (docs-assets.ts), not a CDN: the page works offline.
    provider: "swagger-ui",
    swagger: {
      cdn: DOCS_ASSETS.script,
      theme: DOCS_ASSETS.stylesheet,
      // No badge fetched from swagger.io's online validator.
      validatorUrl: "none",
    },
    documentation: {
      info: {
        title: settings.projectName,
        version: settings.version,
        description: DESCRIPTION,
        license: { name: "MIT", identifier: "MIT" },
      },
      servers: [{ url: "/", description: "Este mismo servidor" }],
      tags: [
        { name: "health", description: "Si la API responde y si puede atender peticiones." },
        { name: "auth", description: "Inicio de sesión: usuario y contraseña a cambio de un token de acceso." },
        { name: "products", description: "El catálogo: alta, consulta, cambios, importación y búsqueda semántica." },
        ...(settings.metrics ? [METRICS_TAG] : []),
      ],
      components: {
        securitySchemes: {
          ...(settings.metrics ? { metricsToken: METRICS_SCHEME } : {}),
          bearerAuth: {
            type: "http",
            scheme: "bearer",
            bearerFormat: "JWT",
            description: "El access_token de POST /auth/login, en `Authorization: Bearer <token>`.",
          },
          oauth2: {
            type: "oauth2",
            description:
              "El mismo token, pedido a POST /auth/login con usuario y contraseña (flujo password de OAuth2). " +
              "En Swagger UI: Authorize, username y password; client_id y client_secret se dejan vacíos.",
            flows: { password: { tokenUrl: "/auth/login", scopes: {} } },
          },
        },
      },
    },
  });
  return (
    new Elysia()
      // The plugin builds the document (and caches it); it is completed once per version it builds.
      .onAfterHandle(({ route, responseValue }) => {
        if (route !== SPEC_PATH || !isDocument(responseValue)) return;
        let document = completed.get(responseValue);
        if (!document) {
          document = completeDocument(responseValue, settings);
          completed.set(responseValue, document);
        }
        return document;
      })
      .use(plugin)
  );
}

const METRICS_TAG = { name: "metrics", description: "Métricas del servicio para Prometheus (para quien lo opera)." };

const METRICS_SCHEME = {
  type: "http" as const,
  scheme: "bearer",
  description:
    "El token de métricas del servicio (METRICS_TOKEN), en `Authorization: Bearer <token>`; no sirve el de un " +
    "usuario.",
};

const DESCRIPTION = `Catálogo de productos con búsqueda semántica: una consulta en lenguaje natural encuentra los productos \
más parecidos por significado (no por palabras clave), y un modelo de lenguaje escribe una recomendación a partir de \
ellos.

**Autenticación.** \`POST /auth/login\` (formulario con \`username\` y \`password\`) devuelve un token JWT de tipo bearer, \
válido durante \`expires_in\` segundos; se envía en \`Authorization: Bearer <token>\`. En esta página, el botón \
Authorize lo pide con usuario y contraseña (flujo password de OAuth2, con client_id y client_secret vacíos).

**Errores.** Todo error responde \`{"detail": "..."}\` con una explicación en español. Cada respuesta lleva \
\`X-Request-Id\` (el de la petición cuando es válido): cítelo al informar de un problema. Un método que la ruta no \
admite responde 405 con \`Allow\`.

**Límites.** Las búsquedas y las escrituras del catálogo tienen un cupo por cliente (cabeceras \`RateLimit-*\`; al \
agotarlo, 429 con \`Retry-After\`), y los cuerpos un tamaño máximo (413).`;

// The parts of an OpenAPI document completeDocument reads and writes.
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown>; headers?: Record<string, unknown> };
  [key: string]: unknown;
}

interface Operation {
  responses?: Record<string, ResponseObject>;
  parameters?: { description?: string | undefined; schema?: ParameterSchema }[];
  [key: string]: unknown;
}

interface ParameterSchema {
  description?: string;
  anyOf?: ParameterSchema[];
  type?: string;
  format?: string;
  multipleOf?: number;
  [key: string]: unknown;
}

interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Record<string, unknown>; [key: string]: unknown }>;
}

function isDocument(value: unknown): value is OpenApiDocument {
  return typeof value === "object" && value !== null && "paths" in value && "openapi" in value;
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** The header every answer carries (app.ts sets it first thing). */
const COMMON_HEADERS = {
  "X-Request-Id": {
    description: "El identificador de la petición: el X-Request-Id que envió el cliente si es válido, o uno nuevo.",
    schema: { type: "string" },
    example: "4f1c2e9a-7b3d-4c8e-9f0a-1b2c3d4e5f60",
  },
};

function rateLimitHeaderDocs(policy: RateLimitPolicy) {
  // A client's first request of a window, as its answer's headers say it.
  const example = rateLimitHeaders(rateLimitState(policy, 1, policy.windowMs));
  const header = (description: string, name: keyof typeof example, type: "integer" | "string") => ({
    description,
    schema: { type },
    example: type === "integer" ? Number(example[name]) : example[name],
  });
  return {
    "RateLimit-Limit": header("Peticiones que admite la ventana.", "RateLimit-Limit", "integer"),
    "RateLimit-Remaining": header("Peticiones que quedan en la ventana actual.", "RateLimit-Remaining", "integer"),
    "RateLimit-Reset": header("Segundos hasta que empieza la ventana siguiente.", "RateLimit-Reset", "integer"),
    "RateLimit-Policy": header("La política: `<límite>;w=<segundos de la ventana>`.", "RateLimit-Policy", "string"),
  };
}

/** The plugin's document, finished: see the module's comment. Returns a new object. */
function completeDocument(generated: OpenApiDocument, settings: ApiDocsSettings): OpenApiDocument {
  const document = structuredClone(generated);
  const headers: Record<string, unknown> = { ...COMMON_HEADERS };
  const toResponse = (doc: ResolvedProblemDoc) => {
    for (const name of doc.headers) headers[name] = ERROR_HEADERS[name];
    return problemResponse(doc);
  };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const policy = settings.rateLimitPolicy(method.toUpperCase(), path.replace(/\{([^}]+)\}/g, ":$1"));
      const responses = operation.responses ?? {};
      for (const [status, response] of Object.entries(responses)) {
        const schema = response.content?.["application/json"]?.schema;
        const doc = schema?.[PROBLEM_DOC] as ResolvedProblemDoc | undefined;
        if (doc) responses[status] = toResponse(doc);
        else if (schema?.[ALTERNATIVES]) addAlternatives(response, schema);
        // The plugin writes `content: {type: "void"}` for t.Void(), which means no body at all.
        else if (isVoid(response)) delete response.content;
      }
      for (const [status, doc] of Object.entries(appAnswers(path, policy, settings))) {
        responses[status] ??= toResponse(doc);
      }
      // The rate-limit headers are set once the request is counted: on its success, and on the 429 that refuses it.
      const rateLimitRefs: Record<string, unknown> = {};
      if (policy) {
        for (const [name, header] of Object.entries(rateLimitHeaderDocs(policy))) {
          headers[name] = header;
          rateLimitRefs[name] = headerRef(name);
        }
      }
      for (const [status, response] of Object.entries(responses)) {
        const counted = status.startsWith("2") || status === "429";
        response.headers = {
          ...response.headers,
          "X-Request-Id": headerRef("X-Request-Id"),
          ...(counted ? rateLimitRefs : {}),
        };
      }
      operation.responses = responses;
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema) parameter.schema = plainNumber(parameter.schema);
        parameter.description ??= parameter.schema?.description;
      }
    }
  }
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, Problem: problemSchema() },
    headers: { ...document.components?.headers, ...headers },
  };
  return document;
}

/** The answers app.ts itself may give on any operation, whatever its route says. */
function appAnswers(
  path: string,
  policy: RateLimitPolicy | undefined,
  settings: ApiDocsSettings,
): Record<string, ResolvedProblemDoc> {
  const limit = settings.bodyLimit(path);
  const answers: Record<string, ResolvedProblemDoc> = {
    413: {
      description: `El cuerpo supera el máximo de ${limit} bytes; si Content-Length ya lo dice, se rechaza sin leerlo.`,
      examples: { "Cuerpo demasiado grande": payloadTooLarge(limit).message },
      headers: [],
    },
    500: {
      description: "Un fallo inesperado del servidor. El registro lo guarda con el X-Request-Id de la respuesta.",
      examples: { "Error interno": INTERNAL_ERROR.detail },
      headers: [],
    },
  };
  if (policy) {
    const spent = rateLimitState(policy, policy.limit + 1, policy.windowMs);
    answers[429] = {
      description:
        "El cliente agotó su cupo de peticiones de la ventana (por usuario cuando hay token; si no, por dirección). " +
        "Retry-After y RateLimit-Reset dicen cuándo vuelve a tenerlo.",
      examples: { "Cupo agotado": new RateLimitExceeded(spent).message },
      headers: ["Retry-After"],
    };
  }
  return answers;
}

function problemResponse({ description, examples, headers }: ResolvedProblemDoc): ResponseObject {
  return {
    description,
    headers: Object.fromEntries(headers.map((name) => [name, headerRef(name)])),
    content: {
      "application/json": {
        schema: { $ref: "#/components/schemas/Problem" },
        examples: Object.fromEntries(
          Object.entries(examples).map(([label, detail]) => [slug(label), { summary: label, value: { detail } }]),
        ),
      },
    },
  };
}

/** The other media types of a success answer (see `documented`), as content beside its JSON. */
function addAlternatives(response: ResponseObject, schema: Record<string, unknown>) {
  const alternatives = schema[ALTERNATIVES] as Record<string, AlternativeContent>;
  delete schema[ALTERNATIVES];
  for (const [mediaType, { description, example }] of Object.entries(alternatives)) {
    response.content = { ...response.content, [mediaType]: { schema: { type: "string", description }, example } };
  }
}

function problemSchema() {
  return { ...ProblemBody, description: 'El cuerpo de toda respuesta de error: `{"detail": "..."}`.' };
}

/**
 * t.Numeric's schema, `anyOf: [{type: string, format: numeric, default: 0}, {type: number, ...}]`,
 * as the number it stands for: the string branch is how Elysia reads a query string, and its
 * default 0 made Swagger UI's "Try it out" send limit=0.
 */
function plainNumber(schema: ParameterSchema): ParameterSchema {
  const number = schema.anyOf?.find((branch) => branch.type === "number" || branch.type === "integer");
  const numericString = schema.anyOf?.some((branch) => branch.type === "string" && branch.format === "numeric");
  if (!number || !numericString || schema.anyOf?.length !== 2) return schema;
  const { multipleOf, ...rest } = number;
  return multipleOf === 1 ? { ...rest, type: "integer" } : number;
}

function isVoid(response: ResponseObject): boolean {
  const type = (response.content as { type?: unknown } | undefined)?.type;
  return type === "void" || type === "null" || type === "undefined";
}

/** "Token caducado" → "token-caducado": an example's key. */
function slug(label: string): string {
  return label
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
}
