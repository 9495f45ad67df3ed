import { describe, expect, test } from "bun:test";
import { type JsonItem, jsonItems, MalformedItems } from "../../../src/lib/json/json-items.ts";

const options = { maxDepth: 8, maxItemBytes: 200 };

/** The text as a stream cut into pieces of `size` bytes (multi-byte characters cut too). */
async function* pieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(text: string, format: "array" | "lines", size = 3): Promise<JsonItem[]> {
  const items: JsonItem[] = [];
  for await (const item of jsonItems(pieces(text, size), format, options)) items.push(item);
  return items;
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

  test("an empty array has no items", async () => {
    expect(await read(" [ ] ", "array")).toEqual([]);
  });

  for (const broken of ['{"a": 1}', "[1, 2", "[1,,2]", "[,1]", "[1,]", "[1] 2", "", "   "]) {
    test(`${JSON.stringify(broken)} is not an array: MalformedItems`, async () => {
      await expect(read(broken, "array")).rejects.toBeInstanceOf(MalformedItems);
    });
  }
});
