import type { User } from "./user.ts";

/** What a route may require of its caller (the HTTP adapter's auth macro declares one per route). */
export const PERMISSIONS = ["search", "products.read", "products.write"] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** A permission, or "*": every permission there is. */
export type Grant = Permission | "*";

/**
 * Who is calling: anonymous (no credentials looked at), or the user of a bearer token. Each holds
 * the permissions it was granted: a user holds "*"; anonymous holds what the service opens to
 * anyone (the search, with SEARCH_REQUIRES_AUTH=false). Other kinds of caller (an API key with its
 * scopes) are more members of this union.
 */
export type Caller =
  | { kind: "anonymous"; grants: ReadonlySet<Grant> }
  | { kind: "user"; user: User; grants: ReadonlySet<Grant> };

/** The anonymous caller of a service that opens `open` to anyone. */
export function anonymousCaller(open: readonly Permission[]): Caller {
  return { kind: "anonymous", grants: new Set(open) };
}

/** The caller a user's bearer token stands for: every permission. */
export function userCaller(user: User): Caller {
  return { kind: "user", user, grants: new Set<Grant>(["*"]) };
}

export function permits(caller: Caller, permission: Permission): boolean {
  return caller.grants.has("*") || caller.grants.has(permission);
}

/** Whose budget a request spends: `user:<id>`; undefined for anonymous (counted by address instead). */
export function rateLimitClient(caller: Caller): string | undefined {
  return caller.kind === "user" ? `user:${caller.user.id}` : undefined;
}

/** Whose an import job is (only they may read it): `user:<id>`; undefined for anonymous, who cannot import. */
export function jobOwner(caller: Caller): string | undefined {
  return caller.kind === "user" ? `user:${caller.user.id}` : undefined;
}
