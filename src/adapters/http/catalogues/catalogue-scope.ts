import type { TProperties } from "@sinclair/typebox";
import { t } from "elysia";
import { CATALOGUE_NAME } from "../../../domain/api-keys.ts";
import { CatalogueNotFound } from "../../../domain/errors.ts";
import { documentedAs, problem } from "../core/route-docs.ts";

/**
 * Where the product routes (create, bulk, list, get, change, delete, search, categories) are
 * mounted: the contract's `/products…`, which are the default catalogue's, and every catalogue's
 * `/catalogues/{catalogue}/products…`, the same routes with the same answers.
 */
export const PRODUCT_PREFIXES = ["/products", "/catalogues/:catalogue/products"] as const;
export type ProductPrefix = (typeof PRODUCT_PREFIXES)[number];

/** A catalogue in a path: any text reaches the auth macro, which answers 404 for one that does not exist. */
export const CatalogueParam = documentedAs(t.String({ description: "El nombre del catálogo" }), {
  type: "string",
  pattern: CATALOGUE_NAME.source,
  description:
    "El nombre del catálogo (minúsculas, cifras, `_` y `-`, de 1 a 63). default es el de las rutas /products…",
  example: "tienda-norte",
});

/** The path parameters of a route under `prefix`: `properties`, and the catalogue when the prefix names one. */
export function pathParams<P extends TProperties>(prefix: ProductPrefix, properties: P) {
  return prefix === "/products" ? t.Object(properties) : t.Object({ catalogue: CatalogueParam, ...properties });
}

/** The path parameters of a route under `prefix` with none of its own: the catalogue, or none at all. */
export function catalogueParams(prefix: ProductPrefix) {
  return prefix === "/products" ? undefined : t.Object({ catalogue: CatalogueParam });
}

/** The plugin name of a route group under `prefix` (Elysia keeps one plugin per name). */
export function pluginName(feature: string, prefix: ProductPrefix): string {
  return prefix === "/products" ? feature : `${feature}-in-catalogue`;
}

/** An example of the 404 of a catalogue the caller cannot see, or that does not exist. */
export const CATALOGUE_NOT_FOUND_EXAMPLE = {
  "Catálogo inexistente o que no ve": new CatalogueNotFound("tienda-norte"),
};

/** The 404 of a route inside a catalogue, with `more` examples (a product that does not exist). */
export function catalogueNotFound(description = "", more: Record<string, string | Error> = {}) {
  return problem({
    description:
      `${description}${description ? " " : ""}Un catálogo que no existe, o que la credencial no ve, responde igual ` +
      "(404), como si no existiera.",
    examples: { ...more, ...CATALOGUE_NOT_FOUND_EXAMPLE },
  });
}
