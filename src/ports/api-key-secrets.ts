/** A tenant token's claims, once its signature was found to be its key's. */
export interface TenantTokenClaims {
  keyId: string;
  /** Milliseconds since the epoch (the token's `exp`, in seconds, times 1000). */
  expiresAt: number;
  /** The token's `filter` claim as it came (the domain checks its shape); undefined when absent. */
  filter: unknown;
}

/**
 * The secrets of API keys: each key is derived from its id and the server's secret, so it can be
 * checked (and a tenant token's signature with it verified) without storing it anywhere.
 */
export interface ApiKeySecrets {
  /** A new key id. */
  newKeyId(): string;
  /** The key of an id, as its holder sends it. */
  keyOf(keyId: string): string;
  /** The visible start of a key: enough to tell keys apart in a listing, useless as a credential. */
  prefixOf(keyId: string): string;
  /** Whether a credential has the form of an API key (its prefix), as opposed to a JWT. */
  isKey(credential: string): boolean;
  /** The id of a key that is one of ours (derived from this server's secret); undefined for anything else. */
  keyIdOf(presented: string): string | undefined;
  /** The `key_id` a JWT's payload names, unverified: set only for what claims to be a tenant token. */
  tenantKeyId(token: string): string | undefined;
  /**
   * The claims of a tenant token signed with its key (HS256 alone; any other header, `alg: none`
   * included, a bad signature, a missing or non-numeric `exp`: null). Expiry is the caller's to check.
   */
  verifyTenantToken(token: string): TenantTokenClaims | null;
}
