/**
 * A catalogue as CSV: its delimiter, its header's columns and a record's product, the same for the
 * command-line import and the page's. The product's own columns are `name`, `description`, `category` and
 * optionally `sku`; every other column is an attribute, its cells of one type: the header may say
 * which after a colon, as Meilisearch's CSV does (`price:number`, `in_stock:boolean`,
 * `sizes:list`, `color:text`); without one, `price` is a number, `in_stock` a boolean (the
 * well-known attributes the page, sorts and range filters read so: shop-facts.ts) and any other a
 * text. An empty cell is no attribute.
 */
import { ATTRIBUTE_KEY, type AttributeValue } from "./attributes.ts";

export const CSV_PRODUCT_COLUMNS = ["name", "description", "category", "sku"] as const;
const REQUIRED_CSV_COLUMNS = ["name", "description", "category"] as const;
export const CSV_CELL_TYPES = ["text", "number", "boolean", "list"] as const;
export type CsvCellType = (typeof CSV_CELL_TYPES)[number];

/** A list cell's items are separated by this (`41|42|43`). */
const CSV_LIST_SEPARATOR = "|";

/** The type of an attribute column whose header names none. */
const DEFAULT_TYPES: Readonly<Record<string, CsvCellType>> = { price: "number", in_stock: "boolean" };

/** The delimiters a CSV file may use between its fields. */
export type CsvDelimiter = "," | ";";

/**
 * A CSV file's delimiter, told by its header (its first line holding anything but spaces, read from
 * `start`, the beginning of the file): `;` when that line holds more semicolons than commas outside
 * quotes (a spreadsheet saves CSV so where the decimal mark is a comma, as in Spain:
 * `name;description;category;price` then `Cafetera;Italiana;Cocina;24,50`), else `,`.
 */
export function csvDelimiter(start: string): CsvDelimiter {
  const header = start.split(/\r?\n/).find((line) => line.trim() !== "") ?? "";
  let quoted = false;
  let commas = 0;
  let semicolons = 0;
  for (const char of header) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && char === ",") commas++;
    else if (!quoted && char === ";") semicolons++;
  }
  return semicolons > commas ? ";" : ",";
}

/** A column of the header: a product field (no type), or an attribute and the type of its cells. */
export type CsvColumn = { field: (typeof CSV_PRODUCT_COLUMNS)[number] } | { attribute: string; type: CsvCellType };

/** Why a header cell names no column (each caller words it in its own language). */
export type CsvHeaderProblem =
  | { kind: "name"; column: string }
  | { kind: "type"; column: string }
  | { kind: "repeated"; column: string }
  | { kind: "missing"; columns: string[] };

/** The columns a header row names (case and surrounding spaces aside), or its first problem. */
export function csvHeader(cells: readonly string[]): { columns: CsvColumn[] } | { problem: CsvHeaderProblem } {
  const columns: CsvColumn[] = [];
  const names: string[] = [];
  for (const cell of cells) {
    const written = cell.trim();
    const colon = written.indexOf(":");
    const name = (colon < 0 ? written : written.slice(0, colon)).trim().toLowerCase();
    const type =
      colon < 0
        ? undefined
        : written
            .slice(colon + 1)
            .trim()
            .toLowerCase();
    if ((CSV_PRODUCT_COLUMNS as readonly string[]).includes(name)) {
      if (type !== undefined) return { problem: { kind: "type", column: written } };
      columns.push({ field: name as (typeof CSV_PRODUCT_COLUMNS)[number] });
    } else if (!ATTRIBUTE_KEY.test(name)) {
      return { problem: { kind: "name", column: written } };
    } else if (type !== undefined && !(CSV_CELL_TYPES as readonly string[]).includes(type)) {
      return { problem: { kind: "type", column: written } };
    } else {
      columns.push({ attribute: name, type: (type as CsvCellType | undefined) ?? DEFAULT_TYPES[name] ?? "text" });
    }
    if (names.includes(name)) return { problem: { kind: "repeated", column: name } };
    names.push(name);
  }
  const missing = REQUIRED_CSV_COLUMNS.filter((column) => !names.includes(column));
  if (missing.length > 0) return { problem: { kind: "missing", columns: missing } };
  return { columns };
}

/**
 * A record's product by the header's columns: its fields as written (an empty sku is none) and its
 * attributes typed; or, in Spanish (a client sees it), why a cell is not of its column's type.
 */
export function csvProduct(
  columns: readonly CsvColumn[],
  cells: readonly string[],
): { value: Record<string, unknown> } | { problem: string } {
  const value: Record<string, unknown> = {};
  const attributes: Record<string, AttributeValue> = {};
  for (const [i, column] of columns.entries()) {
    const cell = cells[i];
    if (cell === undefined) continue;
    if ("field" in column) {
      value[column.field] = column.field === "sku" && cell.trim() === "" ? null : cell;
      continue;
    }
    const text = cell.trim();
    if (text === "") continue;
    const typed = typedCell(text, column.type, column.attribute);
    if ("problem" in typed) return typed;
    if (Array.isArray(typed.value) && typed.value.length === 0) continue; // "|": no item, no attribute
    attributes[column.attribute] = typed.value;
  }
  if (Object.keys(attributes).length > 0) value.attributes = attributes;
  return { value };
}

/** A decimal number, its decimals after a point or a comma (`59.90`, `59,90`); no thousands separators. */
const NUMBER = /^[+-]?\d+(?:[.,]\d+)?$/;
/** Spanish Excel writes a boolean cell as VERDADERO or FALSO. */
const TRUE = new Set(["true", "verdadero", "sí", "si", "yes", "1"]);
const FALSE = new Set(["false", "falso", "no", "0"]);

const shown = (text: string) => (text.length > 40 ? `${text.slice(0, 39)}…` : text);

function typedCell(text: string, type: CsvCellType, column: string): { value: AttributeValue } | { problem: string } {
  switch (type) {
    case "text":
      return { value: text };
    case "number": {
      const number = NUMBER.test(text) ? Number(text.replace(",", ".")) : Number.NaN;
      if (Number.isFinite(number)) return { value: number };
      return {
        problem: `La columna '${column}' es de números y «${shown(text)}» no lo es (escríbalo como 1234.50 o 1234,50, sin separador de miles ni moneda)`,
      };
    }
    case "boolean": {
      const word = text.toLowerCase();
      if (TRUE.has(word)) return { value: true };
      if (FALSE.has(word)) return { value: false };
      return {
        problem: `La columna '${column}' es de sí o no y «${shown(text)}» no lo es (use true/false, verdadero/falso, sí/no o 1/0)`,
      };
    }
    case "list":
      return {
        value: text
          .split(CSV_LIST_SEPARATOR)
          .map((item) => item.trim())
          .filter((item) => item !== ""),
      };
  }
}
