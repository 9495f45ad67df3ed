import type { AttributeCondition } from "./attribute-filter.ts";

/** What a route may require of its caller (the HTTP adapter's auth macro declares one per route). */
export const PERMISSIONS = ["search", "products.read", "products.write", "catalogues.manage", "keys.manage"] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** A permission, or "*": every permission there is (an API key's `actions` are these). */
export type Grant = Permission | "*";

/** The permissions that act inside one catalogue: a caller must also see the catalogue (canSeeCatalogue). */
export const CATALOGUE_PERMISSIONS: readonly Permission[] = ["search", "products.read", "products.write"];

/** The catalogue the contract's own routes (`/products…`) stand for. */
export const DEFAULT_CATALOGUE = "default";

/**
 * A tenant token's search filter: the search request's filter fields (today `category`), which every
 * search of its holder is narrowed by (search-filter.ts).
 */
export interface SearchFilter {
  category?: string | readonly string[] | undefined;
  /** Conditions on attributes every result must meet (attribute-filter.ts). */
  attributes?: readonly AttributeCondition[] | undefined;
}

/**
 * Who is calling: anonymous (no credential looked at), the user of a login token, an API key, or
 * the holder of a tenant token (a JWT signed with an API key's secret). Each holds what it was
 * granted and the catalogues it may see.
 */
export interface Caller {
  kind: "anonymous" | "user" | "key" | "tenant";
  /** "*" or the permissions granted. */
  grants: "*" | readonly Permission[];
  /** "*" or the catalogue names this caller may see (others answer 404, as if they did not exist). */
  catalogues: "*" | readonly string[];
  /** Tenant tokens: the search filter every search is narrowed by (same shape as the request's filters). */
  filter?: SearchFilter | undefined;
  /**
   * For rate limits, logs and job ownership: "user:12", "key:<key id>", "tenant:<key id>";
   * "anonymous" for anonymous callers (counted by address instead).
   */
  id: string;
}

/** A user's role: what every token of theirs may do. */
export const ROLES = ["admin", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** What each role grants: an admin everything, a viewer searching and reading the catalogues. */
export const ROLE_GRANTS: Record<Role, "*" | readonly Permission[]> = {
  admin: "*",
  viewer: ["search", "products.read"],
};

/** The anonymous caller of a service that opens `open` to anyone (the search, with SEARCH_REQUIRES_AUTH=false). */
export function anonymousCaller(open: readonly Permission[]): Caller {
  return { kind: "anonymous", grants: open, catalogues: "*", id: "anonymous" };
}

/** The caller a user's login token stands for: what the user's role grants, in every catalogue. */
export function userCaller(user: { id: number; role: Role }): Caller {
  return { kind: "user", grants: ROLE_GRANTS[user.role], catalogues: "*", id: `user:${user.id}` };
}

export function allows(caller: Caller, permission: Permission): boolean {
  return caller.grants === "*" || caller.grants.includes(permission);
}

export function canSeeCatalogue(caller: Caller, catalogue: string): boolean {
  return caller.catalogues === "*" || caller.catalogues.includes(catalogue);
}

/**
 * Whose budget a request spends: the caller's id, or undefined for anonymous (counted by address
 * instead). `perAddress`: a storefront's credential (a tenant token, or a key that may only search)
 * sits in many shoppers' browsers at once, so it is counted per caller and client address: one
 * shopper (or one abuser of a leaked key) cannot spend every other shopper's searches.
 */
export function rateLimitClient(caller: Caller): { id: string; perAddress: boolean } | undefined {
  if (caller.kind === "anonymous") return undefined;
  const searchOnly = caller.grants !== "*" && caller.grants.every((grant) => grant === "search");
  return { id: caller.id, perAddress: caller.kind === "tenant" || (caller.kind === "key" && searchOnly) };
}

/**
 * Whose an import job or an Idempotency-Key is (only they may read the job; another caller's same
 * key is another key): the caller's id; undefined for anonymous and tenant tokens, who cannot write.
 */
export function writerOf(caller: Caller): string | undefined {
  return caller.kind === "user" || caller.kind === "key" ? caller.id : undefined;
}
