import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { ApiKeySecrets, TenantTokenClaims } from "../../ports/api-key-secrets.ts";

/** What every API key starts with: tells a key from a JWT (which starts with `eyJ`) at a glance, and to secret scanners. */
export const KEY_PREFIX = "sks_";

/** 16 hex digits: 64 random bits, so ids never collide in practice (the secret part is what proves a key). */
const KEY_ID = /^[0-9a-f]{16}$/;

/** `sks_<id>_<43 characters: the base64url of an HMAC-SHA256>`. */
const KEY_FORM = /^sks_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** A JWT's three base64url parts. */
const JWT_FORM = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/;

/** Separates the keys' secret from the login tokens' signing secret it is derived from. */
const DERIVATION_LABEL = "sku-search api keys v1";

/**
 * API keys derived from the server's secret, as Meilisearch derives its keys from its master key:
 * key = `sks_<id>_` + base64url(HMAC-SHA256(K, id)), where K = HMAC-SHA256(JWT_SECRET, "sku-search
 * api keys v1"). The database holds ids, never keys: a dump alone yields none, and the server
 * recomputes a key from its id to check it, or to verify a tenant token signed with it. Rotating
 * JWT_SECRET therefore ends every key and every tenant token (as well as every login token).
 *
 * Tenant tokens are JWTs signed HS256 with the key itself (its text, as UTF-8, is the HMAC secret),
 * payload `{"key_id", "exp", "filter"}`: checked here by hand, being a few lines of HMAC, so that the
 * header is held to exactly `alg: HS256` (`none`, another algorithm, `crit` are refused) and the
 * signature compared in constant time in its canonical encoding (a re-encoded signature is refused).
 */
export class HmacApiKeys implements ApiKeySecrets {
  private readonly derivationKey: Buffer;

  constructor(serverSecret: string) {
    this.derivationKey = createHmac("sha256", serverSecret).update(DERIVATION_LABEL).digest();
  }

  newKeyId(): string {
    return randomBytes(8).toString("hex");
  }

  keyOf(keyId: string): string {
    if (!KEY_ID.test(keyId)) throw new Error(`not a key id: ${keyId}`);
    return `${this.prefixOf(keyId)}_${this.macOf(keyId)}`;
  }

  prefixOf(keyId: string): string {
    return `${KEY_PREFIX}${keyId}`;
  }

  isKey(credential: string): boolean {
    return credential.startsWith(KEY_PREFIX);
  }

  keyIdOf(presented: string): string | undefined {
    const match = KEY_FORM.exec(presented);
    if (!match) return undefined;
    const [, keyId = "", mac = ""] = match;
    return sameText(mac, this.macOf(keyId)) ? keyId : undefined;
  }

  tenantKeyId(token: string): string | undefined {
    const match = JWT_FORM.exec(token);
    if (!match) return undefined;
    const payload = jsonPart(match[2] ?? "");
    return typeof payload?.key_id === "string" ? payload.key_id : undefined;
  }

  verifyTenantToken(token: string): TenantTokenClaims | null {
    const match = JWT_FORM.exec(token);
    if (!match) return null;
    const [, header64 = "", payload64 = "", signature = ""] = match;
    const header = jsonPart(header64);
    const payload = jsonPart(payload64);
    if (!header || !payload) return null;
    if (header.alg !== "HS256" || "crit" in header || (header.typ !== undefined && header.typ !== "JWT")) return null;
    const { key_id: keyId, exp, filter } = payload;
    if (typeof keyId !== "string" || !KEY_ID.test(keyId)) return null;
    if (typeof exp !== "number" || !Number.isFinite(exp)) return null;
    const expected = createHmac("sha256", this.keyOf(keyId)).update(`${header64}.${payload64}`).digest("base64url");
    if (!sameText(signature, expected)) return null;
    return { keyId, expiresAt: exp * 1000, filter };
  }

  private macOf(keyId: string): string {
    return createHmac("sha256", this.derivationKey).update(keyId).digest("base64url");
  }
}

/** A base64url part holding a JSON object; undefined when it is anything else. */
function jsonPart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Equal texts, compared in constant time for equal lengths. */
function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
