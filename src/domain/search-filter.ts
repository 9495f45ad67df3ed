import type { SearchFilter } from "./caller.ts";
import { InvalidInput } from "./errors.ts";
import { normalizeCategories } from "./manage-products.ts";

/**
 * A tenant token's `filter` claim, checked: an object with the search request's filter fields
 * (today `category`: a category or a list of 1 to 20), nothing else. Undefined when it is not one.
 */
export function tenantFilterOf(claim: unknown): SearchFilter | undefined {
  if (claim === undefined) return {};
  if (typeof claim !== "object" || claim === null || Array.isArray(claim)) return undefined;
  const { category, ...others } = claim as Record<string, unknown>;
  if (Object.keys(others).length > 0) return undefined;
  if (category === undefined) return {};
  const list = typeof category === "string" ? [category] : category;
  if (!Array.isArray(list) || !list.every((item) => typeof item === "string")) return undefined;
  try {
    return { category: normalizeCategories(list as string[]) };
  } catch (error) {
    if (error instanceof InvalidInput) return undefined;
    throw error;
  }
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
