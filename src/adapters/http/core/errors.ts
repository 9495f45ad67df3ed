import { TransformDecodeCheckError } from "@sinclair/typebox/value";
import { NotFoundError, ParseError, ValidationError } from "elysia";
import {
  ApiKeyNotFound,
  CatalogueExists,
  CatalogueNotFound,
  CatalogueProtected,
  ConcurrentModification,
  DatabaseUnavailable,
  DeadlineExceeded,
  DomainError,
  EmbeddingUnavailable,
  Forbidden,
  GenerationUnavailable,
  IdempotencyKeyReused,
  InvalidCredentials,
  InvalidInput,
  JobNotFound,
  NotAuthenticated,
  ProductNotFound,
  RateLimitExceeded,
  SkuTaken,
  TooManyAttempts,
} from "../../../domain/errors.ts";
import { rateLimitHeaders } from "./rate-limit.ts";

/**
 * The one place where errors become HTTP answers: a status, a Spanish `detail` for the body
 * `{"detail": ...}`, and the headers that go with it. Nothing internal ever reaches `detail`.
 */
export interface Problem {
  status: number;
  detail: string;
  headers?: Record<string, string>;
}

/** An HTTP-level refusal raised by the adapter itself (body too large, wrong media type, bad JSON, not ready). */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly headers?: Record<string, string>,
    options?: ErrorOptions,
  ) {
    super(detail, options);
  }
}

export const INTERNAL_ERROR: Problem = { status: 500, detail: "Error interno del servidor" };

const BEARER_CHALLENGE = { "WWW-Authenticate": "Bearer" };

/**
 * Seconds a client should wait before retrying a 503: a database restart or a deadline passes in
 * seconds; a provider outage or rate limit usually lasts longer.
 */
export const RETRY_AFTER_SECONDS = { database: 5, deadline: 5, provider: 10 } as const;

/** The client went away before its answer (nginx's 499): nobody reads it, but logs should say so. */
export const CLIENT_CLOSED_REQUEST = 499;

export function toProblem(error: unknown): Problem {
  if (error instanceof DomainError) return fromDomainError(error);
  if (isAbort(error)) {
    return { status: CLIENT_CLOSED_REQUEST, detail: "El cliente cerró la conexión" };
  }
  if (error instanceof HttpProblem) return { status: error.status, detail: error.message, headers: error.headers };
  if (error instanceof ValidationError) {
    // A response that breaks its own schema is our bug, not the client's.
    return error.type === "response" ? INTERNAL_ERROR : { status: 422, detail: validationDetail(error) };
  }
  if (error instanceof TransformDecodeCheckError) {
    // A value that passed its check but not its decoding: only a request's values are decoded (an
    // answer is encoded), so it is the client's. Elysia lets this one through unwrapped (its query
    // arrays: a value checked as a string, then split and checked as a list).
    return { status: 422, detail: `Un parámetro no es válido: ${expectation(error.error.schema as FieldSchema)}` };
  }
  if (error instanceof ParseError) {
    // Errors thrown by a route's parse hook (our body readers) arrive wrapped.
    const cause = error.cause;
    if (cause instanceof DomainError || cause instanceof HttpProblem || isAbort(cause)) return toProblem(cause);
    // Anything else thrown there (the body's stream failing, ...) is ours, not the client's.
    if (cause instanceof Error && !(cause instanceof SyntaxError)) return INTERNAL_ERROR;
    return { status: 400, detail: "No se pudo leer el cuerpo de la petición" };
  }
  if (error instanceof NotFoundError) return notFound();
  return INTERNAL_ERROR;
}

function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === "AbortError";
}

function fromDomainError(error: DomainError): Problem {
  const detail = error.message;
  if (error instanceof InvalidCredentials || error instanceof NotAuthenticated) {
    return { status: 401, detail, headers: BEARER_CHALLENGE };
  }
  if (error instanceof TooManyAttempts) {
    return { status: 429, detail, headers: { "Retry-After": String(error.retryAfterSeconds) } };
  }
  if (error instanceof RateLimitExceeded) {
    return {
      status: 429,
      detail,
      headers: { ...rateLimitHeaders(error.state), "Retry-After": String(error.state.resetSeconds) },
    };
  }
  if (error instanceof InvalidInput || error instanceof IdempotencyKeyReused) return { status: 422, detail };
  if (error instanceof Forbidden) return { status: 403, detail };
  if (
    error instanceof ProductNotFound ||
    error instanceof JobNotFound ||
    error instanceof CatalogueNotFound ||
    error instanceof ApiKeyNotFound
  ) {
    return { status: 404, detail };
  }
  if (
    error instanceof SkuTaken ||
    error instanceof ConcurrentModification ||
    error instanceof CatalogueExists ||
    error instanceof CatalogueProtected
  ) {
    return { status: 409, detail };
  }
  const retryAfter =
    error instanceof DatabaseUnavailable
      ? RETRY_AFTER_SECONDS.database
      : error instanceof DeadlineExceeded
        ? RETRY_AFTER_SECONDS.deadline
        : error instanceof EmbeddingUnavailable || error instanceof GenerationUnavailable
          ? RETRY_AFTER_SECONDS.provider
          : undefined;
  if (retryAfter !== undefined) return { status: 503, detail, headers: { "Retry-After": String(retryAfter) } };
  return INTERNAL_ERROR;
}

/** 404, or 405 with `Allow` when the path exists under other methods. */
export function notFound(allowedMethods: readonly string[] = []): Problem {
  if (allowedMethods.length === 0) return { status: 404, detail: "No encontrado" };
  return {
    status: 405,
    detail: "Método no permitido",
    headers: { Allow: allowedMethods.join(", ") },
  };
}

export const payloadTooLarge = (maxBytes: number) =>
  new HttpProblem(413, `El cuerpo de la petición supera el máximo de ${maxBytes} bytes`);

export const unsupportedMediaType = (accepted: readonly string[]) =>
  new HttpProblem(415, `Tipo de contenido no admitido: use ${accepted.join(" o ")}`);

export const malformedJson = () => new HttpProblem(400, "El cuerpo de la petición no es un JSON válido");

export const malformedForm = () => new HttpProblem(400, "El formulario de la petición no es válido");

/** An X-Read-After that is not a WAL position as a write's answer gives it. */
export const invalidReadAfter = () =>
  new HttpProblem(
    400,
    "La cabecera X-Read-After no es válida: debe ser la posición que devolvió una escritura en su propia " +
      "cabecera X-Read-After (por ejemplo 0/16B3748)",
  );

export const invalidRequestUrl = () =>
  new HttpProblem(
    400,
    "La dirección de la petición no es válida: falta la cabecera Host, no es válida, o no es una ruta",
  );

/** JSON Schema keywords this adapter's body schemas use. */
export interface FieldSchema {
  type?: string;
  /** A query parameter's name (see `validationDetail`). */
  title?: string;
  /** t.Numeric's branches: a numeric string, or the number. */
  anyOf?: readonly FieldSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  enum?: readonly unknown[];
}

/** The body is not an object with the expected fields (null, an array, a string...). */
export const NOT_AN_OBJECT = "El cuerpo de la petición debe ser un objeto JSON con los campos esperados";

/**
 * The sentences of a 422 about one field, e.g. "Campo 'limit': debe ser un entero entre 1 y 50".
 * They never repeat the submitted value (it may be a password).
 */
export const fieldDetail = {
  missing: (field: string) => `Campo '${shortName(field)}': es obligatorio`,
  notAllowed: (field: string) => `Campo '${shortName(field)}': no está permitido`,
  invalid: (field: string, schema: FieldSchema) => `Campo '${shortName(field)}': ${expectation(schema)}`,
};

/** The first offending field of a failed validation, in one of fieldDetail's sentences. */
function validationDetail(error: ValidationError): string {
  if (error.type === "property") {
    // One value, refused while it was decoded (a t.Numeric query parameter out of its range): its
    // schema is at hand but not its name, which such a schema carries as its `title`.
    const schema = error.validator as unknown as { schema?: FieldSchema } & FieldSchema;
    const property = schema.schema ?? schema;
    return property.title
      ? fieldDetail.invalid(property.title, property)
      : `Un parámetro no es válido: ${expectation(property)}`;
  }
  const path = error.valueError?.path ?? "";
  const field = decodePointer(path.split("/")[1] ?? "");
  if (!field) return NOT_AN_OBJECT;
  const properties = (error.validator as { schema?: { properties?: Record<string, FieldSchema> } }).schema?.properties;
  const property = properties && Object.hasOwn(properties, field) ? properties[field] : undefined;
  if (!property) return fieldDetail.notAllowed(field);
  if (error.valueError?.value === undefined) return fieldDetail.missing(field);
  return fieldDetail.invalid(field, property);
}

function shortName(field: string): string {
  return field.length > 60 ? `${field.slice(0, 60)}…` : field;
}

function expectation(schema: FieldSchema): string {
  const number = schema.anyOf?.find((branch) => branch.type === "number" || branch.type === "integer");
  if (number) return expectation(number);
  if (schema.enum) return `debe ser uno de: ${schema.enum.join(", ")}`;
  if (schema.type === "string") {
    const { minLength, maxLength } = schema;
    if (minLength && maxLength) return `debe ser un texto de entre ${minLength} y ${maxLength} caracteres`;
    if (maxLength !== undefined) return `debe ser un texto de como máximo ${maxLength} caracteres`;
    return "debe ser un texto";
  }
  if (schema.type === "integer" || (schema.type === "number" && schema.multipleOf === 1)) {
    const { minimum, maximum } = schema;
    if (minimum !== undefined && maximum !== undefined) return `debe ser un entero entre ${minimum} y ${maximum}`;
    return "debe ser un número entero";
  }
  if (schema.type === "number") {
    const { minimum, maximum } = schema;
    if (minimum !== undefined && maximum !== undefined) return `debe ser un número entre ${minimum} y ${maximum}`;
    return "debe ser un número";
  }
  return "tiene un valor no válido";
}

/** JSON Pointer segment → property name ("~1" is "/", "~0" is "~"). */
function decodePointer(segment: string): string {
  return segment.replaceAll("~1", "/").replaceAll("~0", "~");
}
