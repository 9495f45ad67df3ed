import { ATTRIBUTE_KEY, type AttributeValue } from "./attributes.ts";
import { InvalidInput } from "./errors.ts";
import type { Product } from "./product.ts";

/**
 * The relevant results of a search that pages, sorts or counts facets: of the best RESULT_WINDOW
 * products it ranks (those a search with that limit would answer, the relevance threshold applied
 * as always), the ones that score at least a share of the best one's score (relevantResults).
 * Pages are cut from them, `sort` orders them, facets count them and `total` is how many there are
 * ("gte" when the window is full: there may be more).
 */
export const RESULT_WINDOW = 1000;

/**
 * A browsing search first reads this many of its best, and the whole RESULT_WINDOW only when all
 * of them are relevant (relevantWindow). On the eval set's dev queries a query's relevant results
 * numbered 38 to 46 on average by mode, and on bench/filters.ts's vectors 7 to 193; the
 * window's cost grows with its size (at 100,000 × 3072, 4.7 ms for 100, 6.5 for 300, 13.2 for 1,000).
 */
export const FIRST_WINDOW = 250;

/** The share of the best score a relevant result reaches by default (RELEVANT_RESULTS_MIN_SHARE). */
export const DEFAULT_RELEVANT_SHARE = 0.7;

/**
 * The window's products whose cosine is at least `share` of the best cosine, or, where the search
 * blends (hybrid and lexical mode), whose blended score is at least `share` of the best one: relevant
 * by meaning or by the blend. Not by the blend alone: its min-max scaling puts the last of a few
 * candidates (a filter leaving three) at 0 whatever its cosine. 0 keeps the whole window. On the
 * eval set's dev queries (bench/eval.ts: 1,656 products, a window of 1,000), 2.4 % of the window
 * was relevant to the query; at 0.7, 54 % (semantic) and 51 % (hybrid) of what was kept, holding
 * 85 % and 89 % of the products the query asks for; so a page sorted by price shows mostly those.
 */
export function relevantResults<T extends { score: number; fusedScore?: number }>(
  window: readonly T[],
  share: number,
): readonly T[] {
  if (share <= 0) return window;
  const bestCosine = Math.max(0, ...window.map((hit) => hit.score));
  const bestFused = Math.max(0, ...window.map((hit) => hit.fusedScore ?? 0));
  if (bestCosine <= 0 && bestFused <= 0) return window;
  return window.filter(
    (hit) =>
      (bestCosine > 0 && hit.score >= share * bestCosine) ||
      (hit.fusedScore !== undefined && bestFused > 0 && hit.fusedScore >= share * bestFused),
  );
}

/** Most facets and sort keys one request may ask for; string values shown per facet; buckets of a number facet. */
export const BROWSE_LIMITS = { facets: 20, sortKeys: 3, facetValues: 20, buckets: 5 } as const;

export type SortDirection = "asc" | "desc";
export interface SortKey {
  key: string;
  direction: SortDirection;
}

/** What a search asks besides its results: a page of them, in an order, with facet counts. */
export interface BrowseRequest {
  offset: number;
  sort: SortKey[];
  facets: string[];
}

/** Counts of a text (or boolean) facet: its most frequent values, most first (then by value). */
export type ValueCounts = { value: string | number | boolean; count: number }[];

/** A facet whose every value is a number: its range and how many fall in each of equal-width buckets. */
export interface NumberFacet {
  min: number;
  max: number;
  /** `from` inclusive, `to` exclusive, but the last bucket's `to` inclusive. */
  buckets: { from: number; to: number; count: number }[];
}

export type Facet = ValueCounts | NumberFacet;

export interface Browsed<T> {
  page: T[];
  /** How many relevant results there are; `relation` "gte": the window was full, there may be more. */
  total: { value: number; relation: "eq" | "gte" };
  facets?: Record<string, Facet>;
}

/**
 * The request's offset, sort and facets checked (InvalidInput naming the field otherwise);
 * undefined when it asks for none of them (a search as before: no window, no total).
 */
export function checkedBrowse(
  request: { offset?: unknown; sort?: unknown; facets?: unknown },
  limit: number,
): BrowseRequest | undefined {
  if (request.offset === undefined && request.sort === undefined && request.facets === undefined) return undefined;
  const offset = request.offset ?? 0;
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 0 || offset + limit > RESULT_WINDOW) {
    throw new InvalidInput(
      `El campo 'offset' debe ser un entero de 0 en adelante, con offset + limit ≤ ${RESULT_WINDOW}`,
    );
  }
  return { offset, sort: checkedSort(request.sort), facets: checkedFacets(request.facets) };
}

function checkedSort(sort: unknown): SortKey[] {
  if (sort === undefined) return [];
  const problem = `El campo 'sort' debe ser una lista de hasta ${BROWSE_LIMITS.sortKeys} objetos como {"price": "asc"} (asc o desc)`;
  if (!Array.isArray(sort) || sort.length > BROWSE_LIMITS.sortKeys) throw new InvalidInput(problem);
  return sort.map((item): SortKey => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new InvalidInput(problem);
    const entries = Object.entries(item as Record<string, unknown>);
    const [key, direction] = entries[0] ?? [];
    if (entries.length !== 1 || key === undefined || (direction !== "asc" && direction !== "desc")) {
      throw new InvalidInput(problem);
    }
    if (key !== "category" && !ATTRIBUTE_KEY.test(key)) {
      throw new InvalidInput(`El campo 'sort' nombra '${key.slice(0, 80)}', que no es un atributo válido`);
    }
    return { key, direction };
  });
}

function checkedFacets(facets: unknown): string[] {
  if (facets === undefined) return [];
  if (
    !Array.isArray(facets) ||
    facets.length > BROWSE_LIMITS.facets ||
    !facets.every((name) => typeof name === "string")
  ) {
    throw new InvalidInput(`El campo 'facets' debe ser una lista de hasta ${BROWSE_LIMITS.facets} nombres de atributo`);
  }
  for (const name of facets as string[]) {
    if (name !== "category" && !ATTRIBUTE_KEY.test(name)) {
      throw new InvalidInput(`El campo 'facets' nombra '${name.slice(0, 80)}', que no es un atributo válido`);
    }
  }
  return [...new Set(facets as string[])];
}

/**
 * The page of `relevant` (the search's results, most relevant first) the request asks for: sorted
 * by its keys (a product without the attribute last, whichever the direction; then by relevance,
 * then by id, so that pages never overlap or skip), from `offset`, `limit` of them, with the total
 * and the facets counted over all of `relevant`.
 */
export function browse<T extends Product>(relevant: readonly T[], request: BrowseRequest, limit: number): Browsed<T> {
  const ranked = relevant.map((product, rank) => ({ product, rank }));
  if (request.sort.length > 0) {
    ranked.sort((a, b) => {
      for (const { key, direction } of request.sort) {
        const order = compareValues(browsedValue(a.product, key), browsedValue(b.product, key), direction);
        if (order !== 0) return order;
      }
      return a.rank - b.rank || a.product.id - b.product.id;
    });
  }
  const browsed: Browsed<T> = {
    page: ranked.slice(request.offset, request.offset + limit).map(({ product }) => product),
    total: { value: relevant.length, relation: relevant.length >= RESULT_WINDOW ? "gte" : "eq" },
  };
  if (request.facets.length > 0) {
    browsed.facets = Object.fromEntries(request.facets.map((name) => [name, facetOf(relevant, name)]));
  }
  return browsed;
}

function browsedValue(product: Product, key: string): AttributeValue | undefined {
  return key === "category" ? product.category : product.attributes?.[key];
}

const collator = new Intl.Collator("es", { numeric: true });

/** Numbers before texts before booleans; a list by its first item; missing (or an empty list) last either way. */
function compareValues(a: AttributeValue | undefined, b: AttributeValue | undefined, direction: SortDirection): number {
  const x = Array.isArray(a) ? a[0] : a;
  const y = Array.isArray(b) ? b[0] : b;
  if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
  const kinds = ["number", "string", "boolean"];
  const kindOrder = kinds.indexOf(typeof x) - kinds.indexOf(typeof y);
  if (kindOrder !== 0) return kindOrder;
  const order = typeof x === "string" ? collator.compare(x, y as string) : Number(x) - Number(y as number | boolean);
  return direction === "asc" ? order : -order;
}

/** A facet over the products: numbers when every value of it is a number, counted values otherwise. */
function facetOf(products: readonly Product[], name: string): Facet {
  const values = products.flatMap((product) => {
    const value = browsedValue(product, name);
    return value === undefined ? [] : Array.isArray(value) ? [...new Set(value as string[])] : [value];
  });
  if (values.length > 0 && values.every((value) => typeof value === "number")) {
    return numberFacet(values as number[]);
  }
  const counts = new Map<string | number | boolean, number>();
  for (const value of values) counts.set(value as string | number | boolean, (counts.get(value as string) ?? 0) + 1);
  return [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || collator.compare(String(a.value), String(b.value)))
    .slice(0, BROWSE_LIMITS.facetValues);
}

function numberFacet(values: readonly number[]): NumberFacet {
  const min = Math.min(...values);
  const max = Math.max(...values);
  if (min === max) return { min, max, buckets: [{ from: min, to: max, count: values.length }] };
  const width = (max - min) / BROWSE_LIMITS.buckets;
  const buckets = Array.from({ length: BROWSE_LIMITS.buckets }, (_, i) => ({
    from: min + i * width,
    to: i === BROWSE_LIMITS.buckets - 1 ? max : min + (i + 1) * width,
    count: 0,
  }));
  for (const value of values) {
    const at = Math.min(BROWSE_LIMITS.buckets - 1, Math.floor((value - min) / width));
    (buckets[at] as { count: number }).count++;
  }
  return { min, max, buckets };
}

/**
 * A browsing search's relevant results, its window read by `windowOf(size)` (the best `size`, best
 * first): the first FIRST_WINDOW, and when the last of them still scores at least `share` of the
 * best (or `share` is 0), the whole RESULT_WINDOW. The relevant results being those above a share
 * of the best, they are then all in the first window when its last is not; in hybrid and lexical
 * mode, whose windows are ranked by the blend, nearly all: one kept by its cosine alone may rank
 * below the first window's last.
 */
export async function relevantWindow<T extends { score: number; fusedScore?: number }>(
  windowOf: (size: number) => Promise<readonly T[]>,
  share: number,
): Promise<readonly T[]> {
  if (share > 0) {
    const first = await windowOf(FIRST_WINDOW);
    const last = first.at(-1);
    const relevant = relevantResults(first, share);
    if (first.length < FIRST_WINDOW || (last !== undefined && !relevant.includes(last))) return relevant;
  }
  return relevantResults(await windowOf(RESULT_WINDOW), share);
}
