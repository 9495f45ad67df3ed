import { Elysia, t } from "elysia";
import type { Authenticate } from "../../domain/authenticate.ts";
import { PASSWORD_MAX_LENGTH, USERNAME_MAX_LENGTH } from "../../domain/user.ts";
import { readBody } from "./body.ts";
import { clientAddress } from "./client-address.ts";
import { ProblemBody } from "./errors.ts";

const LoginForm = t.Object(
  {
    username: t.String({ minLength: 1, maxLength: USERNAME_MAX_LENGTH }),
    password: t.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }),
  },
  // OAuth2 password-flow clients also send grant_type, scope, client_id...: ignored.
  { additionalProperties: true },
);

const TokenResponse = t.Object({ access_token: t.String(), token_type: t.Literal("bearer") });

export interface AuthRoutesDeps {
  authenticate: Authenticate;
  maxBodyBytes: number;
  /** Behind a reverse proxy: the client is the last address the proxy appended to X-Forwarded-For. */
  trustProxy: boolean;
}

/** POST /auth/login: a form (or JSON) with username and password → a bearer token. */
export function authRoutes({ authenticate, maxBodyBytes, trustProxy }: AuthRoutesDeps) {
  return new Elysia({ prefix: "/auth" }).post(
    "/login",
    async ({ body: { username, password }, request, server }) => ({
      access_token: await authenticate.login({
        username,
        password,
        clientAddress: clientAddress(request, server, trustProxy),
      }),
      token_type: "bearer" as const,
    }),
    {
      // Our reader decides; the named parsers after it never run and only tell OpenAPI the content types.
      parse: [({ request }) => readBody(request, maxBodyBytes, ["form", "json"]), "urlencoded", "formdata", "json"],
      body: LoginForm,
      response: { 200: TokenResponse, 401: ProblemBody, 422: ProblemBody, 429: ProblemBody },
      detail: {
        tags: ["auth"],
        summary: "Iniciar sesión y obtener un token de acceso",
        description:
          "Formulario application/x-www-form-urlencoded (o JSON) con username y password. " +
          "Credenciales incorrectas: 401; demasiados intentos fallidos: 429 con Retry-After.",
      },
    },
  );
}
