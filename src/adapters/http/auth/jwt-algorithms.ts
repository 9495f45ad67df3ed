/**
 * The HMAC algorithms a token may be signed with; the service accepts only the configured one. Apart
 * from JwtTokenService so that reading the settings does not load the JWT library.
 */
export const JWT_ALGORITHMS = ["HS256", "HS384", "HS512"] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];
