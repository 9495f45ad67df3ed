import { ATTRIBUTE_KEY, type Attributes } from "./attributes.ts";
import { InvalidInput } from "./errors.ts";
import { normalizeCategories } from "./manage-products.ts";

/** A value an attribute is compared with. */
export type FilterValue = string | number | boolean;

/**
 * One condition on one attribute (all of a filter's hold together: AND):
 * - `anyOf`: the attribute is one of the values, or a list holding one of them (`{"brand": "Acme"}`
 *   is anyOf ["Acme"]; `{"sizes": "42"}` matches `"sizes": ["41", "42"]`);
 * - `range`: the attribute is a number within every bound given (a text "59.90" is not a number);
 * - `exists`: the product has the attribute (`true`) or has not (`false`).
 */
export type AttributeCondition =
  | { key: string; op: "anyOf"; values: readonly FilterValue[] }
  | { key: string; op: "range"; gt?: number; gte?: number; lt?: number; lte?: number }
  | { key: string; op: "exists"; exists: boolean };

export const RANGE_BOUNDS = ["gt", "gte", "lt", "lte"] as const;

/** Most conditions one filter may hold, and most values one any-of may list. */
export const FILTER_LIMITS = { conditions: 20, values: 100 } as const;

/** A search's or a list's filter, checked: its categories (as the `category` field) and its attribute conditions. */
export interface CheckedFilter {
  categories?: string[] | undefined;
  attributes: AttributeCondition[];
}

/**
 * The `filter` object of a search or a list, checked: `category` as the request's own field, every
 * other key an attribute's name with its condition: a text, number or boolean (equals), a list of
 * them (any of), `{gt, gte, lt, lte}` numbers (a range), `{exists: true|false}`. InvalidInput naming
 * the key at fault otherwise. Absent or null: no filter.
 */
export function checkedFilter(filter: unknown): CheckedFilter {
  if (filter === undefined || filter === null) return { attributes: [] };
  if (typeof filter !== "object" || Array.isArray(filter)) {
    throw new InvalidInput('El campo \'filter\' debe ser un objeto de condiciones, por ejemplo {"brand": "Acme"}');
  }
  const { category, ...others } = filter as Record<string, unknown>;
  const entries = Object.entries(others);
  if (entries.length > FILTER_LIMITS.conditions) {
    throw new InvalidInput(`El campo 'filter' tiene más de ${FILTER_LIMITS.conditions} condiciones`);
  }
  const checked: CheckedFilter = { attributes: entries.map(([key, condition]) => checkedCondition(key, condition)) };
  if (category !== undefined) {
    if (typeof category !== "string" && !(Array.isArray(category) && category.every((c) => typeof c === "string"))) {
      throw new InvalidInput("La condición 'category' del filtro debe ser una categoría o una lista de categorías");
    }
    checked.categories = normalizeCategories(category as string | string[]);
  }
  return checked;
}

function checkedCondition(key: string, condition: unknown): AttributeCondition {
  if (!ATTRIBUTE_KEY.test(key)) {
    throw new InvalidInput(
      `La condición '${key.slice(0, 80)}' del filtro no nombra un atributo válido: minúsculas, cifras y '_', empezando por una letra`,
    );
  }
  if (isFilterValue(condition)) return { key, op: "anyOf", values: [condition] };
  if (Array.isArray(condition)) {
    if (condition.length === 0 || condition.length > FILTER_LIMITS.values || !condition.every(isFilterValue)) {
      throw new InvalidInput(
        `La condición '${key}' del filtro debe listar entre 1 y ${FILTER_LIMITS.values} textos, números o booleanos`,
      );
    }
    return { key, op: "anyOf", values: [...new Set(condition)] };
  }
  if (typeof condition === "object" && condition !== null) {
    const fields = condition as Record<string, unknown>;
    const names = Object.keys(fields);
    if (names.length === 1 && names[0] === "exists") {
      if (typeof fields.exists !== "boolean")
        throw new InvalidInput(`La condición '${key}' del filtro: exists debe ser true o false`);
      return { key, op: "exists", exists: fields.exists };
    }
    if (names.length > 0 && names.every((name) => (RANGE_BOUNDS as readonly string[]).includes(name))) {
      const range: AttributeCondition & { op: "range" } = { key, op: "range" };
      for (const bound of RANGE_BOUNDS) {
        const limit = fields[bound];
        if (limit === undefined) continue;
        if (typeof limit !== "number" || !Number.isFinite(limit)) {
          throw new InvalidInput(`La condición '${key}' del filtro: ${bound} debe ser un número`);
        }
        range[bound] = limit;
      }
      return range;
    }
  }
  throw new InvalidInput(
    `La condición '${key}' del filtro no es válida: use un valor, una lista de valores, ` +
      "{gt, gte, lt, lte} con números o {exists: true|false}",
  );
}

function isFilterValue(value: unknown): value is FilterValue {
  return (
    typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
  );
}

/** Conditions as a request's `filter` writes them (the inverse of checkedFilter's reading). */
export function filterObjectOf(conditions: readonly AttributeCondition[]): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  for (const condition of conditions) {
    const { key } = condition;
    if (condition.op === "anyOf")
      filter[key] = condition.values.length === 1 ? condition.values[0] : [...condition.values];
    else if (condition.op === "exists") filter[key] = { exists: condition.exists };
    else {
      const { key: _key, op: _op, ...bounds } = condition;
      filter[key] = bounds;
    }
  }
  return filter;
}

/** Whether attributes meet every condition: what the database's filter does, written out (fakes and tests). */
export function meetsConditions(
  attributes: Attributes | undefined,
  conditions: readonly AttributeCondition[],
): boolean {
  return conditions.every((condition) => {
    const value = attributes?.[condition.key];
    if (condition.op === "exists") return (value !== undefined) === condition.exists;
    if (condition.op === "range") {
      if (typeof value !== "number") return false;
      const { gt, gte, lt, lte } = condition;
      return (
        (gt === undefined || value > gt) &&
        (gte === undefined || value >= gte) &&
        (lt === undefined || value < lt) &&
        (lte === undefined || value <= lte)
      );
    }
    if (value === undefined) return false;
    if (Array.isArray(value)) return condition.values.some((wanted) => (value as string[]).includes(wanted as string));
    return condition.values.includes(value as FilterValue);
  });
}
