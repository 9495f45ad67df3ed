export interface TokenClaims {
  userId: number;
  username: string;
}

export interface TokenService {
  issue(claims: TokenClaims): Promise<string>;
  /** The claims of a valid token; null when it is malformed, forged, of another algorithm or expired. */
  verify(token: string): Promise<TokenClaims | null>;
}
