import type { RateLimitState } from "./rate-limit.ts";

/**
 * Typed domain errors. Only the HTTP adapter maps them to status codes and `{"detail": ...}`;
 * `message` is the Spanish text a client may see, so it never carries secrets or internals.
 */
export abstract class DomainError extends Error {
  abstract readonly kind: string;
}

/** Wrong username or password. The same error for both, so it does not reveal which. */
export class InvalidCredentials extends DomainError {
  readonly kind = "InvalidCredentials";
  constructor() {
    super("Usuario o contraseña incorrectos");
  }
}

/** Too many failed logins for a username or a client address. */
export class TooManyAttempts extends DomainError {
  readonly kind = "TooManyAttempts";
  constructor(readonly retryAfterSeconds: number) {
    super(`Demasiados intentos fallidos. Inténtelo de nuevo en ${retryAfterSeconds} segundos`);
  }
}

/** A missing, malformed, forged or expired token, or one whose user no longer exists. */
export class NotAuthenticated extends DomainError {
  readonly kind = "NotAuthenticated";
  constructor(message = "No se pudieron validar las credenciales") {
    super(message);
  }
}

/** Input that breaks a domain rule (empty after trimming, too long, ...). */
export class InvalidInput extends DomainError {
  readonly kind = "InvalidInput";
}

export class UserAlreadyExists extends DomainError {
  readonly kind = "UserAlreadyExists";
  constructor(username: string) {
    super(`El usuario '${username}' ya existe`);
  }
}

export class UserNotFound extends DomainError {
  readonly kind = "UserNotFound";
  constructor(username: string) {
    super(`El usuario '${username}' no existe`);
  }
}

/** The embedder failed or returned an unusable vector; nothing was stored. */
export class EmbeddingUnavailable extends DomainError {
  readonly kind = "EmbeddingUnavailable";
  constructor(
    message = "El servicio de embeddings no está disponible. Inténtelo de nuevo más tarde",
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** No generator of the chain could write a recommendation. */
export class GenerationUnavailable extends DomainError {
  readonly kind = "GenerationUnavailable";
  constructor(message = "Ningún proveedor pudo generar la recomendación", options?: ErrorOptions) {
    super(message, options);
  }
}

/** The database did not answer. */
export class DatabaseUnavailable extends DomainError {
  readonly kind: string = "DatabaseUnavailable";
  constructor(message = "La base de datos no está disponible", options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The database takes no writes now: a hot standby (the service started read-only), or a primary
 * lost and its standby not yet promoted. Reads and searches go on; a write may be retried.
 */
export class DatabaseReadOnly extends DatabaseUnavailable {
  override readonly kind = "DatabaseReadOnly";
  constructor(options?: ErrorOptions) {
    super(
      "La base de datos solo admite lecturas en este momento (réplica en espera o cambio de primaria en curso): " +
        "no se ha guardado nada. Inténtelo de nuevo más tarde",
      options,
    );
  }
}

/**
 * The catalogue's embeddings were moved to another model or dimension (a `reembed` run elsewhere)
 * while this process still embeds with the old one: its queries and products would not be
 * comparable with the stored vectors, so it serves neither searches nor product writes until it is
 * restarted with the new model. Nothing was stored. A DatabaseUnavailable, as to a client it is
 * one: another instance (restarted) may take the request.
 */
export class EmbeddingSpaceChanged extends DatabaseUnavailable {
  override readonly kind = "EmbeddingSpaceChanged";
  constructor(
    readonly stored: { model: string; dimension: number },
    readonly configured: { model: string; dimension: number },
  ) {
    super(
      `El catálogo ha pasado a otro modelo de embeddings («${stored.model}», ${stored.dimension} dimensiones) y ` +
        `este proceso sigue con «${configured.model}» (${configured.dimension} dimensiones): no atiende búsquedas ` +
        "ni cambios de productos hasta que se reinicie con el modelo nuevo. No se ha guardado nada",
    );
  }
}

/** The request used up its time budget before it could be answered; nothing was stored. */
export class DeadlineExceeded extends DomainError {
  readonly kind = "DeadlineExceeded";
  constructor() {
    super("La petición ha superado el tiempo máximo de respuesta. Inténtelo de nuevo más tarde");
  }
}

/** An Idempotency-Key already answered a request with a different body. */
export class IdempotencyKeyReused extends DomainError {
  readonly kind = "IdempotencyKeyReused";
  constructor() {
    super("La clave de idempotencia ya se usó con otro cuerpo de petición");
  }
}

/** No product with that id. */
export class ProductNotFound extends DomainError {
  readonly kind = "ProductNotFound";
  constructor(id: number | string) {
    const shown = String(id);
    super(`No existe ningún producto con id '${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}'`);
  }
}

/** No import job with that id belongs to the caller (another caller's is not found either). */
export class JobNotFound extends DomainError {
  readonly kind = "JobNotFound";
  constructor(id: number | string) {
    const shown = String(id);
    super(`No existe ninguna importación con id '${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}'`);
  }
}

/** Another product already has that sku. */
export class SkuTaken extends DomainError {
  readonly kind = "SkuTaken";
  constructor(sku: string) {
    super(`Ya existe otro producto con el SKU '${sku.length > 60 ? `${sku.slice(0, 60)}…` : sku}'`);
  }
}

/** The product kept changing under an update: the client may retry. */
export class ConcurrentModification extends DomainError {
  readonly kind = "ConcurrentModification";
  constructor() {
    super("El producto se ha modificado a la vez por otra petición. Inténtelo de nuevo");
  }
}

/** A client spent its request budget for the window, or what is left cannot pay the request (see rate-limit.ts). */
export class RateLimitExceeded extends DomainError {
  readonly kind = "RateLimitExceeded";
  constructor(
    /** Where the client stands: the HTTP adapter turns it into RateLimit-* and Retry-After headers. */
    readonly state: RateLimitState,
    /** What the refused request cost, in units (a bulk import costs more than one). */
    readonly cost = 1,
  ) {
    super(
      cost > 1 && state.remaining > 0
        ? `Esta petición cuesta ${cost} unidades del cupo y quedan ${state.remaining}. ` +
            `Inténtelo de nuevo en ${state.resetSeconds} segundos`
        : `Demasiadas peticiones. Inténtelo de nuevo en ${state.resetSeconds} segundos`,
    );
  }
}

/** The caller is who it says, but its credential does not grant what the route needs (a viewer writing, a search-only key reading). */
export class Forbidden extends DomainError {
  readonly kind = "Forbidden";
}

/**
 * A catalogue the caller cannot see, or that does not exist: the same answer for both, so a
 * credential limited to some catalogues learns nothing of the others.
 */
export class CatalogueNotFound extends DomainError {
  readonly kind = "CatalogueNotFound";
  constructor(name: string) {
    super(`No existe el catálogo '${name.length > 63 ? `${name.slice(0, 63)}…` : name}'`);
  }
}

/** POST /catalogues with the name of one that exists. */
export class CatalogueExists extends DomainError {
  readonly kind = "CatalogueExists";
  constructor(name: string) {
    super(`Ya existe el catálogo '${name}'`);
  }
}

/** The catalogue the contract's own routes stand for cannot be removed. */
export class CatalogueProtected extends DomainError {
  readonly kind = "CatalogueProtected";
  constructor(name: string) {
    super(`El catálogo '${name}' no se puede borrar: es el de las rutas /products`);
  }
}

/** No API key with that id. */
export class ApiKeyNotFound extends DomainError {
  readonly kind = "ApiKeyNotFound";
  constructor(id: string) {
    super(`No existe ninguna clave de API con id '${id.length > 40 ? `${id.slice(0, 40)}…` : id}'`);
  }
}
