import { Elysia, t } from "elysia";
import { filterObjectOf } from "../../../domain/attribute-filter.ts";
import type { Caller } from "../../../domain/caller.ts";
import type { ManageCatalogues } from "../../../domain/manage-catalogues.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, UNAVAILABLE } from "../core/route-docs.ts";
import type { AuthMacro } from "./auth-macro.ts";

const KINDS = ["user", "key", "tenant", "anonymous"] as const;

const CredentialView = t.Object({
  kind: t.String({
    enum: [...KINDS],
    description:
      "user: el token de un usuario que inició sesión; key: una clave de API; tenant: un token de inquilino; " +
      "anonymous: ninguna (la búsqueda está abierta a cualquiera)",
  }),
  id: t.String({
    description:
      'Quién es para los límites y los registros: "user:12", "key:<id de la clave>" o "tenant:<id de su clave>"',
  }),
  actions: t.Array(t.String(), { description: 'Lo que permite (las acciones de una clave), o ["*"] (todo)' }),
  catalogues: t.Array(t.String(), {
    description:
      "Los catálogos que existen y en los que puede buscar, por nombre (los demás no existen para ella). Una " +
      "clave que nombra un catálogo que aún no existe no lo ve aquí hasta que se crea.",
  }),
  filter: t.Union(
    [t.Object({ category: t.Optional(t.Array(t.String())) }, { additionalProperties: t.Unknown() }), t.Null()],
    {
      description:
        "El filtro que un token de inquilino aplica a cada búsqueda (una petición puede estrecharlo, nunca " +
        "ampliarlo), como lo escribe el filter de la búsqueda: category y las condiciones sobre atributos; null " +
        "para las demás credenciales",
    },
  ),
});

export interface CredentialRoutesDeps {
  manageCatalogues: ManageCatalogues;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * GET /auth/me: what the request's credential may do (its actions) and where (the catalogues it
 * may search that exist, by name), and a tenant token's filter. What a page needs to start with a
 * key or a token and no login: the search page (/ui) builds its catalogue picker from it and shows
 * only what the credential allows. Takes "search" (the least a credential the page can use holds)
 * and one unit of the search budget; it works in no catalogue. Lists the catalogues the caller can
 * see and no other: a key of one shop never learns another's name here.
 */
export function credentialRoutes({ manageCatalogues, auth, rateLimits }: CredentialRoutesDeps) {
  return new Elysia({ name: "credential", prefix: "/auth" })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .get(
      "/me",
      async ({ caller }) => ({
        kind: caller.kind,
        id: caller.id,
        actions: caller.grants === "*" ? ["*"] : [...caller.grants],
        catalogues: await manageCatalogues.names(caller),
        filter: filterView(caller),
      }),
      {
        auth: { permission: "search", inCatalogue: false },
        rateLimit: "search",
        response: {
          200: documented(CredentialView, "La credencial: qué permite y en qué catálogos", {
            kind: "tenant",
            id: "tenant:3f9a1c2b7d4e5f60",
            actions: ["search"],
            catalogues: ["tienda-norte"],
            filter: { category: ["Cocina"] },
          }),
          503: answers.unavailable("La base de datos no responde.", UNAVAILABLE.database),
        },
        detail: {
          tags: ["auth"],
          summary: "Qué permite la credencial, y en qué catálogos",
          description:
            "Para una página que busca con una clave de solo búsqueda o un token de inquilino, sin inicio de sesión: " +
            "sus acciones, los catálogos en los que puede buscar (solo los que ve y existen) y el filtro de un token " +
            "de inquilino. Gasta una búsqueda del límite de búsquedas.",
        },
      },
    );
}

/**
 * A tenant token's filter as the search request writes it (categories as a list, attribute
 * conditions as `filter`'s); null for any other caller.
 */
function filterView({ filter }: Caller): ({ category?: string[] } & Record<string, unknown>) | null {
  if (!filter) return null;
  const { category, attributes } = filter;
  return {
    ...filterObjectOf(attributes ?? []),
    ...(category === undefined ? {} : { category: typeof category === "string" ? [category] : [...category] }),
  };
}
