import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { HmacApiKeys } from "../../../src/adapters/security/hmac-api-keys.ts";

const SERVER_SECRET = "un-secreto-de-servidor-de-al-menos-32-bytes";

/** A JWT made by hand, as a shop's backend makes a tenant token. */
function jwt(header: object, payload: object, signingKey: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part(header)}.${part(payload)}`;
  return `${signed}.${createHmac("sha256", signingKey).update(signed).digest("base64url")}`;
}

describe("HmacApiKeys", () => {
  const keys = new HmacApiKeys(SERVER_SECRET);
  const id = keys.newKeyId();
  const key = keys.keyOf(id);

  test("a key is sks_<id>_<mac>: recognised, its id recovered, and derived again the same way", () => {
    expect(key).toMatch(/^sks_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(key.startsWith(keys.prefixOf(id))).toBe(true);
    expect(keys.isKey(key)).toBe(true);
    expect(keys.keyIdOf(key)).toBe(id);
    expect(new HmacApiKeys(SERVER_SECRET).keyOf(id)).toBe(key);
    expect(keys.newKeyId()).not.toBe(id);
  });

  test("a key of another server secret (JWT_SECRET rotated), or with a changed character, is none of ours", () => {
    expect(keys.keyIdOf(new HmacApiKeys(`${SERVER_SECRET}-rotado`).keyOf(id))).toBeUndefined();
    const last = key.at(-1) === "A" ? "B" : "A";
    expect(keys.keyIdOf(`${key.slice(0, -1)}${last}`)).toBeUndefined();
    expect(keys.keyIdOf(`${key}x`)).toBeUndefined();
    expect(keys.keyIdOf(keys.prefixOf(id))).toBeUndefined();
    expect(keys.isKey("eyJhbGciOiJIUzI1NiJ9.e30.x")).toBe(false);
  });

  test("a tenant token signed with the key verifies; its filter and expiry come out as they went in", () => {
    const token = jwt({ alg: "HS256", typ: "JWT" }, { key_id: id, exp: 2_000_000_000, filter: { category: "A" } }, key);
    expect(keys.tenantKeyId(token)).toBe(id);
    expect(keys.verifyTenantToken(token)).toEqual({
      keyId: id,
      expiresAt: 2_000_000_000_000,
      filter: { category: "A" },
    });
  });

  test("tampered, re-signed with another key, alg none or HS512, crit, no exp: refused", () => {
    const payload = { key_id: id, exp: 2_000_000_000, filter: { category: "A" } };
    const good = jwt({ alg: "HS256" }, payload, key);
    const [header64, , signature] = good.split(".");
    const widened = Buffer.from(JSON.stringify({ ...payload, filter: {} })).toString("base64url");
    const other = new HmacApiKeys(SERVER_SECRET);
    const refused = [
      `${header64}.${widened}.${signature}`,
      jwt({ alg: "HS256" }, payload, other.keyOf(other.newKeyId())),
      `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${good.split(".")[1]}.`,
      `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${good.split(".")[1]}.${signature}`,
      jwt({ alg: "HS512" }, payload, key),
      jwt({ alg: "HS256", crit: ["exp"] }, payload, key),
      jwt({ alg: "HS256" }, { key_id: id, filter: {} }, key),
      jwt({ alg: "HS256" }, { key_id: id, exp: "2000000000" }, key),
      jwt({ alg: "HS256" }, { key_id: "../../etc", exp: 2_000_000_000 }, key),
      "no.es.un-token",
    ];
    for (const token of refused) expect(keys.verifyTenantToken(token)).toBeNull();
    // A signature in another base64 spelling of the same bytes is not the canonical one: refused.
    expect(keys.verifyTenantToken(`${good}=`)).toBeNull();
  });

  test("a login token (no key_id) is not taken for a tenant token", () => {
    expect(keys.tenantKeyId(jwt({ alg: "HS256" }, { sub: "1", exp: 2_000_000_000 }, SERVER_SECRET))).toBeUndefined();
  });
});
