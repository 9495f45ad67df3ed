import { describe, expect, test } from "bun:test";
import { InvalidInput } from "../../src/domain/errors.ts";
import { fuse } from "../../src/domain/hybrid-ranking.ts";
import type { HybridCandidate } from "../../src/domain/product.ts";

function candidate(id: number, score: number, lexical: number, category = "c"): HybridCandidate {
  return { id, name: `p${id}`, description: "", category, version: 1, score, lexical };
}

const blend = (alpha: number) => ({ alpha, categoryBoost: 0 });

describe("fuse", () => {
  const candidates = [candidate(1, 0.9, 0), candidate(2, 0.7, 0.5), candidate(3, 0.5, 1), candidate(4, 0.3, 0)];

  test("alpha 1 ranks by cosine, alpha 0 by the lexical match", () => {
    expect(fuse(candidates, blend(1)).map((c) => c.id)).toEqual([1, 2, 3, 4]);
    expect(fuse(candidates, blend(0)).map((c) => c.id)).toEqual([3, 2, 1, 4]);
  });

  test("in between, each score is normalised over the candidates and blended: alpha·cos + (1−alpha)·lexical", () => {
    const fused = fuse(candidates, blend(0.5));
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
    expect(fuse(none, blend(0.75)).map((c) => c.id)).toEqual([1, 2, 3, 4]);
  });

  test("an alpha outside 0..1 (or not a number) is InvalidInput", () => {
    for (const alpha of [-0.1, 1.1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => fuse(candidates, blend(alpha))).toThrow(InvalidInput);
    }
  });
});

describe("the category boost", () => {
  // Eleven candidates: the best ten by the blend are mostly cushions; a phone cover strays among them.
  const cushions = Array.from({ length: 8 }, (_, i) => candidate(10 + i, 0.8 - i * 0.02, 0.5, "Home Furnishing"));
  const phoneCover = candidate(2, 0.79, 1, "Mobiles & Accessories");
  const mug = candidate(3, 0.62, 0.4, "Kitchen & Dining");
  const all = [...cushions, phoneCover, mug, candidate(4, 0.1, 0, "Kitchen & Dining")];

  test("products of the categories that dominate the best ten rise, in proportion to their share", () => {
    const plain = fuse(all, { alpha: 0.75, categoryBoost: 0 });
    const boosted = fuse(all, { alpha: 0.75, categoryBoost: 0.4 });
    // Without the boost the phone cover's words put it first; with it the cushions pass it.
    expect(plain[0]?.id).toBe(phoneCover.id);
    expect(boosted[0]?.category).toBe("Home Furnishing");
    expect(boosted.findIndex((c) => c.id === phoneCover.id)).toBeGreaterThan(0);
    const gain = (id: number) =>
      (boosted.find((c) => c.id === id)?.fusedScore ?? 0) - (plain.find((c) => c.id === id)?.fusedScore ?? 0);
    // 8 of the best 10 are cushions, 1 the phone cover, 1 the mug: 0.4 × 0.8, 0.4 × 0.1, 0.4 × 0.1.
    expect(gain(cushions[0]?.id as number)).toBeCloseTo(0.32, 9);
    expect(gain(phoneCover.id)).toBeCloseTo(0.04, 9);
    expect(gain(mug.id)).toBeCloseTo(0.04, 9);
    // A product further down gains its category's share all the same (the mug's: one of ten).
    expect(gain(4)).toBeCloseTo(0.04, 9);
  });

  test("which categories dominate is told by the blend at dominanceAlpha (a lexical search's own order is words alone)", () => {
    // Nine cushions near by meaning, three kitchen products matching by words only.
    const near = Array.from({ length: 9 }, (_, i) => candidate(20 + i, 0.9 - i * 0.01, 0, "Home Furnishing"));
    const worded = [0.3, 0.2, 0.1].map((score, i) => candidate(40 + i, score, 1, "Kitchen & Dining"));
    const kitchenGain = (dominanceAlpha: number) => {
      const ranked = fuse([...near, ...worded], { alpha: 0, categoryBoost: 0.4, dominanceAlpha });
      return (ranked.find((c) => c.id === 42)?.fusedScore ?? 0) - 1;
    };
    // By words alone the best ten hold the three kitchen products; by meaning, one of them.
    expect(kitchenGain(0)).toBeCloseTo(0.4 * 0.3, 9);
    expect(kitchenGain(1)).toBeCloseTo(0.4 * 0.1, 9);
  });
});
