import { Elysia, t } from "elysia";
import type { Authenticate } from "../../../domain/authenticate.ts";
import { InvalidCredentials, TooManyAttempts } from "../../../domain/errors.ts";
import { PASSWORD_MAX_LENGTH, USERNAME_MAX_LENGTH } from "../../../domain/user.ts";
import { mediaTypesOf, readBody } from "../core/body.ts";
import { clientAddress } from "../core/client-address.ts";
import { fieldDetail } from "../core/errors.ts";
import { answers, documented, problem, SECURITY, UNAVAILABLE } from "../core/route-docs.ts";

const LoginForm = t.Object(
  {
    username: t.String({ minLength: 1, maxLength: USERNAME_MAX_LENGTH }),
    password: t.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }),
  },
  // OAuth2 password-flow clients also send grant_type, scope, client_id...: ignored.
  { additionalProperties: true, description: "Usuario y contraseña; otros campos (grant_type, scope...) se ignoran" },
);

const TokenResponse = t.Object({
  access_token: t.String({ description: "JWT para la cabecera Authorization: Bearer <token>" }),
  token_type: t.Literal("bearer"),
  expires_in: t.Number({
    multipleOf: 1,
    minimum: 1,
    description: "Segundos de validez del token (ACCESS_TOKEN_EXPIRE_MINUTES × 60)",
  }),
});

export interface LoginRoutesDeps {
  authenticate: Authenticate;
  maxBodyBytes: number;
  /** Behind a reverse proxy: the client is the last address the proxy appended to X-Forwarded-For. */
  trustProxy: boolean;
}

/**
 * POST /auth/login: a form (or JSON) with username and password → a bearer token, with its
 * lifetime in seconds as OAuth2's `expires_in` (RFC 6749 5.1), so OAuth2 clients know when it ends.
 */
export function loginRoutes({ authenticate, maxBodyBytes, trustProxy }: LoginRoutesDeps) {
  return new Elysia({ prefix: "/auth" }).post(
    "/login",
    async ({ body: { username, password }, request, server }) => ({
      access_token: await authenticate.login({
        username,
        password,
        clientAddress: clientAddress(request, server, trustProxy),
      }),
      token_type: "bearer" as const,
      expires_in: authenticate.tokenLifetimeSeconds,
    }),
    {
      // Our reader decides; the named parsers after it never run and only tell OpenAPI the content types.
      parse: [({ request }) => readBody(request, maxBodyBytes, ["form", "json"]), "urlencoded", "formdata", "json"],
      body: LoginForm,
      response: {
        200: documented(TokenResponse, "Sesión iniciada: el token de acceso y cuántos segundos vale", {
          access_token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIiwidXNlcm5hbWUiOiJhbmEifQ.c2lnbmF0dXJh",
          token_type: "bearer",
          expires_in: 1800,
        }),
        400: answers.unreadable(["form", "json"]),
        401: problem({
          description: "Usuario o contraseña incorrectos (la misma respuesta en los dos casos).",
          examples: { "Credenciales incorrectas": new InvalidCredentials() },
          headers: ["WWW-Authenticate"],
        }),
        415: answers.unsupportedMediaType(mediaTypesOf(["form", "json"])),
        422: problem({
          description:
            "Falta el usuario o la contraseña, o no son texto de la longitud admitida: `detail` nombra el campo.",
          examples: {
            "Falta un campo": fieldDetail.missing("password"),
            "Campo no válido": fieldDetail.invalid("username", LoginForm.properties.username),
          },
        }),
        429: problem({
          description:
            "Demasiados intentos fallidos para ese usuario o desde esa dirección: se bloquea durante un tiempo; " +
            "Retry-After dice cuántos segundos.",
          examples: { "Demasiados intentos": new TooManyAttempts(900) },
          headers: ["Retry-After"],
        }),
        503: answers.unavailable(
          "La base de datos no responde: no se pudo comprobar el usuario.",
          UNAVAILABLE.database,
        ),
      },
      detail: {
        tags: ["auth"],
        summary: "Iniciar sesión y obtener un token de acceso",
        description:
          "Formulario application/x-www-form-urlencoded (o multipart, o JSON) con username y password. Devuelve un " +
          "token bearer y sus segundos de validez (expires_in). Acepta los campos que envía un cliente OAuth2 con el " +
          "flujo password (grant_type, scope, client_id...), así que sirve de tokenUrl: el botón Authorize de esta " +
          "página inicia sesión con él.",
        security: SECURITY.none,
      },
    },
  );
}
