import { Elysia, t } from "elysia";
import { checkSynonymSets, type ManageSynonyms, SYNONYM_LIMITS } from "../../../domain/synonyms.ts";
import type { SynonymSet } from "../../../ports/synonym-store.ts";
import type { AuthMacro } from "../auth/auth-macro.ts";
import { catalogueNotFound, catalogueParams, type ProductPrefix, pluginName } from "../catalogues/catalogue-scope.ts";
import { jsonBody, mediaTypesOf } from "../core/body.ts";
import { fieldDetail } from "../core/errors.ts";
import type { RateLimits } from "../core/rate-limit.ts";
import { requestContext } from "../core/request-context.ts";
import { answers, documented, messageOf, problem, UNAVAILABLE } from "../core/route-docs.ts";

const SYNONYMS_EXAMPLE = [
  ["celular", "móvil", "smartphone"],
  ["sudadera", "buzo", "hoodie"],
  ["cama de matrimonio", "cama doble"],
];

const SynonymSets = t.Array(t.Array(t.String(), { description: "Palabras o frases equivalentes" }), {
  description:
    `Grupos de palabras o frases equivalentes (hasta ${SYNONYM_LIMITS.sets} grupos de 2 a ` +
    `${SYNONYM_LIMITS.termsPerSet} términos, de hasta ${SYNONYM_LIMITS.termLength} caracteres). Mayúsculas y ` +
    "acentos no cuentan al compararlos con la consulta.",
});

const SynonymsBody = t.Object(
  { synonyms: SynonymSets },
  { additionalProperties: false, examples: [{ synonyms: SYNONYMS_EXAMPLE }] },
);

const SynonymsResponse = t.Object({ synonyms: SynonymSets });

export interface SynonymRoutesDeps {
  /** Where they are mounted: `/products` (the default catalogue) or each catalogue's (catalogue-scope.ts). */
  prefix: ProductPrefix;
  synonyms: ManageSynonyms;
  maxBodyBytes: number;
  auth: AuthMacro;
  rateLimits: RateLimits;
}

/**
 * GET and PUT /products/synonyms: the catalogue's synonyms, as a whole. Reading takes
 * "products.read"; replacing them "products.write" and the write budget (it changes what searches
 * find, as a product write does). The same under /catalogues/{catalogue}/products/synonyms
 * (`prefix`): each catalogue has its own, which only its searches use; the catalogue is the one the
 * auth macro resolved (404 for one the credential cannot see).
 */
export function synonymRoutes({ prefix, synonyms, maxBodyBytes, auth, rateLimits }: SynonymRoutesDeps) {
  const tags = ["products"];
  const params = catalogueParams(prefix);
  return new Elysia({ name: pluginName("synonyms", prefix), prefix })
    .use(requestContext)
    .use(auth)
    .use(rateLimits)
    .get("/synonyms", async ({ catalogue }) => view(await synonyms.get(catalogue)), {
      auth: "products.read",
      params,
      response: {
        200: documented(SynonymsResponse, "Los sinónimos del catálogo (ninguno: una lista vacía)", {
          synonyms: SYNONYMS_EXAMPLE,
        }),
        404: catalogueNotFound(),
        503: answers.unavailable("La base de datos no responde.", UNAVAILABLE.database),
      },
      detail: {
        tags,
        summary: "Ver los sinónimos del catálogo",
        description:
          "Los grupos de palabras o frases que el catálogo trata como equivalentes en las búsquedas hybrid y " +
          "lexical, tal como se guardaron.",
      },
    })
    .put("/synonyms", async ({ catalogue, body }) => view(await synonyms.replace(catalogue, body.synonyms)), {
      auth: "products.write",
      rateLimit: "write",
      params,
      parse: jsonBody(maxBodyBytes),
      body: SynonymsBody,
      response: {
        200: documented(SynonymsResponse, "Los sinónimos guardados (limpios, sin términos repetidos)", {
          synonyms: SYNONYMS_EXAMPLE,
        }),
        400: answers.unreadable(["json"]),
        404: catalogueNotFound(),
        415: answers.unsupportedMediaType(mediaTypesOf(["json"])),
        422: problem({
          description: "El cuerpo no cumple el esquema o las reglas de los sinónimos: `detail` dice cuál.",
          examples: {
            "Falta la lista": fieldDetail.missing("synonyms"),
            "Grupo de un solo término": messageOf(() => checkSynonymSets([["celular"]])),
            "Término vacío": messageOf(() => checkSynonymSets([["celular", " "]])),
          },
        }),
        503: answers.unavailable("La base de datos no responde: los sinónimos no cambiaron.", UNAVAILABLE.database),
      },
      detail: {
        tags,
        summary: "Sustituir los sinónimos del catálogo",
        description:
          "Sustituye todos los grupos de sinónimos del catálogo por los enviados (una lista vacía los quita). " +
          "Se aplican al instante, sin recalcular ningún embedding: en las búsquedas hybrid y lexical, una " +
          "consulta que contiene un término de un grupo (palabras completas; mayúsculas y acentos no cuentan) " +
          "busca también los demás términos del grupo. Otras instancias del servicio los ven en 2 s como mucho.",
      },
    });
}

function view(sets: readonly SynonymSet[]) {
  return { synonyms: sets.map((set) => [...set]) };
}
