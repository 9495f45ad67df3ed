import { InvalidInput } from "./errors.ts";

/** A product attribute's value: a text, a finite number, a boolean, or a list of texts. */
export type AttributeValue = string | number | boolean | readonly string[];

/**
 * A product's attributes (`price`, `brand`, `in_stock`, `sizes`...): what a shop filters, sorts and
 * counts by. They are stored beside the product and never embedded: changing one re-embeds nothing.
 */
export type Attributes = Readonly<Record<string, AttributeValue>>;

/** Most attributes one product may have, and most bytes they may take as JSON (UTF-8). */
export const ATTRIBUTE_LIMITS = { keys: 64, bytes: 16 * 1024 } as const;

/** An attribute's name: lower case ASCII letters, digits and `_`, starting with a letter, up to 63 characters. */
export const ATTRIBUTE_KEY = /^[a-z][a-z0-9_]{0,62}$/;

/**
 * The attributes, checked: an object of at most ATTRIBUTE_LIMITS.keys keys, each an ATTRIBUTE_KEY,
 * whose values are texts, finite numbers, booleans or lists of texts, the whole at most
 * ATTRIBUTE_LIMITS.bytes as JSON. Null or absent: none (`{}`). Otherwise InvalidInput naming the
 * key at fault. The result has its keys sorted, so two equal attribute sets compare equal as JSON.
 */
export function checkedAttributes(value: unknown): Attributes {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidInput("El campo 'attributes' debe ser un objeto de atributos");
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > ATTRIBUTE_LIMITS.keys) {
    throw new InvalidInput(
      `El campo 'attributes' tiene ${entries.length} atributos; el máximo es ${ATTRIBUTE_LIMITS.keys}`,
    );
  }
  const checked: Record<string, AttributeValue> = {};
  for (const [key, attribute] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!ATTRIBUTE_KEY.test(key)) {
      throw new InvalidInput(
        `El atributo '${key.slice(0, 80)}' no tiene un nombre válido: minúsculas, cifras y '_', empezando por una letra, hasta 63 caracteres`,
      );
    }
    checked[key] = checkedValue(key, attribute);
  }
  const bytes = new TextEncoder().encode(JSON.stringify(checked)).length;
  if (bytes > ATTRIBUTE_LIMITS.bytes) {
    throw new InvalidInput(
      `El campo 'attributes' ocupa ${bytes} bytes en JSON; el máximo es ${ATTRIBUTE_LIMITS.bytes}`,
    );
  }
  return checked;
}

function checkedValue(key: string, value: unknown): AttributeValue {
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new InvalidInput(`El atributo '${key}' debe ser un número finito`);
    return value;
  }
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return [...value] as string[];
  throw new InvalidInput(`El atributo '${key}' debe ser un texto, un número, un booleano o una lista de textos`);
}

/** Whether two checked attribute sets are the same (their keys are sorted: checkedAttributes). */
export function sameAttributes(a: Attributes | undefined, b: Attributes | undefined): boolean {
  return JSON.stringify(sortedKeys(a ?? {})) === JSON.stringify(sortedKeys(b ?? {}));
}

/** The attributes with their keys in order (the database's jsonb gives them in its own order). */
export function sortedKeys(attributes: Attributes): Attributes {
  return Object.fromEntries(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Whether there is any attribute: a product without any shows none (no `attributes` field). */
export function hasAttributes(attributes: Attributes | undefined | null): attributes is Attributes {
  return attributes !== undefined && attributes !== null && Object.keys(attributes).length > 0;
}
