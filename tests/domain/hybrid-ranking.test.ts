import { describe, expect, test } from "bun:test";
import { InvalidInput } from "../../src/domain/errors.ts";
import { fuse } from "../../src/domain/hybrid-ranking.ts";
import type { HybridCandidate } from "../../src/domain/product.ts";

function candidate(id: number, score: number, lexical: number): HybridCandidate {
  return { id, name: `p${id}`, description: "", category: "c", version: 1, score, lexical };
}

describe("fuse", () => {
  const candidates = [candidate(1, 0.9, 0), candidate(2, 0.7, 0.5), candidate(3, 0.5, 1), candidate(4, 0.3, 0)];

  test("alpha 1 ranks by cosine, alpha 0 by the lexical match", () => {
    expect(fuse(candidates, 1).map((c) => c.id)).toEqual([1, 2, 3, 4]);
    expect(fuse(candidates, 0).map((c) => c.id)).toEqual([3, 2, 1, 4]);
  });

  test("in between, each score is normalised over the candidates and blended: alpha·cos + (1−alpha)·lexical", () => {
    const fused = fuse(candidates, 0.5);
    // cosine normalised: 1, 2/3, 1/3, 0; lexical: 0, 0.5, 1, 0.
    expect(fused.map((c) => [c.id, c.fusedScore])).toEqual([
      [3, expect.closeTo((1 / 3 + 1) / 2, 9)],
      [2, expect.closeTo((2 / 3 + 0.5) / 2, 9)],
      [1, expect.closeTo(0.5, 9)],
      [4, 0],
    ]);
    // The cosine stays the score; the blend is only the order.
    expect(fused.find((c) => c.id === 3)?.score).toBe(0.5);
  });

  test("a query whose words match nothing keeps the semantic order", () => {
    const none = candidates.map((c) => ({ ...c, lexical: 0 }));
    expect(fuse(none, 0.75).map((c) => c.id)).toEqual([1, 2, 3, 4]);
  });

  test("an alpha outside 0..1 (or not a number) is InvalidInput", () => {
    for (const alpha of [-0.1, 1.1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => fuse(candidates, alpha)).toThrow(InvalidInput);
    }
  });
});
