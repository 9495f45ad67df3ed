/**
 * Import files read as streams (file-items.ts): every format, plain or gzip, and the progress an
 * import reports, which must follow the items read, not what the file reader has read ahead.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { type FileFormat, openImportFile } from "../../../src/adapters/import/file-items.ts";
import type { JsonItem } from "../../../src/lib/json/json-items.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

const tempDir = useTempDirs("file-items");

const product = (i: number) => ({
  sku: `SKU-${i}`,
  name: `Producto ${i}`,
  description: `Descripción del producto número ${i}, con texto suficiente para ocupar una línea entera`,
  category: i % 2 === 0 ? "par" : "impar",
});

const COUNT = 20_000;
/** How far ahead of the item just read the progress may be: one piece handed to the parser. */
const SLACK = 16 * 1024;

/** A file's lines, and the byte offset where each ends (its newline included). */
function lines(rows: string[]): { text: string; ends: number[] } {
  const encoder = new TextEncoder();
  let offset = 0;
  const ends = rows.map((row) => (offset += encoder.encode(`${row}\n`).byteLength));
  return { text: rows.map((row) => `${row}\n`).join(""), ends };
}

/**
 * Reads every item of the file at `path` (whose items end at `ends`, byte offsets in its content),
 * checking after the first, the middle and the last item that the progress is where that item ends.
 */
async function expectProgressFollowsItems(path: string, ends: number[], format: FileFormat) {
  const source = await openImportFile(path);
  expect(source.format).toBe(format);
  expect(source.bytesTotal).toBe(ends.at(-1) as number);
  let read = 0;
  for await (const item of source.items) {
    expect(item).toEqual({ index: read, value: product(read) });
    read++;
    if (read === 1 || read === COUNT / 2 || read === COUNT) {
      const end = ends[read - 1 + (format === "csv" ? 1 : 0)] as number; // a CSV's first line is its header
      expect(source.bytesDone()).toBeGreaterThanOrEqual(end - 1);
      expect(source.bytesDone()).toBeLessThanOrEqual(end + SLACK);
    }
  }
  expect(read).toBe(COUNT);
  expect(source.bytesDone()).toBe(source.bytesTotal);
}

// About 3 MB each: a reader's read-ahead (Bun reads files 512 KB at a time) would show from the first
// item as 100 % of a compressed file, and as at least 256 KB of a plain one.
describe("the progress of an import file follows the items read, not what the reader read ahead", () => {
  const products = Array.from({ length: COUNT }, (_, i) => product(i));

  for (const compressed of [false, true]) {
    test(`JSON Lines${compressed ? ", gzip" : ""}`, async () => {
      const { text, ends } = lines(products.map((item) => JSON.stringify(item)));
      const path = join(tempDir(), compressed ? "catalogue.jsonl.gz" : "catalogue.jsonl");
      writeFileSync(path, compressed ? gzipSync(text) : text);
      await expectProgressFollowsItems(path, ends, "jsonl");
    });

    test(`CSV${compressed ? ", gzip" : ""}`, async () => {
      const rows = products.map(
        ({ sku, name, description, category }) => `${sku},${name},"${description}",${category}`,
      );
      const { text, ends } = lines(["sku,name,description,category", ...rows]);
      const path = join(tempDir(), compressed ? "catalogue.csv.gz" : "catalogue.csv");
      writeFileSync(path, compressed ? gzipSync(text) : text);
      await expectProgressFollowsItems(path, ends, "csv");
    });
  }
});

/** Every item of the file at `path`. */
async function readAll(path: string): Promise<JsonItem[]> {
  const items: JsonItem[] = [];
  for await (const item of (await openImportFile(path)).items) items.push(item);
  return items;
}

/** Writes `parts` (texts, and byte arrays for bytes no text has) to a new file named `name`. */
function fileOf(name: string, ...parts: (string | readonly number[])[]): string {
  const encoder = new TextEncoder();
  const bytes = Buffer.concat(
    parts.map((part) => (typeof part === "string" ? encoder.encode(part) : new Uint8Array(part))),
  );
  const path = join(tempDir(), name);
  writeFileSync(path, name.endsWith(".gz") ? gzipSync(bytes) : bytes);
  return path;
}

const HEADER = "sku,name,description,category\n";
const row = (i: number) => `SKU-${i},Producto ${i},Descripción ${i},cat\n`;
const value = (i: number) => ({
  sku: `SKU-${i}`,
  name: `Producto ${i}`,
  description: `Descripción ${i}`,
  category: "cat",
});
const TOO_LONG = "El elemento supera el máximo de 1048576 bytes";

describe("CSV records", () => {
  test("a record over 1 MiB is a failed item at its position, and the records after it are read", async () => {
    const long = "x".repeat(1024 * 1024 + 1);
    const path = fileOf(
      "long.csv",
      HEADER,
      row(0),
      `SKU-1,Producto 1,"${long}\n${long}",cat\n`, // quoted, over several lines
      row(2),
      `SKU-3,Producto 3,${long},cat\n`,
      row(4),
    );
    expect(await readAll(path)).toEqual([
      { index: 0, value: value(0) },
      { index: 1, problem: TOO_LONG },
      { index: 2, value: value(2) },
      { index: 3, problem: TOO_LONG },
      { index: 4, value: value(4) },
    ]);
  });

  test("quoted fields keep their commas, quotes and line breaks; CRLF, CR and a byte order mark are read", async () => {
    const path = fileOf(
      "quoted.csv",
      "\uFEFFname,description,category\r\n",
      '"Taza ""grande"", azul","Línea 1\r\nLínea 2\nLínea 3",cocina\r\n',
      "Vaso,,cocina\rPlato,Llano,cocina",
    );
    expect(await readAll(path)).toEqual([
      {
        index: 0,
        value: { name: 'Taza "grande", azul', description: "Línea 1\r\nLínea 2\nLínea 3", category: "cocina" },
      },
      { index: 1, value: { name: "Vaso", description: "", category: "cocina" } },
      { index: 2, value: { name: "Plato", description: "Llano", category: "cocina" } },
    ]);
  });

  test("a record with a misplaced quote is a failed item; the records after it are read", async () => {
    const path = fileOf(
      "quotes.csv",
      HEADER,
      row(0),
      'SKU-1,Taza "grande",x,cat\n',
      row(2),
      'SKU-3,"Vaso" azul,x,cat\n',
      row(4),
    );
    const items = await readAll(path);
    expect(items.map((item) => ("value" in item ? item.value : item.problem))).toEqual([
      value(0),
      "La fila CSV tiene una comilla mal colocada o sin cerrar",
      value(2),
      "La fila CSV tiene una comilla mal colocada o sin cerrar",
      value(4),
    ]);
  });

  test("blank lines and lines of only spaces or tabs are no items", async () => {
    const blank = "  \t\n\n \r\n\t\n".repeat(10_000);
    const path = fileOf("blank.csv.gz", blank, HEADER, blank, row(0), blank, row(1), blank);
    expect(await readAll(path)).toEqual([
      { index: 0, value: value(0) },
      { index: 1, value: value(1) },
    ]);
  });
});

test("a file without a known extension is read by its first character, after a byte order mark", async () => {
  const catalogue = [value(0), value(1)];
  const expected = catalogue.map((item, index) => ({ index, value: item }));
  for (const text of [JSON.stringify(catalogue), catalogue.map((item) => JSON.stringify(item)).join("\n")]) {
    const path = fileOf("catalogue.txt", "\uFEFF\n ", text);
    expect(await readAll(path)).toEqual(expected);
  }
  expect(await readAll(fileOf("catalogue.txt", "\uFEFF", HEADER, row(0), row(1)))).toEqual(expected);
});

describe("files of nothing but blank lines or spaces", () => {
  // 32 MB once uncompressed, 32 KB as gzip: read to the end, with no item, whatever the format.
  for (const name of ["bomb.jsonl.gz", "bomb.csv.gz", "bomb.json.gz", "bomb.gz"]) {
    for (const unit of ["\n", " \t \r\n"]) {
      test(`${name}, ${JSON.stringify(unit)} repeated`, async () => {
        const blank = unit.repeat((32 * 1024 * 1024) / unit.length);
        const path = fileOf(name, ...(name === "bomb.json.gz" ? ["[", blank, "]"] : [blank]));
        const source = await openImportFile(path);
        let items = 0;
        for await (const _ of source.items) items++;
        expect(items).toBe(0);
        expect(source.bytesDone()).toBe(source.bytesTotal);
      });
    }
  }
});

describe("invalid UTF-8", () => {
  const NOT_UTF8 = "El elemento contiene bytes que no son UTF-8 válido";
  // 0xE9 is 'é' in Latin-1: a file saved in the wrong encoding.
  test("in a CSV record, it is a failed item at its position, not read as U+FFFD", async () => {
    const path = fileOf("latin1.csv", HEADER, row(0), "SKU-1,Caf", [0xe9], ",x,cat\n", row(2));
    expect(await readAll(path)).toEqual([
      { index: 0, value: value(0) },
      { index: 1, problem: NOT_UTF8 },
      { index: 2, value: value(2) },
    ]);
  });

  test("in a JSON Lines line or a JSON array's element, the same", async () => {
    const bad = ['{"name": "Caf', [0xe9], '"}'] as const;
    const lines = fileOf("latin1.jsonl", `${JSON.stringify(value(0))}\n`, ...bad, `\n${JSON.stringify(value(2))}\n`);
    const array = fileOf("latin1.json", `[${JSON.stringify(value(0))},`, ...bad, `,${JSON.stringify(value(2))}]`);
    for (const path of [lines, array]) {
      expect(await readAll(path)).toEqual([
        { index: 0, value: value(0) },
        { index: 1, problem: NOT_UTF8 },
        { index: 2, value: value(2) },
      ]);
    }
  });

  test("in a CSV header, the file is unreadable", async () => {
    const path = fileOf("header.csv", "name,descripci", [0xf3], "n,category\n", row(0));
    await expect(openImportFile(path)).rejects.toThrow("UTF-8");
  });
});

describe("CSV attribute columns", () => {
  test("columns besides the product's own are its attributes, trimmed; price a number and in_stock a boolean unless the header says otherwise; an empty cell is none", async () => {
    const path = fileOf(
      "attributes.csv",
      "sku,name,description,category,Brand,price,in_stock,sizes\n",
      "A-1,Zapatilla,Ligera,calzado,Acme, 59.90 ,sí,42\n",
      "A-2,Bota,De montaña,calzado,,,,\n",
      'A-3,Sandalia,Fresca,calzado,Zeta,"12,5",0,40\n',
      "A-4,Chancla,Playera,calzado,Zeta,3,VERDADERO,\n",
      "A-5,Chancla 2,Playera,calzado,Zeta,3,Falso,\n",
    );
    const items = await readAll(path);
    expect(items).toEqual([
      {
        index: 0,
        value: {
          sku: "A-1",
          name: "Zapatilla",
          description: "Ligera",
          category: "calzado",
          attributes: { brand: "Acme", price: 59.9, in_stock: true, sizes: "42" },
        },
      },
      { index: 1, value: { sku: "A-2", name: "Bota", description: "De montaña", category: "calzado" } },
      {
        index: 2,
        value: {
          sku: "A-3",
          name: "Sandalia",
          description: "Fresca",
          category: "calzado",
          attributes: { brand: "Zeta", price: 12.5, in_stock: false, sizes: "40" },
        },
      },
      // Spanish Excel's booleans.
      {
        index: 3,
        value: {
          sku: "A-4",
          name: "Chancla",
          description: "Playera",
          category: "calzado",
          attributes: { brand: "Zeta", price: 3, in_stock: true },
        },
      },
      {
        index: 4,
        value: {
          sku: "A-5",
          name: "Chancla 2",
          description: "Playera",
          category: "calzado",
          attributes: { brand: "Zeta", price: 3, in_stock: false },
        },
      },
    ]);
  });

  test("the header types a column after a colon: number, boolean, list (items between |) or text", async () => {
    const path = fileOf(
      "typed.csv",
      "name,description,category,Weight:Number,gift: boolean,sizes:list,price:text,code\n",
      "Zapatilla,Ligera,calzado,0.35,yes, 41 | 42 ||43 ,59.90 €,007\n",
      "Bota,Pesada,calzado,,,|,,\n",
    );
    const items = await readAll(path);
    expect(items.map((item) => ("value" in item ? (item.value as { attributes?: unknown }).attributes : item))).toEqual(
      [{ weight: 0.35, gift: true, sizes: ["41", "42", "43"], price: "59.90 €", code: "007" }, undefined],
    );
  });

  test("a file whose header holds more semicolons than commas is read with semicolons, as a Spanish spreadsheet saves it", async () => {
    const path = fileOf(
      "hoja.csv",
      "\n sku;name;description;category;price;tallas:list\n",
      'Z-1;Zapatilla;"Ligera; para correr";calzado;59,90;41|42\n',
      "Z-2;Bota, de montaña;Pesada;calzado;120;\n",
    );
    const items = await readAll(path);
    expect(items).toEqual([
      {
        index: 0,
        value: {
          sku: "Z-1",
          name: "Zapatilla",
          description: "Ligera; para correr",
          category: "calzado",
          attributes: { price: 59.9, tallas: ["41", "42"] },
        },
      },
      {
        index: 1,
        value: {
          sku: "Z-2",
          name: "Bota, de montaña",
          description: "Pesada",
          category: "calzado",
          attributes: { price: 120 },
        },
      },
    ]);
  });

  test("a cell not of its column's type is a failed item saying which column and why; the next record is read", async () => {
    const path = fileOf(
      "bad-cells.csv",
      "name,description,category,price,in_stock\n",
      'a,b,c,"1.234,50",true\n',
      "d,e,f,59.90 €,true\n",
      "g,h,i,5,quizás\n",
      "j,k,l,1e3,no\n",
      "m,n,o,-3,no\n",
    );
    const items = await readAll(path);
    expect(items.map((item) => ("problem" in item ? item.problem : item.value))).toEqual([
      "La columna 'price' es de números y «1.234,50» no lo es (escríbalo como 1234.50 o 1234,50, sin separador de miles ni moneda)",
      "La columna 'price' es de números y «59.90 €» no lo es (escríbalo como 1234.50 o 1234,50, sin separador de miles ni moneda)",
      "La columna 'in_stock' es de sí o no y «quizás» no lo es (use true/false, verdadero/falso, sí/no o 1/0)",
      "La columna 'price' es de números y «1e3» no lo es (escríbalo como 1234.50 o 1234,50, sin separador de miles ni moneda)",
      { name: "m", description: "n", category: "o", attributes: { price: -3, in_stock: false } },
    ]);
  });

  test("a column that is no attribute name, a type that is none, a typed product field, or a repeated column makes the file unreadable", async () => {
    const badName = fileOf("bad-name.csv", "name,description,category,precio final\n", "a,b,c,1\n");
    await expect(openImportFile(badName)).rejects.toThrow("column 'precio final' is neither one of");
    const badType = fileOf("bad-type.csv", "name,description,category,price:money\n", "a,b,c,1\n");
    await expect(openImportFile(badType)).rejects.toThrow("column 'price:money' names no type");
    const typedField = fileOf("typed-field.csv", "name:text,description,category\n", "a,b,c\n");
    await expect(openImportFile(typedField)).rejects.toThrow("column 'name:text' names no type");
    const repeated = fileOf("repeated.csv", "name,description,category,brand,Brand:text\n", "a,b,c,d,e\n");
    await expect(openImportFile(repeated)).rejects.toThrow("column 'brand' appears twice");
  });
});
