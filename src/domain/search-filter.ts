import { checkedFilter } from "./attribute-filter.ts";
import type { SearchFilter } from "./caller.ts";
import { InvalidInput } from "./errors.ts";
import { normalizeCategories } from "./manage-products.ts";

/**
 * A tenant token's `filter` claim, checked: the shape of a search request's `filter` (checkedFilter:
 * `category`, a category or a list of 1 to 20, and conditions on attributes). Undefined when it is not one.
 */
export function tenantFilterOf(claim: unknown): SearchFilter | undefined {
  if (claim === undefined) return {};
  if (typeof claim !== "object" || claim === null || Array.isArray(claim)) return undefined;
  try {
    const { categories, attributes } = checkedFilter(claim);
    return {
      ...(categories === undefined ? {} : { category: categories }),
      ...(attributes.length === 0 ? {} : { attributes }),
    };
  } catch (error) {
    if (error instanceof InvalidInput) return undefined;
    throw error;
  }
}

/**
 * Two category lists that must both hold (a request's `category` and its filter's): the categories
 * both name; either alone when the other is absent; "nothing" when they have none in common.
 */
export function bothCategories(
  a: readonly string[] | undefined,
  b: readonly string[] | undefined,
): readonly string[] | undefined | "nothing" {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const both = a.filter((category) => b.includes(category));
  return both.length === 0 ? "nothing" : both;
}

/**
 * The categories a search may look in when a filter is fixed (a tenant token's) and the request
 * asks for `requested`: a request narrows the filter, never widens it. For category lists, narrowing
 * is the intersection: the request's categories that the filter also names. No request list: the
 * filter's. No filter: the request's. An empty intersection is "nothing": the search answers no
 * products (as a search whose categories hold none), not an error, so a shopper's page simply
 * shows nothing and learns nothing of other categories.
 */
export function narrowCategories(
  requested: readonly string[] | undefined,
  fixed: SearchFilter | undefined,
): readonly string[] | undefined | "nothing" {
  const allowed = fixed?.category === undefined ? undefined : normalizeCategories(fixed.category);
  if (allowed === undefined) return requested;
  if (requested === undefined) return allowed;
  const both = requested.filter((category) => allowed.includes(category));
  return both.length === 0 ? "nothing" : both;
}
