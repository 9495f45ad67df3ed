import { Elysia } from "elysia";
import { type Authenticate, TOKEN_REFUSALS } from "../../../domain/authenticate.ts";
import { anonymousCaller, type Caller, type Permission, permits, userCaller } from "../../../domain/caller.ts";
import { NotAuthenticated } from "../../../domain/errors.ts";
import { UnreadBody } from "../core/body.ts";
import { rememberRequestCaller } from "../core/request-context.ts";
import { problem, SECURITY } from "../core/route-docs.ts";

export const MALFORMED_AUTHORIZATION = "El encabezado Authorization debe tener la forma 'Bearer <token>'";

/** The 401 of a route that needs a caller, documented with every refusal it sends. */
export const UNAUTHENTICATED = problem({
  description: "Falta el token, no es válido, ha caducado o su usuario ya no puede usarlo: inicie sesión de nuevo.",
  examples: {
    "Sin token": TOKEN_REFUSALS.missing,
    "Token no válido o caducado": TOKEN_REFUSALS.invalid,
    "Contraseña cambiada": TOKEN_REFUSALS.passwordChanged,
    "Usuario borrado": TOKEN_REFUSALS.userGone,
    "Cabecera mal formada": MALFORMED_AUTHORIZATION,
  },
  headers: ["WWW-Authenticate"],
});

export type AuthMacro = ReturnType<typeof authMacro>;

export interface AuthMacroDeps {
  authenticate: Authenticate;
  /** What anyone may do without a token (the search, with SEARCH_REQUIRES_AUTH=false). */
  anonymousPermissions: readonly Permission[];
}

/**
 * The context's body, named through a constant: Elysia reads its hooks' source to learn what they
 * use (sucrose), and a hook that writes `context.body` would make every route with the macro parse
 * a body, a DELETE's too (which ignores any).
 */
const BODY = "body";

/** What the macro reads and writes of Elysia's context. */
interface AuthContext {
  request: Request;
  body: unknown;
  caller?: Caller;
}

/**
 * The `auth` macro: each route declares the permission it needs, `{ auth: "products.write" }`,
 * and its handler takes the `caller` from Elysia's context.
 *
 * The check runs in the transform stage, the last one before validation (Elysia's `resolve` runs
 * after it): a client without the permission gets 401 before its query or body is validated, and
 * before its body is even read (a `jsonBody` route leaves it unread until here; the bulk import
 * reads its own in its handler). A permission anyone holds needs no token, and the token is then
 * not looked at. The same declaration documents the route: its security and its 401.
 */
export function authMacro({ authenticate, anonymousPermissions }: AuthMacroDeps) {
  const anonymous = anonymousCaller(anonymousPermissions);
  /**
   * Who calls, when the permission needs a caller: the user of the bearer token, who holds every
   * permission (API keys and their scopes will be checked here too); NotAuthenticated otherwise.
   * Search-only keys will also be read here from a `key` query parameter, for the routes that
   * EventSource calls (GET /products/search: it cannot send headers); a query string never reaches
   * the logs (app.ts logs the path alone), so such a key will not either.
   */
  const identify = async (request: Request): Promise<Caller> => {
    const user = await authenticate.userForToken(bearerToken(request.headers.get("authorization")));
    rememberRequestCaller(`user:${user.id}`);
    return userCaller(user);
  };

  return new Elysia({ name: "auth-macro" }).macro({
    auth: (permission: Permission) => {
      const open = permits(anonymous, permission);
      return {
        detail: { security: open ? SECURITY.none : SECURITY.token },
        ...(open ? {} : { response: { 401: UNAUTHENTICATED } }),
        async transform(context: AuthContext) {
          context.caller = open ? anonymous : await identify(context.request);
          const body = context[BODY];
          if (body instanceof UnreadBody) context[BODY] = await body.read();
        },
        // Types `caller` for the handler: what transform adds to the context is not typed.
        resolve: ({ caller }: AuthContext) => {
          if (!caller) throw new Error("the auth macro's transform did not run");
          return { caller };
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
