import type { ApiKey } from "../../../domain/api-keys.ts";

/** A key as the API (and the command line) shows it: never its secret. No Elysia here: `keys list` uses it too. */
export function keyView(apiKey: ApiKey, prefix: string) {
  return {
    id: apiKey.id,
    name: apiKey.name,
    prefix,
    actions: apiKey.actions === "*" ? ["*"] : [...apiKey.actions],
    catalogues: apiKey.catalogues === "*" ? ["*"] : [...apiKey.catalogues],
    expires_at: apiKey.expiresAt?.toISOString() ?? null,
    created_at: apiKey.createdAt.toISOString(),
  };
}

/** A key as listed: with when it was last used. */
export function listedKeyView(apiKey: ApiKey, prefix: string) {
  return { ...keyView(apiKey, prefix), last_used_at: apiKey.lastUsedAt?.toISOString() ?? null };
}
