import { InvalidInput } from "./errors.ts";

/** A product attribute's value: a text, a finite number, a boolean, or a list of texts. */
export type AttributeValue = string | number | boolean | readonly string[];

/**
 * A product's attributes (`price`, `brand`, `in_stock`, `sizes`...): what a shop filters, sorts and
 * counts by. They are stored beside the product and not embedded, except those the catalogue names in
 * its setting `embedded_attributes` (embeddedAttributesText): changing another re-embeds nothing.
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

/**
 * Most attributes a catalogue may embed. The offline model reads the first 256 word pieces of a
 * text and name, category and description come first: a few short values fit after them, more
 * would be cut or crowd out the product's own words.
 */
export const EMBEDDED_ATTRIBUTES_MAX = 8;

/**
 * A catalogue's setting `embedded_attributes`, checked: a list of at most EMBEDDED_ATTRIBUTES_MAX
 * attribute names (ATTRIBUTE_KEY), each once, returned in code-unit order (so the embedded text does
 * not depend on the order they were listed in). Otherwise InvalidInput naming the name at fault.
 */
export function checkedEmbeddedAttributes(value: unknown): string[] {
  if (!Array.isArray(value)) {
    throw new InvalidInput("El campo 'embedded_attributes' debe ser una lista de nombres de atributos");
  }
  if (value.length > EMBEDDED_ATTRIBUTES_MAX) {
    throw new InvalidInput(
      `El campo 'embedded_attributes' nombra ${value.length} atributos; el máximo es ${EMBEDDED_ATTRIBUTES_MAX}`,
    );
  }
  const keys = new Set<string>();
  for (const key of value) {
    if (typeof key !== "string" || !ATTRIBUTE_KEY.test(key)) {
      const shown = typeof key === "string" ? key.slice(0, 80) : JSON.stringify(key);
      throw new InvalidInput(
        `El campo 'embedded_attributes': '${shown}' no es un nombre de atributo válido: minúsculas, cifras y '_', empezando por una letra, hasta 63 caracteres`,
      );
    }
    if (keys.has(key)) throw new InvalidInput(`El campo 'embedded_attributes' nombra '${key}' más de una vez`);
    keys.add(key);
  }
  return [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The part of the embedded text the catalogue's embedded attributes give (product.ts embeddingText):
 * "key: value" for each of `keys` the product has, in the order of `keys`, joined by ". "; a list's
 * items joined by ", ", a boolean as `true`/`false`, a number in plain decimals (59.9, 1000000:
 * never an exponent); a value that writes as nothing (an empty text or list) is left out. "" when
 * none is there. EMBEDDED_TEXT_DIGEST_SQL (postgres/schema.ts) writes the same in SQL: PostgreSQL
 * prints a jsonb number in plain decimals, hence no exponent here.
 */
export function embeddedAttributesText(attributes: Attributes | undefined, keys: readonly string[]): string {
  if (!attributes || keys.length === 0) return "";
  const parts: string[] = [];
  for (const key of keys) {
    const value = Object.hasOwn(attributes, key) ? attributes[key] : undefined;
    if (value === undefined) continue;
    const text = typeof value === "number" ? plainDecimal(value) : Array.isArray(value) ? value.join(", ") : `${value}`;
    if (text !== "") parts.push(`${key}: ${text}`);
  }
  return parts.join(". ");
}

/**
 * A finite number in plain decimals, as PostgreSQL prints the numeric a JSON number becomes:
 * JavaScript's shortest digits, with its exponent (1e+21, 1.5e-7) written out (1000000000000000000000, 0.00000015).
 */
export function plainDecimal(value: number): string {
  const written = String(value);
  const match = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(written);
  if (!match) return written;
  const [, sign, first, rest = "", exponentText] = match as unknown as [string, string, string, string, string];
  const digits = first + rest;
  const point = 1 + Number(exponentText); // where the decimal point goes in `digits`
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
