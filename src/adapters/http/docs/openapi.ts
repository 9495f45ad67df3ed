/**
 * The OpenAPI document (GET /openapi/json) and Swagger UI (GET /openapi).
 *
 * Each route describes itself next to its code (core/route-docs.ts): `detail` (summary,
 * description), a `response` map whose error statuses are `problem(...)` schemas, which carry the
 * answer's description, headers and example bodies, and its `auth` and `rateLimit` declarations
 * (the auth macro adds the security and the 401; the rate-limit macro names its bucket).
 * @elysiajs/openapi turns the routes into a document, with the shared models (`Product`,
 * `NewProduct`, `ProductChanges`, `Problem`) once under components; `completeDocument` then writes
 * what the plugin cannot express: those error answers as responses with examples (the body a
 * `Problem`), the answers app.ts gives on any route (413, 500, and 429 with the RateLimit headers
 * of the bucket the route declared), the headers every answer carries, a 204 without a body, the
 * headers a success answer carries (`documented`'s headers: the bulk import's 202 Location) and
 * the other media types of a success answer (`documented`'s alternatives: the search's
 * text/event-stream).
 */
import { openapi } from "@elysiajs/openapi";
import { FormatRegistry } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { fullFormats } from "elysia/type-system/format";
import { RateLimitExceeded } from "../../../domain/errors.ts";
import { type RateLimitBucket, type RateLimitPolicy, rateLimitState } from "../../../domain/rate-limit.ts";
import { INTERNAL_ERROR, invalidReadAfter, invalidRequestUrl, notFound, payloadTooLarge } from "../core/errors.ts";
import { RATE_LIMIT_EXTENSION, RATE_LIMIT_UNITS_EXTENSION, rateLimitHeaders } from "../core/rate-limit.ts";
import {
  ALTERNATIVES,
  type AlternativeContent,
  DOCUMENTED_AS,
  ERROR_HEADERS,
  type HeaderDoc,
  PROBLEM_DOC,
  ProblemBody,
  READ_AFTER_HEADER,
  type ResolvedProblemDoc,
  SUCCESS_HEADERS,
} from "../core/route-docs.ts";
import { DOCS_ASSETS } from "./docs-assets.ts";

/**
 * Elysia's own checks of string formats (`t.String({ format })`), put back in TypeBox's registry.
 * Loading @elysiajs/openapi loads its Zod bridge (@sinclair/typemap), which replaces the checks of
 * the formats Zod knows (uuid, email, url, date, time, ...) with ones that build a Zod schema for
 * every value they check: in the service, 55 to 62 µs for each search answer's `search_id` (its
 * response schema is checked), some 5 % of a search's CPU at 16 concurrent searches; Elysia's
 * check is a regular expression. The document's formats are untouched (they are the schemas').
 */
function restoreElysiaFormats(): void {
  // As Elysia registers them (type-system/format): a pattern, or a function of the string.
  for (const [name, check] of Object.entries(fullFormats)) {
    if (check instanceof RegExp) FormatRegistry.Set(name, (value) => check.test(value));
    else if (typeof check === "function") FormatRegistry.Set(name, check);
  }
}
restoreElysiaFormats();

const DOCS_PATH = "/openapi";
const SPEC_PATH = `${DOCS_PATH}/json`;

export interface ApiDocsSettings {
  projectName: string;
  version: string;
  /** Largest body a path takes, in bytes (app.ts refuses a larger declared one on any route). */
  bodyLimit: (path: string) => number;
  /** The policy of a rate-limit bucket a route spends from (its `rateLimit` declaration); none: not limited. */
  rateLimitPolicy: (bucket: RateLimitBucket) => RateLimitPolicy | undefined;
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
        {
          name: "auth",
          description:
            "Inicio de sesión (usuario y contraseña a cambio de un token de acceso), y qué permite una credencial.",
        },
        {
          name: "products",
          description: "El catálogo: alta, consulta, cambios, importación, sinónimos y búsqueda semántica.",
        },
        {
          name: "catalogues",
          description:
            "Catálogos: crearlos, listarlos con sus productos y borrarlos; sus productos están en /catalogues/{catalogue}/products….",
        },
        {
          name: "analytics",
          description: "Qué se busca y qué se abre: clics y compras de los resultados, y las búsquedas que fallan.",
        },
        { name: "keys", description: "Claves de API: qué permite cada una y en qué catálogos; revocarlas." },
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
          bearerKey: {
            type: "http",
            scheme: "bearer",
            bearerFormat: "sks_… | JWT de inquilino",
            description:
              "Una clave de API (`sks_…`, de POST /keys o `keys add`) o un token de inquilino (un JWT HS256 firmado con " +
              "una clave con `search`, con `key_id`, `exp` y `filter`), en `Authorization: Bearer <clave o token>`. " +
              "Cada clave permite sus `actions` en sus `catalogues`; un token de inquilino, solo buscar, con su filtro.",
          },
          apiKey: {
            type: "apiKey",
            in: "header",
            name: "X-API-Key",
            description: "Una clave de API (`sks_…`) en la cabecera X-API-Key, en lugar de Authorization.",
          },
          queryKey: {
            type: "apiKey",
            in: "query",
            name: "key",
            description:
              "Solo en GET /products/search y GET /catalogues/{catalogue}/products/search (EventSource no puede enviar " +
              "cabeceras): una clave con actions " +
              '["search"] o un token de inquilino. Nunca se escribe en los registros.',
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
      // Every error answer's body, once in the document (completeDocument points each error answer at it).
      .model({
        Problem: t.Object(ProblemBody.properties, {
          description: 'El cuerpo de toda respuesta de error: `{"detail": "..."}`.',
        }),
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
Authorize lo pide con usuario y contraseña (flujo password de OAuth2, con client_id y client_secret vacíos). Un usuario \
admin puede todo; un viewer, buscar y leer. Las claves de API (\`POST /keys\`, \`sks_…\`) van en \
\`Authorization: Bearer\` o en \`X-API-Key\`, con sus acciones y catálogos; un token de inquilino (un JWT firmado con \
una clave, sin llamar al servicio) solo busca, con su filtro. Sin credencial válida: 401; sin el permiso: 403.

**Catálogos.** Cada catálogo (\`POST /catalogues\`) tiene sus propios productos, con las mismas rutas en \
\`/catalogues/{catalogue}/products…\`; las rutas \`/products…\` son las del catálogo \`default\`. Los SKU son únicos \
dentro de cada catálogo, y ninguna lectura ni búsqueda devuelve productos de otro. Un catálogo que no existe o que la \
credencial no ve responde 404, igual en ambos casos.

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
  parameters?: Parameter[];
  [key: string]: unknown;
}

interface Parameter {
  name?: string;
  in?: string;
  description?: string | undefined;
  schema?: ParameterSchema;
  example?: unknown;
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
  content?: Record<
    string,
    { schema?: Record<string, unknown>; examples?: Record<string, unknown>; [key: string]: unknown }
  >;
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
    // As app.ts's Allow names them: a GET answers HEAD too.
    const allowed = Object.keys(item).flatMap((method) =>
      method === "get" ? ["GET", "HEAD"] : [method.toUpperCase()],
    );
    for (const operation of Object.values(item)) {
      // The bucket the route declared (core/rate-limit.ts's macro): its policy, then out of the document.
      const bucket = operation[RATE_LIMIT_EXTENSION] as RateLimitBucket | undefined;
      const severalUnits = operation[RATE_LIMIT_UNITS_EXTENSION] === true;
      delete operation[RATE_LIMIT_EXTENSION];
      delete operation[RATE_LIMIT_UNITS_EXTENSION];
      const policy = bucket === undefined ? undefined : settings.rateLimitPolicy(bucket);
      const responses = operation.responses ?? {};
      for (const [status, response] of Object.entries(responses)) {
        const schema = response.content?.["application/json"]?.schema;
        const doc = schema?.[PROBLEM_DOC] as ResolvedProblemDoc | undefined;
        if (doc) responses[status] = toResponse(doc);
        else if (schema?.[ALTERNATIVES]) addAlternatives(response, schema);
        // The plugin writes `content: {type: "void"}` for t.Void(), which means no body at all.
        else if (isVoid(response)) delete response.content;
        if (!doc && schema?.[SUCCESS_HEADERS]) {
          for (const [name, header] of Object.entries(successHeaders(schema))) {
            headers[name] = header;
            response.headers = { ...response.headers, [name]: headerRef(name) };
          }
        }
        // Every catalogue write (the routes that spend the write budget) says where its commit is.
        if (bucket === "write" && status.startsWith("2")) {
          headers["X-Read-After"] = READ_AFTER_HEADER;
          response.headers = { ...response.headers, "X-Read-After": headerRef("X-Read-After") };
        }
      }
      for (const [status, doc] of Object.entries(appAnswers(path, allowed, policy, severalUnits, settings))) {
        const own = responses[status];
        if (own) addExamples(own, doc);
        else responses[status] = toResponse(doc);
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
        // Elysia names headers in lower case; the document as the HTTP specifications do.
        if (parameter.in === "header" && parameter.name) parameter.name = headerName(parameter.name);
        if (parameter.schema) documentParameter(parameter, parameter.schema);
        parameter.description ??= parameter.schema?.description;
      }
    }
  }
  document.components = {
    ...document.components,
    headers: { ...document.components?.headers, ...headers },
  };
  integersAsIntegers(document);
  return document;
}

/** "last-event-id" → "Last-Event-ID", "idempotency-key" → "Idempotency-Key". */
function headerName(lowerCase: string): string {
  return lowerCase
    .split("-")
    .map((word) => (word === "id" ? "ID" : `${word.charAt(0).toUpperCase()}${word.slice(1)}`))
    .join("-");
}

/** A parameter's schema as clients should see it: `documentedAs`'s, or a t.Numeric as its number. */
function documentParameter(parameter: Parameter, schema: ParameterSchema) {
  const shown = schema[DOCUMENTED_AS] as Record<string, unknown> | undefined;
  if (!shown) {
    parameter.schema = plainNumber(schema);
    return;
  }
  const { description, example, ...rest } = shown;
  parameter.schema = rest;
  if (typeof description === "string") parameter.description = description;
  if (example !== undefined) parameter.example = example;
}

/**
 * `integer` wherever a schema says `number` with `multipleOf: 1` (product-schemas.ts's `integer`:
 * Elysia's own integer type also takes numeric strings in a body), so generated clients and
 * validators see integers as integers.
 */
function integersAsIntegers(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) integersAsIntegers(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const schema = node as Record<string, unknown>;
  if (schema.type === "number" && schema.multipleOf === 1) {
    schema.type = "integer";
    delete schema.multipleOf;
  }
  for (const value of Object.values(schema)) integersAsIntegers(value);
}

/** A route's own error answer, with the examples of the app's answer of the same status added. */
function addExamples(response: ResponseObject, { description, examples }: ResolvedProblemDoc) {
  const json = response.content?.["application/json"];
  if (!json?.examples) return;
  response.description = `${response.description} O bien: ${description}`;
  for (const [label, detail] of Object.entries(examples))
    json.examples[slug(label)] = { summary: label, value: { detail } };
}

/**
 * The answers app.ts itself may give on any operation, whatever its route says; `allowed`: the
 * methods of the operation's path (its 405 names them); `severalUnits`: the route spends several
 * units of its budget (its 429 may say they do not fit).
 */
function appAnswers(
  path: string,
  allowed: readonly string[],
  policy: RateLimitPolicy | undefined,
  severalUnits: boolean,
  settings: ApiDocsSettings,
): Record<string, ResolvedProblemDoc> {
  const limit = settings.bodyLimit(path);
  const answers: Record<string, ResolvedProblemDoc> = {
    400: {
      description:
        "La dirección de la petición no es válida: sin cabecera Host (HTTP/1.0 puede omitirla) o con una que no " +
        "es un host, o un destino que no es una ruta (CONNECT); o la cabecera X-Read-After no es una posición " +
        "como la que devuelve una escritura.",
      examples: {
        "Dirección no válida": invalidRequestUrl().message,
        "X-Read-After no válida": invalidReadAfter().message,
      },
      headers: [],
    },
    405: {
      description: `La ruta existe pero no con el método de la petición: \`Allow\` nombra los que admite (${allowed.join(", ")}).`,
      examples: { "Método no permitido": notFound(allowed).detail },
      headers: ["Allow"],
    },
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
        "El cliente agotó su cupo de peticiones de la ventana (por usuario cuando hay token; si no, por dirección)" +
        (severalUnits ? ", o lo que queda no cubre lo que cuesta la petición (entonces no se gasta nada)" : "") +
        ". Retry-After y RateLimit-Reset dicen cuándo vuelve a tenerlo.",
      examples: {
        "Cupo agotado": new RateLimitExceeded(spent).message,
        ...(severalUnits
          ? {
              "No cabe en lo que queda": new RateLimitExceeded(
                rateLimitState(policy, policy.limit - 1, policy.windowMs, false),
                Math.min(2, policy.limit),
              ).message,
            }
          : {}),
      },
      headers: ["Retry-After"],
    };
  }
  return answers;
}

/** The headers a success answer carries (see `documented`), taken out of its schema. */
function successHeaders(schema: Record<string, unknown>): Record<string, HeaderDoc> {
  const headers = schema[SUCCESS_HEADERS] as Record<string, HeaderDoc>;
  delete schema[SUCCESS_HEADERS];
  return headers;
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
