export interface TokenClaims {
  userId: number;
  username: string;
  /** The user's tokenVersion when the token was issued. */
  tokenVersion: number;
}

/** The claims of a token found valid, and when it expires. */
export interface VerifiedToken extends TokenClaims {
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export interface TokenService {
  /** How long an issued token stays valid, in seconds (OAuth2's `expires_in`). */
  readonly lifetimeSeconds: number;
  issue(claims: TokenClaims): Promise<string>;
  /**
   * The claims of a valid token; null when it is malformed, forged, of another algorithm, expired,
   * or issued in the future (beyond a small clock skew).
   */
  verify(token: string): Promise<VerifiedToken | null>;
}
