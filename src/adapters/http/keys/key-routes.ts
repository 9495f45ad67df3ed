import { Elysia, t } from "elysia";
import { CATALOGUE_NAME, KEY_ACTIONS, KEY_NAME_MAX_LENGTH, type ManageApiKeys } from "../../../domain/api-keys.ts";
import { ApiKeyNotFound, Forbidden, InvalidInput } from "../../../domain/errors.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { jsonBody } from "../core/body.ts";
import { fieldDetail } from "../core/errors.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, problem, UNAVAILABLE } from "../core/route-docs.ts";
import { keyView, listedKeyView } from "./key-view.ts";

export interface KeyRoutesDeps {
  manageApiKeys: ManageApiKeys;
  maxBodyBytes: number;
  auth: AuthMacro;
}

const actionsField = t.Array(t.UnionEnum([...KEY_ACTIONS]), {
  minItems: 1,
  maxItems: KEY_ACTIONS.length,
  description:
    "Lo que permite la clave: search (buscar), products.read (leer el catálogo), products.write (cambiarlo e " +
    'importar), catalogues.manage, keys.manage (gestionar claves), o "*" (todo).',
});

const cataloguesField = t.Array(t.String({ maxLength: 63 }), {
  minItems: 1,
  maxItems: 100,
  description:
    'Los catálogos que puede ver, o ["*"] (todos). Nombres: minúsculas, cifras, `_` y `-`, de 1 a 63. El catálogo ' +
    "del contrato (/products…) es default. Un catálogo que la clave no ve responde 404, como si no existiera.",
});

const expiresAtField = t.Union([t.String({ format: "date-time", maxLength: 40 }), t.Null()], {
  description: "Cuándo deja de funcionar (ISO 8601, en el futuro), o null: no caduca.",
});

const NewKey = t.Object(
  {
    name: t.String({ maxLength: KEY_NAME_MAX_LENGTH, description: "Para qué es la clave (se muestra al listarlas)" }),
    actions: actionsField,
    catalogues: cataloguesField,
    expires_at: t.Optional(expiresAtField),
  },
  {
    additionalProperties: false,
    description: "La clave que se quiere crear",
    examples: [
      { name: "Tienda: buscador", actions: ["search"], catalogues: ["default"], expires_at: null },
      { name: "ERP: sincronización", actions: ["products.read", "products.write"], catalogues: ["*"] },
    ],
  },
);

const keyFields = {
  id: t.String({ description: "El id de la clave (para borrarla)" }),
  name: t.String({ description: "Para qué es" }),
  prefix: t.String({ description: "El principio visible de la clave (sks_<id>): la reconoce sin revelarla" }),
  actions: t.Array(t.String(), { description: 'Lo que permite, o ["*"]' }),
  catalogues: t.Array(t.String(), { description: 'Los catálogos que ve, o ["*"]' }),
  expires_at: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "Cuándo caduca (null: nunca)" }),
  created_at: t.String({ format: "date-time", description: "Cuándo se creó" }),
};

const CreatedKey = t.Object({
  ...keyFields,
  key: t.String({
    description:
      "La clave, para `Authorization: Bearer <clave>` o `X-API-Key`. Solo se muestra en esta respuesta: el servicio " +
      "no la guarda (la deriva de su id y su secreto).",
  }),
});

const ListedKey = t.Object({
  ...keyFields,
  last_used_at: t.Union([t.String({ format: "date-time" }), t.Null()], {
    description: "Cuándo se usó por última vez (al minuto), o null",
  }),
});

const KeyList = t.Object({ keys: t.Array(ListedKey, { description: "Las claves, las más recientes primero" }) });

const KeyIdParams = t.Object({ id: t.String({ maxLength: 64, description: "El id de la clave" }) });

const EXAMPLE_ID = "3f9a1c2b7d4e5f60";
const KEY_EXAMPLE = {
  id: EXAMPLE_ID,
  name: "Tienda: buscador",
  prefix: `sks_${EXAMPLE_ID}`,
  actions: ["search"],
  catalogues: ["default"],
  expires_at: null,
  created_at: "2026-11-27T10:00:00.000Z",
};

const INVALID_EXPIRY = "El campo 'expires_at' debe ser una fecha ISO 8601 (o null: no caduca)";

function expiryOf(raw: string | null | undefined): Date | null {
  if (raw === undefined || raw === null) return null;
  const at = new Date(raw);
  if (Number.isNaN(at.getTime())) throw new InvalidInput(INVALID_EXPIRY);
  return at;
}

/**
 * API keys: POST /keys (201 with the key, shown only then), GET /keys (without secrets), DELETE
 * /keys/{id} (204: the key and its tenant tokens stop working on every instance). Each takes
 * "keys.manage"; a key is never given more than its creator's credential holds.
 */
export function keyRoutes({ manageApiKeys, maxBodyBytes, auth }: KeyRoutesDeps) {
  const tags = ["keys"];
  return new Elysia({ name: "keys" })
    .use(requestContext)
    .use(auth)
    .post(
      "/keys",
      async ({ body, caller, status }) => {
        const created = await manageApiKeys.create(
          {
            name: body.name,
            actions: body.actions,
            catalogues: body.catalogues,
            expiresAt: expiryOf(body.expires_at),
          },
          caller,
        );
        return status(201, { ...keyView(created.apiKey, created.prefix), key: created.key });
      },
      {
        auth: "keys.manage",
        parse: jsonBody(maxBodyBytes),
        body: NewKey,
        response: {
          201: documented(CreatedKey, "La clave creada; `key` solo aparece aquí", {
            ...KEY_EXAMPLE,
            key: `sks_${EXAMPLE_ID}_q2v8Yy0mJc3uTt6Xw1ZbN4aR7sDfGhJkLpQeWrTyUiO`,
          }),
          400: answers.unreadable(["json"]),
          403: problem({
            description:
              "La credencial no permite gestionar claves, o pide para la nueva más acciones o catálogos de los que tiene.",
            examples: {
              "Falta el permiso": new Forbidden("Su credencial no permite esta operación: hace falta 'keys.manage'"),
              "Más de lo que tiene": new Forbidden(
                "No puede crear una clave con más permisos o catálogos que los de su credencial",
              ),
            },
          }),
          415: answers.unsupportedMediaType(["application/json"]),
          422: problem({
            description: "Un campo no es válido.",
            examples: {
              "Acción desconocida": fieldDetail.invalid("actions", {}),
              "Catálogo no válido": new InvalidInput(
                "El campo 'catalogues' nombra un catálogo no válido ('Tienda'): minúsculas, cifras, '_' y '-', de 1 a 63, sin empezar por '_' ni '-'",
              ),
              "Caducidad pasada": new InvalidInput(
                "El campo 'expires_at' debe ser una fecha futura (o null: no caduca)",
              ),
              "Campo desconocido": fieldDetail.notAllowed("key"),
            },
          }),
          503: answers.unavailable("La base de datos no respondió.", UNAVAILABLE.database),
        },
        detail: {
          tags,
          summary: "Crear una clave de API",
          description:
            "Devuelve la clave una sola vez (`key`): el servicio no la guarda, la deriva de su id y de su secreto " +
            "(cambiar JWT_SECRET invalida todas las claves). Con `search` sirve también para firmar tokens de " +
            `inquilino. Los catálogos deben cumplir ${CATALOGUE_NAME.source}; pueden no existir todavía.`,
        },
      },
    )
    .get(
      "/keys",
      async () => ({
        keys: (await manageApiKeys.list()).map((apiKey) => listedKeyView(apiKey, manageApiKeys.prefixOf(apiKey.id))),
      }),
      {
        auth: "keys.manage",
        response: {
          200: documented(KeyList, "Las claves, sin su secreto", {
            keys: [{ ...KEY_EXAMPLE, last_used_at: "2026-11-27T10:05:00.000Z" }],
          }),
          503: answers.unavailable("La base de datos no respondió.", UNAVAILABLE.database),
        },
        detail: {
          tags,
          summary: "Listar las claves de API",
          description:
            "Sin el secreto de ninguna: su prefijo visible (sks_<id>) las distingue. last_used_at se escribe como " +
            "mucho una vez por minuto y clave.",
        },
      },
    )
    .delete(
      "/keys/:id",
      async ({ params, status }) => {
        await manageApiKeys.revoke(params.id);
        return status(204, undefined);
      },
      {
        auth: "keys.manage",
        params: KeyIdParams,
        response: {
          204: t.Void({ description: "Revocada; la respuesta no tiene cuerpo" }),
          404: problem({
            description: "No hay ninguna clave con ese id.",
            examples: { "Clave inexistente": new ApiKeyNotFound(EXAMPLE_ID) },
          }),
          503: answers.unavailable("La base de datos no respondió.", UNAVAILABLE.database),
        },
        detail: {
          tags,
          summary: "Revocar una clave de API",
          description:
            "La clave y todo token de inquilino firmado con ella dejan de funcionar enseguida, en todas las " +
            "instancias que comparten la base de datos.",
        },
      },
    );
}
