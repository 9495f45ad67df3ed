/**
 * A product as the HTTP API writes and reads it, shared by the catalogue's routes, the search
 * (its results) and the bulk import (its items): the fields, the `Product`, `NewProduct` and
 * `ProductChanges` models (registered once, `productModels`), the examples of the OpenAPI
 * document and the view of a stored product.
 */
import { Elysia, t } from "elysia";
import { FILTER_LIMITS } from "../../../domain/attribute-filter.ts";
import { ATTRIBUTE_LIMITS } from "../../../domain/attributes.ts";
import { InvalidInput } from "../../../domain/errors.ts";
import { MAX_CATEGORIES } from "../../../domain/manage-products.ts";
import { PRODUCT_FIELD_MAX_LENGTH, type Product } from "../../../domain/product.ts";

/** Elysia's t.Integer also takes numeric strings ("5"); a number that is a multiple of 1 does not. */
export function integer(options: Parameters<typeof t.Number>[0] = {}) {
  return t.Number({ multipleOf: 1, ...options });
}

/** What each field of a product is, in the OpenAPI document. */
const FIELD_DESCRIPTIONS = {
  name: "Nombre del producto",
  description: "Descripción detallada; con el nombre, es el texto del que se calcula el embedding",
  category: "Categoría, texto libre (GET /products/categories da las que hay)",
} as const;

/** A text field of a product as a client sends it, at most its stored length. */
export const field = (name: keyof typeof FIELD_DESCRIPTIONS, description: string = FIELD_DESCRIPTIONS[name]) =>
  t.String({ maxLength: PRODUCT_FIELD_MAX_LENGTH[name], description });

export const skuField = t.String({
  maxLength: PRODUCT_FIELD_MAX_LENGTH.sku,
  description: "Clave propia del comercio; única cuando se da",
});

export const productIdField = (description = "Identificador del producto, asignado por el servicio") =>
  integer({ description });

const ATTRIBUTES_DESCRIPTION =
  `Atributos del producto (precio, marca, existencias...): hasta ${ATTRIBUTE_LIMITS.keys} claves de minúsculas, ` +
  "cifras y '_' que empiezan por una letra (hasta 63 caracteres), cada una con un texto, un número, un booleano o " +
  `una lista de textos; como JSON, hasta ${ATTRIBUTE_LIMITS.bytes} bytes. No se incluyen en el embedding: ` +
  "cambiarlos no lo vuelve a calcular. Conocidos por la página: price (número) con currency, brand, in_stock, " +
  "image_url, url.";

/**
 * The attributes as a client sends them: any object here; the use cases check its keys and values
 * (checkedAttributes) and name the key at fault in their 422, which this schema could not.
 */
const attributesInput = (description: string) =>
  t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description });

/** A product's attributes as the service answers them. */
const attributesOutput = t.Record(t.String(), t.Union([t.String(), t.Number(), t.Boolean(), t.Array(t.String())]), {
  description: "Atributos del producto; el campo falta cuando no tiene ninguno",
});

/** A product as a client sends it: the example of the OpenAPI document. */
export const NEW_PRODUCT_EXAMPLE = {
  name: "Zapatillas de trail Vento",
  description: "Zapatillas ligeras e impermeables con suela de tacos para correr por montaña",
  category: "calzado deportivo",
  sku: "VEN-TRAIL-42",
  attributes: { price: 59.9, currency: "EUR", brand: "Vento", in_stock: true, sizes: ["41", "42", "43"] },
};

/** A stored product: the example of the OpenAPI document. */
export const PRODUCT_EXAMPLE = { id: 42, ...NEW_PRODUCT_EXAMPLE };

/** POST /products/ and PUT /products/{id}: the three fields of the contract, and the sku if any. */
export const NewProductBody = t.Object(
  {
    name: field("name"),
    description: field("description"),
    category: field("category"),
    sku: t.Optional(t.Union([skuField, t.Null()])),
    attributes: t.Optional(
      attributesInput(`${ATTRIBUTES_DESCRIPTION} En PUT, sin este campo se conservan; null o {} los quita.`),
    ),
  },
  {
    additionalProperties: false,
    description: "El producto: nombre, descripción y categoría (el embedding lo calcula el servicio)",
    examples: [NEW_PRODUCT_EXAMPLE],
  },
);

/** PATCH /products/{id}: any of the fields. */
const ProductChangesBody = t.Object(
  {
    name: t.Optional(field("name")),
    description: t.Optional(field("description")),
    category: t.Optional(field("category")),
    sku: t.Optional(t.Union([skuField, t.Null()], { description: "null quita el SKU" })),
    attributes: t.Optional(
      attributesInput(`${ATTRIBUTES_DESCRIPTION} Sustituyen a todos los anteriores; null o {} los quita.`),
    ),
  },
  { additionalProperties: false, minProperties: 1, description: "Los campos que cambian (al menos uno)" },
);

/** One category, or a list of them: the filter of the listing (and of the search). */
export const categoryFilter = t.Optional(
  t.Union(
    [
      field("category", "Una categoría"),
      t.Array(field("category", "Una de las categorías"), { minItems: 1, maxItems: MAX_CATEGORIES }),
    ],
    { description: `Una categoría, o una lista de hasta ${MAX_CATEGORIES}: solo productos de esas categorías` },
  ),
);

/**
 * The same filter in a query string: `?category=a&category=b`. Its texts are not bounded here: for
 * a query, Elysia puts a list beside the single text and, when the text alone fails its schema,
 * takes it as a one-item list and checks it again while decoding, outside validation (a 100-character
 * limit there made a longer value a 500). The use cases check each category (normalizeCategories)
 * and name the field in their 422.
 */
export const categoryQuery = t.Optional(
  t.Union([t.String(), t.Array(t.String(), { minItems: 1, maxItems: MAX_CATEGORIES })], {
    description:
      `Una categoría (de hasta ${PRODUCT_FIELD_MAX_LENGTH.category} caracteres); repetido, hasta ${MAX_CATEGORIES}: ` +
      "solo productos de esas categorías",
  }),
);

const FILTER_DESCRIPTION =
  "Condiciones que deben cumplir todos los resultados (Y): por atributo, un valor (igual; un atributo lista " +
  'cumple si lo contiene: {"sizes": "42"}), una lista de valores (cualquiera de ellos), {"gt", "gte", "lt", ' +
  '"lte"} con números (un rango; solo atributos numéricos: el texto "59.90" no es un número) o {"exists": ' +
  `true|false}; y "category", como el campo category. Hasta ${FILTER_LIMITS.conditions} condiciones.`;

export const FILTER_EXAMPLE = { brand: ["Vento", "Acme"], price: { gte: 10, lt: 60 }, in_stock: true };

/** The `filter` object of a search's body: checked by the use case (checkedFilter), which names the key at fault. */
export const filterBody = t.Optional(
  t.Record(t.String(), t.Unknown(), { description: FILTER_DESCRIPTION, examples: [FILTER_EXAMPLE] }),
);

/** The same filter in a query string: the object as JSON text (filterParam reads it). */
export const filterQuery = t.Optional(
  t.String({
    description: `${FILTER_DESCRIPTION} En la URL, el objeto como JSON.`,
    examples: [JSON.stringify(FILTER_EXAMPLE)],
  }),
);

/** A query string's `filter` as the object it holds (the use case checks it); 422 when it is not JSON. */
export function filterParam(text: string | undefined): unknown {
  return text === undefined ? undefined : jsonParam("filter", text);
}

/** A query parameter that holds JSON, as the value it holds (the use case checks it); 422 naming it when it is not JSON. */
export function jsonParam(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const example = name === "sort" ? '[{"price":"asc"}]' : '{"brand":"Acme"}';
    throw new InvalidInput(`El campo '${name}' debe ser JSON, por ejemplo ${example}`);
  }
}

/** A product as the service answers it (never its embedding). */
export const productFields = {
  id: productIdField(),
  name: t.String({ description: FIELD_DESCRIPTIONS.name }),
  description: t.String({ description: FIELD_DESCRIPTIONS.description }),
  category: t.String({ description: FIELD_DESCRIPTIONS.category }),
  sku: t.Optional(t.String({ description: "Clave propia del comercio; solo si el producto tiene una" })),
  attributes: t.Optional(attributesOutput),
};

/**
 * The shared schemas, registered once: routes name them (`body: "NewProduct"`, `200: "Product"`)
 * and the OpenAPI document holds each once. (Registering a schema marks its object as the model:
 * an inline copy elsewhere is a new `t.Object` of the same fields.)
 */
export const productModels = new Elysia({ name: "product-models" }).model({
  Product: t.Object(productFields, { description: "El producto, sin su embedding", examples: [PRODUCT_EXAMPLE] }),
  NewProduct: NewProductBody,
  ProductChanges: ProductChangesBody,
});

/** A stored product as the API shows it: its fields, the sku and the attributes only when it has them. */
export function productView({ id, name, description, category, sku, attributes }: Product) {
  return {
    id,
    name,
    description,
    category,
    ...(sku === undefined ? {} : { sku }),
    ...(attributes === undefined ? {} : { attributes }),
  };
}
