import { type DocumentDecoration, Elysia } from "elysia";
import { type Authenticate, TOKEN_REFUSALS } from "../../../domain/authenticate.ts";
import { type AuthenticateKeys, KEY_REFUSALS } from "../../../domain/authenticate-keys.ts";
import {
  allows,
  anonymousCaller,
  CATALOGUE_PERMISSIONS,
  type Caller,
  canSeeCatalogue,
  DEFAULT_CATALOGUE,
  type Permission,
  userCaller,
} from "../../../domain/caller.ts";
import { CatalogueNotFound, Forbidden, NotAuthenticated } from "../../../domain/errors.ts";
import { UnreadBody } from "../core/body.ts";
import { rememberRequestCaller, rememberRequestCatalogue } from "../core/request-context.ts";
import { problem, SECURITY } from "../core/route-docs.ts";

export const MALFORMED_AUTHORIZATION = "El encabezado Authorization debe tener la forma 'Bearer <token>'";
export const TWO_CREDENTIALS = "Envíe una sola credencial: Authorization, X-API-Key o el parámetro key";
export const NOT_A_KEY = "El encabezado X-API-Key debe llevar una clave de API (empieza por 'sks_')";
export const QUERY_KEY_ONLY = "El parámetro key solo admite una clave de API o un token de inquilino";
export const QUERY_KEY_SEARCH_ONLY =
  'Una clave en la URL queda en historiales y registros: el parámetro key solo admite claves con actions ["search"] ' +
  "y tokens de inquilino";

/** The 403 of a credential that lacks the route's permission. */
export const forbidden = (permission: Permission) =>
  new Forbidden(`Su credencial no permite esta operación: hace falta '${permission}'`);

/** The 401 of a route that needs a caller, documented with every refusal it sends. */
export const UNAUTHENTICATED = problem({
  description:
    "Falta la credencial, no es válida o ya no lo es: un token caducado o de un usuario cambiado o borrado, una clave " +
    "revocada o caducada, un token de inquilino mal firmado, caducado o de una clave revocada.",
  examples: {
    "Sin credencial": TOKEN_REFUSALS.missing,
    "Token no válido o caducado": TOKEN_REFUSALS.invalid,
    "Contraseña o rol cambiados": TOKEN_REFUSALS.passwordChanged,
    "Usuario borrado": TOKEN_REFUSALS.userGone,
    "Cabecera mal formada": MALFORMED_AUTHORIZATION,
    "Clave desconocida o revocada": KEY_REFUSALS.unknown,
    "Clave caducada": KEY_REFUSALS.expired,
    "Token de inquilino no válido": KEY_REFUSALS.tenantInvalid,
    "Clave del token revocada": KEY_REFUSALS.parentGone,
    "Dos credenciales": TWO_CREDENTIALS,
  },
  headers: ["WWW-Authenticate"],
});

/** The 403 of a route whose permission a credential may lack. */
export const forbiddenAnswer = (permission: Permission) =>
  problem({
    description:
      "La credencial es válida pero no permite esta operación (un usuario viewer que escribe, una clave sin esta " +
      "acción, un token de inquilino fuera de la búsqueda).",
    examples: { "Falta el permiso": forbidden(permission) },
  });

/** Where an operation names the permission it needs, in the OpenAPI document too. */
export const PERMISSION_EXTENSION = "x-permission";

/**
 * What a route declares: its permission; whether its credential may come in the `key` query
 * parameter; and, for a route of a catalogue's permission that works in no catalogue (GET
 * /auth/me), `inCatalogue: false` (without it, such a route is the default catalogue's).
 */
export type AuthDeclaration = Permission | { permission: Permission; keyInQuery?: true; inCatalogue?: false };

export type AuthMacro = ReturnType<typeof authMacro>;

export interface AuthMacroDeps {
  authenticate: Authenticate;
  keys: AuthenticateKeys;
  /** What anyone may do without a credential (the search, with SEARCH_REQUIRES_AUTH=false). */
  anonymousPermissions: readonly Permission[];
  /** Whether a catalogue exists (ManageCatalogues.exists): a route inside one that does not answers 404. */
  catalogueExists: (name: string) => Promise<boolean>;
}

/**
 * The context's body, named through a constant: Elysia reads its hooks' source to learn what they
 * use (sucrose), and a hook that writes `context.body` would make every route with the macro parse
 * a body, a DELETE's too (which ignores any).
 */
const BODY = "body";

/** The query parameter GET /products/search takes a search-only key or tenant token in (EventSource sends no headers). */
export const QUERY_KEY = "key";

/** What the macro reads and writes of Elysia's context. */
interface AuthContext {
  request: Request;
  body: unknown;
  query: Record<string, unknown>;
  params: unknown;
  caller?: Caller;
  catalogue?: string;
}

/**
 * The `auth` macro: each route declares the permission it needs, `{ auth: "products.write" }`,
 * and its handler takes the `caller` from Elysia's context.
 *
 * Credentials: `Authorization: Bearer <token>` (a login token, an API key `sks_…`, or a tenant
 * token: a JWT naming a `key_id`), `X-API-Key: <key>`, or, on a route declared `keyInQuery`
 * (GET /products/search, which EventSource calls and cannot give headers), a search-only key or a
 * tenant token in the `key` query parameter, taken out of the query before it is validated; a query
 * string never reaches the logs (app.ts logs the path alone). One credential at a time.
 *
 * The check runs in the transform stage, the last one before validation (Elysia's `resolve` runs
 * after it): 401 for no credential or a bad one, then 404 for a catalogue the caller cannot see (as
 * if it did not exist), then 403 for a credential without the permission; all before the query or
 * body is validated, and before the body is even read (a `jsonBody` route leaves it unread until
 * here; the bulk import reads its own in its handler). A permission anyone holds needs no
 * credential; one sent is checked all the same (its key's budget, its tenant filter apply). The
 * same declaration documents the route: its security, its 401 and 403.
 */
export function authMacro({ authenticate, keys, anonymousPermissions, catalogueExists }: AuthMacroDeps) {
  const anonymous = anonymousCaller(anonymousPermissions);

  /** The caller a credential stands for, or NotAuthenticated. */
  const callerOf = async (credential: string): Promise<Caller> => {
    if (keys.isKey(credential)) return keys.callerForKey(credential);
    if (keys.isTenantToken(credential)) return keys.callerForTenantToken(credential);
    return userCaller(await authenticate.userForToken(credential));
  };

  /** The caller of the request's one credential, or undefined; NotAuthenticated when malformed or more than one. */
  const credentialOf = async (
    request: Request,
    query: Record<string, unknown> | undefined,
    keyInQuery: boolean,
  ): Promise<Caller | undefined> => {
    const bearer = bearerToken(request.headers.get("authorization"));
    const apiKey = request.headers.get("x-api-key")?.trim() || undefined;
    let inQuery: string | undefined;
    if (keyInQuery && query && QUERY_KEY in query) {
      const value = query[QUERY_KEY];
      delete query[QUERY_KEY];
      inQuery = typeof value === "string" && value !== "" ? value : "";
    }
    const sent = [bearer, apiKey, inQuery].filter((credential) => credential !== undefined);
    if (sent.length > 1) throw new NotAuthenticated(TWO_CREDENTIALS);
    if (apiKey !== undefined && !keys.isKey(apiKey)) throw new NotAuthenticated(NOT_A_KEY);
    if (inQuery !== undefined && !keys.isKey(inQuery) && !keys.isTenantToken(inQuery)) {
      throw new NotAuthenticated(QUERY_KEY_ONLY);
    }
    const credential = sent[0];
    if (credential === undefined) return undefined;
    const caller = await callerOf(credential);
    if (inQuery !== undefined && !(caller.grants !== "*" && caller.grants.every((grant) => grant === "search"))) {
      throw new Forbidden(QUERY_KEY_SEARCH_ONLY);
    }
    return caller;
  };

  return new Elysia({ name: "auth-macro" }).macro({
    auth: (declaration: AuthDeclaration) => {
      const permission = typeof declaration === "string" ? declaration : declaration.permission;
      const keyInQuery = typeof declaration !== "string" && declaration.keyInQuery === true;
      const open = allows(anonymous, permission);
      const inCatalogue =
        CATALOGUE_PERMISSIONS.includes(permission) &&
        (typeof declaration === "string" || declaration.inCatalogue !== false);
      return {
        detail: {
          // An open route takes no credential (`{}`), or any of them, checked as anywhere else.
          security: [
            ...(open ? SECURITY.none.concat([{}]) : []),
            ...SECURITY.credential,
            ...(keyInQuery ? SECURITY.queryKey : []),
          ],
          // What a key needs among its actions for this operation (and what the attack suite reads).
          [PERMISSION_EXTENSION]: permission,
        } as DocumentDecoration,
        // Open routes too: a credential sent there is checked all the same.
        response: { 401: UNAUTHENTICATED, 403: forbiddenAnswer(permission) },
        async transform(context: AuthContext) {
          // Named one by one: Elysia reads which parts of the context a hook uses (see BODY).
          const { request, query, params } = context;
          const caller = (await credentialOf(request, query, keyInQuery)) ?? anonymous;
          if (caller.kind === "anonymous" && !open) throw new NotAuthenticated(TOKEN_REFUSALS.missing);
          if (caller.kind !== "anonymous") rememberRequestCaller(caller.id);
          // The catalogue step: the path's catalogue (`/catalogues/:catalogue/products…`), or the
          // default one for the contract's `/products…`. One the caller cannot see and one that does
          // not exist answer the same 404, before the permission is looked at.
          const catalogue = (params as { catalogue?: string } | undefined)?.catalogue ?? DEFAULT_CATALOGUE;
          if (inCatalogue) {
            if (!canSeeCatalogue(caller, catalogue) || !(await catalogueExists(catalogue))) {
              throw new CatalogueNotFound(catalogue);
            }
            rememberRequestCatalogue(catalogue);
            context.catalogue = catalogue;
          }
          if (!allows(caller, permission)) throw forbidden(permission);
          context.caller = caller;
          const body = context[BODY];
          if (body instanceof UnreadBody) context[BODY] = await body.read();
        },
        // Types `caller` and `catalogue` for the handler: what transform adds to the context is not
        // typed. `catalogue`: the one a route inside a catalogue works in (the default one elsewhere).
        resolve: ({ caller, catalogue }: AuthContext) => {
          if (!caller) throw new Error("the auth macro's transform did not run");
          return { caller, catalogue: catalogue ?? DEFAULT_CATALOGUE };
        },
      };
    },
  });
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive); undefined without one. */
function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) throw new NotAuthenticated(MALFORMED_AUTHORIZATION);
  return match[1];
}
