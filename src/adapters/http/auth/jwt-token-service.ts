import { jwt } from "@elysiajs/jwt";
import type { TokenClaims, TokenService, VerifiedToken } from "../../../ports/token-service.ts";
import type { JwtAlgorithm } from "./jwt-algorithms.ts";

export interface JwtSettings {
  secret: string;
  algorithm: JwtAlgorithm;
  expireMinutes: number;
}

/** A positive integer id, as the `sub` claim carries it. */
const USER_ID = /^[1-9][0-9]{0,15}$/;

/** How far in the future a token's `iat` may be, for clocks of replicas that disagree a little. */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * TokenService over @elysiajs/jwt (jose). Claims: `sub` (the user id as a string), `username`,
 * `ver` (the user's token version), `iat` and `exp`. Only the configured algorithm is accepted, so
 * `alg: none` and tokens signed with another HMAC size are refused, as are forged, expired and
 * malformed tokens, and tokens issued in the future (beyond CLOCK_SKEW_SECONDS).
 */
export class JwtTokenService implements TokenService {
  private readonly jwt;
  readonly lifetimeSeconds: number;

  constructor(private readonly settings: JwtSettings) {
    this.jwt = jwt({ secret: settings.secret, alg: settings.algorithm }).decorator.jwt;
    this.lifetimeSeconds = Math.round(settings.expireMinutes * 60);
  }

  issue({ userId, username, tokenVersion }: TokenClaims): Promise<string> {
    const exp = Math.floor(Date.now() / 1000) + this.lifetimeSeconds;
    return this.jwt.sign({ sub: String(userId), username, ver: tokenVersion, exp });
  }

  async verify(token: string): Promise<VerifiedToken | null> {
    const payload = await this.jwt.verify(token, {
      algorithms: [this.settings.algorithm],
      requiredClaims: ["sub", "iat", "exp"],
    });
    if (!payload) return null;
    const { sub, username, ver, iat, exp } = payload;
    if (typeof sub !== "string" || !USER_ID.test(sub) || typeof username !== "string") return null;
    if (typeof iat !== "number" || iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) return null;
    // Tokens issued before versions existed carry none: they belong to version 0.
    const tokenVersion = ver === undefined ? 0 : ver;
    if (typeof tokenVersion !== "number" || !Number.isSafeInteger(tokenVersion) || tokenVersion < 0) return null;
    if (typeof exp !== "number") return null;
    return { userId: Number(sub), username, tokenVersion, expiresAt: exp * 1000 };
  }
}
