import { Elysia, t } from "elysia";
import { CATALOGUE_NAME } from "../../../domain/api-keys.ts";
import { ATTRIBUTE_KEY, checkedEmbeddedAttributes, EMBEDDED_ATTRIBUTES_MAX } from "../../../domain/attributes.ts";
import { CatalogueExists, CatalogueNotFound, CatalogueProtected, Forbidden } from "../../../domain/errors.ts";
import { INVALID_CATALOGUE_NAME, type ManageCatalogues } from "../../../domain/manage-catalogues.ts";
import type { CatalogueSummary } from "../../../ports/catalogue-repository.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { jsonBody } from "../core/body.ts";
import { fieldDetail } from "../core/errors.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, problem, UNAVAILABLE } from "../core/route-docs.ts";
import { integer } from "../products/product-schemas.ts";
import { CatalogueParam } from "./catalogue-scope.ts";

export interface CatalogueRoutesDeps {
  manageCatalogues: ManageCatalogues;
  maxBodyBytes: number;
  auth: AuthMacro;
}

const NewCatalogue = t.Object(
  {
    name: t.String({
      maxLength: 63,
      description: `El nombre: minúsculas, cifras, \`_\` y \`-\`, de 1 a 63, sin empezar por \`_\` ni \`-\` (${CATALOGUE_NAME.source})`,
    }),
  },
  { additionalProperties: false, description: "El catálogo que se quiere crear", examples: [{ name: "tienda-norte" }] },
);

const EmbeddedAttributes = t.Array(t.String(), {
  description:
    `Los atributos que se incluyen en el texto del que se calcula el embedding de cada producto, como ` +
    `"marca: valor" tras su nombre, categoría y descripción (ninguno por defecto): hasta ${EMBEDDED_ATTRIBUTES_MAX} ` +
    `nombres de atributo (${ATTRIBUTE_KEY.source}), ordenados`,
});

const CatalogueView = t.Object({
  name: t.String({ description: "El nombre del catálogo" }),
  products: integer({ description: "Cuántos productos tiene" }),
  created_at: t.String({ format: "date-time", description: "Cuándo se creó" }),
  embedded_attributes: EmbeddedAttributes,
});

const CatalogueSettings = t.Object(
  {
    embedded_attributes: t.Array(t.String(), {
      maxItems: 100,
      description:
        `Los atributos que se incluyen en el texto de cada producto al calcular su embedding (hasta ` +
        `${EMBEDDED_ATTRIBUTES_MAX}, cada uno una vez; \`[]\`: ninguno). Los productos guardados antes quedan con el ` +
        "embedding del texto anterior hasta que se vuelven a calcular: la respuesta dice cuántos",
    }),
  },
  {
    additionalProperties: false,
    description: "Los ajustes del catálogo que se quieren cambiar",
    examples: [{ embedded_attributes: ["brand", "color"] }],
  },
);

const ConfiguredView = t.Object({
  ...CatalogueView.properties,
  stale_embeddings: integer({
    description:
      "Cuántos de sus productos tienen un embedding calculado de otro texto que el que dan ahora sus ajustes: " +
      "se recalcula en su próximo cambio o importación, o de una vez con `bun run cli reembed --catalogue <nombre>`",
  }),
});

const CatalogueList = t.Object({
  catalogues: t.Array(CatalogueView, { description: "Los catálogos que ve la credencial, por nombre" }),
});

const EXAMPLE = {
  name: "tienda-norte",
  products: 0,
  created_at: "2026-11-27T10:00:00.000Z",
  embedded_attributes: [] as string[],
};

function catalogueView(catalogue: CatalogueSummary) {
  return {
    name: catalogue.name,
    products: catalogue.products,
    created_at: catalogue.createdAt.toISOString(),
    embedded_attributes: catalogue.embeddedAttributes,
  };
}

/** The Spanish detail the domain refuses `settings` with, for the documentation's examples. */
function refusalOf(settings: unknown): string {
  try {
    checkedEmbeddedAttributes(settings);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(settings)} was accepted as embedded attributes`);
}

const UNAVAILABLE_ANSWER = answers.unavailable("La base de datos no respondió.", UNAVAILABLE.database);

/**
 * Catalogues: POST /catalogues (201, empty), GET /catalogues (with their product counts and settings),
 * PATCH /catalogues/{catalogue} (its settings: the attributes it embeds), DELETE
 * /catalogues/{catalogue} (204, its products with it; `default` cannot go: 409). Each takes
 * "catalogues.manage"; a credential limited to some catalogues lists only those, removes only those
 * (404 for the others, as if they did not exist) and creates only those (403). Each catalogue's
 * products are under /catalogues/{catalogue}/products… (catalogue-scope.ts).
 */
export function catalogueRoutes({ manageCatalogues, maxBodyBytes, auth }: CatalogueRoutesDeps) {
  const tags = ["catalogues"];
  return new Elysia({ name: "catalogues" })
    .use(requestContext)
    .use(auth)
    .post(
      "/catalogues",
      async ({ body, caller, status }) => status(201, catalogueView(await manageCatalogues.create(body.name, caller))),
      {
        auth: "catalogues.manage",
        parse: jsonBody(maxBodyBytes),
        body: NewCatalogue,
        response: {
          201: documented(CatalogueView, "El catálogo creado, vacío", EXAMPLE),
          400: answers.unreadable(["json"]),
          403: problem({
            description: "La credencial no permite gestionar catálogos, o no alcanza el catálogo que quiere crear.",
            examples: {
              "Falta el permiso": new Forbidden(
                "Su credencial no permite esta operación: hace falta 'catalogues.manage'",
              ),
              "Catálogo fuera de su alcance": new Forbidden(
                "Su credencial no alcanza el catálogo 'tienda-norte': no puede crearlo",
              ),
            },
          }),
          409: problem({
            description: "Ya existe un catálogo con ese nombre.",
            examples: { "Catálogo repetido": new CatalogueExists(EXAMPLE.name) },
          }),
          415: answers.unsupportedMediaType(["application/json"]),
          422: problem({
            description: "El nombre no es válido.",
            examples: {
              "Nombre no válido": INVALID_CATALOGUE_NAME,
              "Falta el nombre": fieldDetail.missing("name"),
              "Campo desconocido": fieldDetail.notAllowed("products"),
            },
          }),
          503: UNAVAILABLE_ANSWER,
        },
        detail: {
          tags,
          summary: "Crear un catálogo",
          description:
            "Un catálogo nuevo, vacío: sus productos, búsquedas e importaciones están en " +
            "/catalogues/{catalogue}/products…, con las mismas respuestas que /products… (que es el catálogo " +
            "default). Los SKU son únicos dentro de cada catálogo.",
        },
      },
    )
    .get(
      "/catalogues",
      async ({ caller }) => ({ catalogues: (await manageCatalogues.list(caller)).map(catalogueView) }),
      {
        auth: "catalogues.manage",
        response: {
          200: documented(CatalogueList, "Los catálogos, con cuántos productos tiene cada uno", {
            catalogues: [{ ...EXAMPLE, name: "default", products: 12430 }, EXAMPLE],
          }),
          503: UNAVAILABLE_ANSWER,
        },
        detail: {
          tags,
          summary: "Listar los catálogos",
          description: "Solo los que ve la credencial, por nombre, con su número de productos (contado al pedirlo).",
        },
      },
    )
    .patch(
      "/catalogues/:catalogue",
      async ({ params, body, caller }) => {
        const configured = await manageCatalogues.setEmbeddedAttributes(
          params.catalogue,
          body.embedded_attributes,
          caller,
        );
        return { ...catalogueView(configured), stale_embeddings: configured.staleEmbeddings };
      },
      {
        auth: "catalogues.manage",
        parse: jsonBody(maxBodyBytes),
        params: t.Object({ catalogue: CatalogueParam }),
        body: CatalogueSettings,
        response: {
          200: documented(
            ConfiguredView,
            "El catálogo con sus ajustes nuevos, y cuántos productos quedan por recalcular",
            {
              ...EXAMPLE,
              products: 1200,
              embedded_attributes: ["brand", "color"],
              stale_embeddings: 1180,
            },
          ),
          400: answers.unreadable(["json"]),
          404: problem({
            description: "No hay ningún catálogo con ese nombre, o la credencial no lo ve.",
            examples: { "Catálogo inexistente o que no ve": new CatalogueNotFound(EXAMPLE.name) },
          }),
          415: answers.unsupportedMediaType(["application/json"]),
          422: problem({
            description: "Los ajustes no son válidos.",
            examples: {
              "Nombre de atributo no válido": refusalOf(["Marca"]),
              "Demasiados atributos": refusalOf(Array.from({ length: EMBEDDED_ATTRIBUTES_MAX + 1 }, (_, i) => `a${i}`)),
              "Campo desconocido": fieldDetail.notAllowed("name"),
            },
          }),
          503: UNAVAILABLE_ANSWER,
        },
        detail: {
          tags,
          summary: "Cambiar los ajustes de un catálogo",
          description:
            "Hoy, `embedded_attributes`: los atributos cuyo valor entra en el texto del que se calcula el embedding de " +
            'cada producto ("nombre. categoría. descripción. brand: Acme. color: rojo, azul"), de modo que la búsqueda ' +
            "por significado los tiene en cuenta. Los productos creados o cambiados desde entonces se calculan con " +
            "ellos; un cambio solo de atributos recalcula el embedding solo si cambia uno de estos. Los guardados antes " +
            "conservan su embedding hasta su próximo cambio o importación, o hasta `bun run cli reembed --catalogue " +
            "<nombre>`: `stale_embeddings` dice cuántos son.",
        },
      },
    )
    .delete(
      "/catalogues/:catalogue",
      async ({ params, caller, status }) => {
        await manageCatalogues.remove(params.catalogue, caller);
        return status(204, undefined);
      },
      {
        auth: "catalogues.manage",
        params: t.Object({ catalogue: CatalogueParam }),
        response: {
          204: t.Void({ description: "Borrado, con todos sus productos; la respuesta no tiene cuerpo" }),
          404: problem({
            description: "No hay ningún catálogo con ese nombre, o la credencial no lo ve.",
            examples: { "Catálogo inexistente o que no ve": new CatalogueNotFound(EXAMPLE.name) },
          }),
          409: problem({
            description: "El catálogo default (el de /products…) no se puede borrar.",
            examples: { "Catálogo default": new CatalogueProtected("default") },
          }),
          503: UNAVAILABLE_ANSWER,
        },
        detail: {
          tags,
          summary: "Borrar un catálogo y todos sus productos",
          description:
            "Borra el catálogo con sus productos, su índice vectorial y sus importaciones. Las claves que lo nombran " +
            "no cambian: si se vuelve a crear con el mismo nombre, vuelven a verlo.",
        },
      },
    );
}
