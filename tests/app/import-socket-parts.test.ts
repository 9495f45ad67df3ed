import { describe, expect, test } from "bun:test";
import { socketParts } from "../../src/app/commands/import.ts";

/** The parts an import's batch is handed to the running service in (import while the service runs on the embedded database). */
describe("socketParts", () => {
  test("at most 200 items a part, each part with the position of its first item, every item once in order", () => {
    const items = Array.from({ length: 450 }, (_, i) => ({ value: { name: `Producto ${i}` } }));
    const parts = socketParts(items);
    expect(parts.map(([start, part]) => [start, part.length])).toEqual([
      [0, 200],
      [200, 200],
      [400, 50],
    ]);
    expect(parts.flatMap(([, part]) => part)).toEqual(items);
  });

  test("large items close a part before it passes 8 MB of JSON; an item larger alone goes alone", () => {
    const big = (i: number) => ({ value: { name: `P${i}`, description: "x".repeat(3 * 1024 * 1024) } });
    const items = [big(0), big(1), big(2), { value: { name: "pequeño" } }, { problem: "no se pudo leer" }];
    const parts = socketParts(items);
    expect(parts.map(([start, part]) => [start, part.length])).toEqual([
      [0, 2],
      [2, 3],
    ]);
    const huge = [{ value: { name: "enorme", description: "y".repeat(9 * 1024 * 1024) } }, { value: { name: "otro" } }];
    expect(socketParts(huge).map(([start, part]) => [start, part.length])).toEqual([
      [0, 1],
      [1, 1],
    ]);
  });

  test("no items, no parts", () => {
    expect(socketParts([])).toEqual([]);
  });
});
