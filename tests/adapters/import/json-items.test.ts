import { describe, expect, test } from "bun:test";
import { type JsonItem, jsonItems, MalformedItems } from "../../../src/lib/json/json-items.ts";

const options = { maxDepth: 8, maxItemBytes: 200 };

/** The text as a stream cut into pieces of `size` bytes (multi-byte characters cut too). */
async function* pieces(text: string | Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(text: string | Uint8Array, format: "array" | "lines", size = 3): Promise<JsonItem[]> {
  return collect(pieces(text, size), format);
}

async function collect(stream: AsyncIterable<Uint8Array>, format: "array" | "lines"): Promise<JsonItem[]> {
  const items: JsonItem[] = [];
  for await (const item of jsonItems(stream, format, options)) items.push(item);
  return items;
}

/** `total` bytes of `unit` repeated, as a stream of 64 KB chunks (the same chunk each time: the test holds none). */
async function* repeated(unit: string, total: number): AsyncGenerator<Uint8Array> {
  const chunk = new TextEncoder().encode(unit.repeat(Math.ceil(65_536 / unit.length)));
  for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
}

/** The bytes of `before`, then the bytes given, then those of `after`. */
function withBytes(before: string, bytes: number[], after: string): Uint8Array {
  const encoder = new TextEncoder();
  return new Uint8Array([...encoder.encode(before), ...bytes, ...encoder.encode(after)]);
}

describe("jsonItems", () => {
  const values = [{ name: 'café, "con" [leche]', n: [1, { a: "}" }] }, "texto", 3, null, { ñ: '\\"' }];

  for (const size of [1, 2, 3, 7, 1000]) {
    test(`a JSON array, read ${size} bytes at a time, gives each element in order`, async () => {
      const items = await read(JSON.stringify(values, null, size === 7 ? 2 : 0), "array", size);
      expect(items).toEqual(values.map((value, index) => ({ index, value })));
    });

    test(`JSON Lines, read ${size} bytes at a time, gives each line; blank lines are skipped`, async () => {
      const text = `${values.map((value) => JSON.stringify(value)).join("\n")}\n\n  \r\n`;
      expect(await read(text, "lines", size)).toEqual(values.map((value, index) => ({ index, value })));
    });
  }

  test("an item too long, too deep or not JSON is a problem at its position; the others are read", async () => {
    const text = ['{"ok": 1}', `"${"x".repeat(300)}"`, `${"[".repeat(9)}${"]".repeat(9)}`, "{roto", "2"].join("\n");
    expect(await read(text, "lines")).toEqual([
      { index: 0, value: { ok: 1 } },
      { index: 1, problem: "El elemento supera el máximo de 200 bytes" },
      { index: 2, problem: "El elemento tiene demasiados niveles de anidamiento (como máximo 8)" },
      { index: 3, problem: "El elemento no es un JSON válido" },
      { index: 4, value: 2 },
    ]);
  });

  // Whitespace before an item is never held: were it, a run longer than maxItemBytes (200 here)
  // would be reported as an item too long, or, in an array, as an empty element. (Spaces after an
  // item on its own line, or before the comma that ends it, are part of it.)
  test("blank lines and runs of whitespace are no items at all, however long", async () => {
    const blank = `${" \t\r\n".repeat(1_000)}${" ".repeat(5_000)}`;
    expect(await read(`${blank}{"a": 1}\n${blank}2\n${blank}`, "lines", 1000)).toEqual([
      { index: 0, value: { a: 1 } },
      { index: 1, value: 2 },
    ]);
    expect(await read(`${blank}[${blank}{"a": 1},${blank}2\n]${blank}`, "array", 1000)).toEqual([
      { index: 0, value: { a: 1 } },
      { index: 1, value: 2 },
    ]);
    expect(await read(`[${blank}]`, "array", 1000)).toEqual([]);
  });

  test("a stream of 16 MB of blank lines or spaces holds no item and is read to its end", async () => {
    for (const unit of ["\n", "\r\n", " ", " \t \n"]) {
      expect(await collect(repeated(unit, 16 * 1024 * 1024), "lines")).toEqual([]);
    }
    async function* array() {
      yield new TextEncoder().encode("[");
      yield* repeated(" \n", 16 * 1024 * 1024);
      yield new TextEncoder().encode("1]");
    }
    expect(await collect(array(), "array")).toEqual([{ index: 0, value: 1 }]);
  });

  for (const format of ["lines", "array"] as const) {
    test(`invalid UTF-8 in an item (${format}) is a problem at its position, never read as U+FFFD`, async () => {
      const [open, separator, close] = format === "lines" ? ["", "\n", ""] : ["[", ",", "]"];
      const text = withBytes(`${open}{"name": "ok"}${separator}{"name": "caf`, [0xe9], `"}${separator}"bien"${close}`);
      for (const size of [1, 5, 1000]) {
        expect(await read(text, format, size)).toEqual([
          { index: 0, value: { name: "ok" } },
          { index: 1, problem: "El elemento contiene bytes que no son UTF-8 válido" },
          { index: 2, value: "bien" },
        ]);
      }
    });
  }

  test("an array may begin with a UTF-8 byte order mark, as JSON Lines may", async () => {
    for (const size of [1, 1000]) {
      expect(await read('\uFEFF [{"a": 1}]', "array", size)).toEqual([{ index: 0, value: { a: 1 } }]);
      expect(await read('\uFEFF{"a": 1}\n', "lines", size)).toEqual([{ index: 0, value: { a: 1 } }]);
    }
    // Only at the start: the first bytes of a mark, then something else, are content.
    await expect(read(withBytes("", [0xef, 0xbb], "[1]"), "array", 1)).rejects.toBeInstanceOf(MalformedItems);
    expect(await read(withBytes("", [0xef, 0xbb], "1"), "lines", 1)).toEqual([
      { index: 0, problem: "El elemento contiene bytes que no son UTF-8 válido" },
    ]);
  });

  test("an empty array has no items", async () => {
    expect(await read(" [ ] ", "array")).toEqual([]);
  });

  for (const broken of ['{"a": 1}', "[1, 2", "[1,,2]", "[,1]", "[1,]", "[1] 2", "", "   "]) {
    test(`${JSON.stringify(broken)} is not an array: MalformedItems`, async () => {
      await expect(read(broken, "array")).rejects.toBeInstanceOf(MalformedItems);
    });
  }
});
