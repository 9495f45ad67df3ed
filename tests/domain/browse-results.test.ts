import { describe, expect, test } from "bun:test";
import {
  browse,
  checkedBrowse,
  FIRST_WINDOW,
  RESULT_WINDOW,
  relevantResults,
  relevantWindow,
} from "../../src/domain/browse-results.ts";
import { InvalidInput } from "../../src/domain/errors.ts";
import type { Product } from "../../src/domain/product.ts";

const product = (id: number, attributes?: Product["attributes"], category = "calzado"): Product => ({
  id,
  name: `P${id}`,
  description: "",
  category,
  ...(attributes ? { attributes } : {}),
});

// Most relevant first, as a search ranks them.
const RELEVANT = [
  product(7, { brand: "Acme", price: 50, sizes: ["41", "42"] }),
  product(3, { brand: "Zeta", price: 10 }),
  product(9, { brand: "Acme", price: 50 }, "hogar"),
  product(1, { brand: "Órbita", price: 90, sizes: ["42"] }),
  product(4),
  product(2, { brand: "Acme", price: "barato" }),
];

describe("browse", () => {
  test("facets count every relevant result exactly: values most frequent first, numbers in ranges", () => {
    const request = { offset: 0, sort: [], facets: ["brand", "category", "sizes", "price", "color"] };
    const { facets, total } = browse(RELEVANT, request, 2);
    expect(total).toEqual({ value: 6, relation: "eq" });
    expect(facets).toEqual({
      brand: [
        { value: "Acme", count: 3 },
        { value: "Órbita", count: 1 },
        { value: "Zeta", count: 1 },
      ],
      category: [
        { value: "calzado", count: 5 },
        { value: "hogar", count: 1 },
      ],
      sizes: [
        { value: "42", count: 2 },
        { value: "41", count: 1 },
      ],
      // "barato" is no number: the price facet counts values.
      price: [
        { value: 50, count: 2 },
        { value: 10, count: 1 },
        { value: 90, count: 1 },
        { value: "barato", count: 1 },
      ],
      color: [],
    });
    const numbers = browse(RELEVANT.slice(0, 4), { offset: 0, sort: [], facets: ["price"] }, 2).facets?.price;
    expect(numbers).toEqual({
      min: 10,
      max: 90,
      buckets: [
        { from: 10, to: 26, count: 1 },
        { from: 26, to: 42, count: 0 },
        { from: 42, to: 58, count: 2 },
        { from: 58, to: 74, count: 0 },
        { from: 74, to: 90, count: 1 },
      ],
    });
  });

  test("sort by an attribute, ties by relevance, products without it last in either direction", () => {
    const ids = (sort: { key: string; direction: "asc" | "desc" }[]) =>
      browse(RELEVANT, { offset: 0, sort, facets: [] }, 10).page.map((p) => p.id);
    // 7 and 9 tie at 50: 7 is the more relevant; 2's price is a text (after numbers); 4 has none.
    expect(ids([{ key: "price", direction: "asc" }])).toEqual([3, 7, 9, 1, 2, 4]);
    expect(ids([{ key: "price", direction: "desc" }])).toEqual([1, 7, 9, 3, 2, 4]);
    expect(
      ids([
        { key: "brand", direction: "asc" },
        { key: "price", direction: "desc" },
      ]),
    ).toEqual([7, 9, 2, 1, 3, 4]);
    expect(ids([])).toEqual([7, 3, 9, 1, 4, 2]);
  });

  test("pages of any size cover every relevant result exactly once, in the same order", () => {
    for (const sort of [[], [{ key: "price", direction: "asc" as const }]]) {
      const whole = browse(RELEVANT, { offset: 0, sort, facets: [] }, 10).page.map((p) => p.id);
      for (const size of [1, 2, 4]) {
        const paged: number[] = [];
        for (let offset = 0; offset < RELEVANT.length; offset += size) {
          paged.push(...browse(RELEVANT, { offset, sort, facets: [] }, size).page.map((p) => p.id));
        }
        expect(paged).toEqual(whole);
      }
    }
  });

  test("a full window's total is labelled gte", () => {
    const many = Array.from({ length: RESULT_WINDOW }, (_, i) => product(i + 1));
    expect(browse(many, { offset: 0, sort: [], facets: [] }, 5).total).toEqual({
      value: RESULT_WINDOW,
      relation: "gte",
    });
  });
});

describe("checkedBrowse", () => {
  test("no offset, sort or facets: no browsing (the search answers as before)", () => {
    expect(checkedBrowse({}, 5)).toBeUndefined();
    expect(checkedBrowse({ offset: 0 }, 5)).toEqual({ offset: 0, sort: [], facets: [] });
  });

  test("invalid offset, sort or facets are InvalidInput naming the field", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ offset: -1 }, "'offset'"],
      [{ offset: 996 }, "'offset'"],
      [{ offset: 1.5 }, "'offset'"],
      [{ sort: { price: "asc" } }, "'sort'"],
      [{ sort: [{ price: "up" }] }, "'sort'"],
      [{ sort: [{ price: "asc", brand: "desc" }] }, "'sort'"],
      [{ sort: [{ Price: "asc" }] }, "'Price'"],
      [{ facets: "brand" }, "'facets'"],
      [{ facets: ["Brand"] }, "'Brand'"],
    ];
    for (const [request, named] of cases) {
      expect(() => checkedBrowse(request, 5)).toThrow(InvalidInput);
      expect(() => checkedBrowse(request, 5)).toThrow(named);
    }
    expect(checkedBrowse({ offset: 995 }, 5)).toMatchObject({ offset: 995 });
  });
});

describe("relevantResults", () => {
  const hit = (id: number, score: number, fusedScore?: number) => ({
    id,
    score,
    ...(fusedScore === undefined ? {} : { fusedScore }),
  });

  test("keeps the products scoring at least the share of the best, by the cosine", () => {
    const window = [hit(1, 0.6), hit(2, 0.45), hit(3, 0.42), hit(4, 0.41)];
    expect(relevantResults(window, 0.7).map((h) => h.id)).toEqual([1, 2, 3]);
  });

  test("where the search blends, by its cosine or by its blended score: relevant by meaning or by the blend", () => {
    const window = [hit(1, 0.2, 0.9), hit(2, 0.6, 0.5), hit(3, 0.1, 0.7), hit(4, 0.4, 0.6)];
    expect(relevantResults(window, 0.75).map((h) => h.id)).toEqual([1, 2, 3]);
    // Three products left by a filter: the blend's min-max scaling puts the last at 0 whatever its
    // cosine (running shoes of three brands, measured on the eval catalogue); their cosines keep them.
    const few = [hit(7537, 0.663, 1.4), hit(9871, 0.572, 0.64), hit(9788, 0.529, 0.4)];
    expect(relevantResults(few, 0.7)).toEqual(few);
  });

  test("a share of 0, or a best score of 0 or below, keeps the whole window", () => {
    const window = [hit(1, 0.6), hit(2, 0.01)];
    expect(relevantResults(window, 0)).toEqual(window);
    expect(relevantResults([hit(1, -0.1), hit(2, -0.5)], 0.7)).toHaveLength(2);
    expect(relevantResults([], 0.7)).toEqual([]);
  });
});

describe("relevantWindow", () => {
  /** A window of `count` hits whose scores fall from 1 by `step`, recording each size asked. */
  const windowFrom = (count: number, step: number) => {
    const asked: number[] = [];
    const windowOf = async (size: number) => {
      asked.push(size);
      return Array.from({ length: Math.min(size, count) }, (_, i) => ({ id: i + 1, score: 1 - i * step }));
    };
    return { asked, windowOf };
  };

  test("the relevant results all lie in the first window when its last is not one: it alone is read", async () => {
    const { asked, windowOf } = windowFrom(5_000, 0.01); // 0.7 of the best reached at the 31st
    const relevant = await relevantWindow(windowOf, 0.7);
    expect(asked).toEqual([FIRST_WINDOW]);
    expect(relevant).toHaveLength(31);
  });

  test("when the first window is relevant to its last, the whole window is read", async () => {
    const { asked, windowOf } = windowFrom(5_000, 0.0005); // 0.7 of the best reached at the 601st
    const relevant = await relevantWindow(windowOf, 0.7);
    expect(asked).toEqual([FIRST_WINDOW, RESULT_WINDOW]);
    expect(relevant).toHaveLength(601);
    expect(relevant).toEqual((await windowOf(RESULT_WINDOW)).filter((hit) => hit.score >= 0.7));
  });

  test("a first window shorter than asked is all there is; a share of 0 reads the whole window at once", async () => {
    const few = windowFrom(40, 0.001);
    expect(await relevantWindow(few.windowOf, 0.7)).toHaveLength(40);
    expect(few.asked).toEqual([FIRST_WINDOW]);
    const all = windowFrom(5_000, 0.01);
    expect(await relevantWindow(all.windowOf, 0)).toHaveLength(RESULT_WINDOW);
    expect(all.asked).toEqual([RESULT_WINDOW]);
  });
});
