import { describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { CLOCK_SKEW_SECONDS, JwtTokenService } from "../../../../src/adapters/http/auth/jwt-token-service.ts";

const SECRET = "un-secreto-de-pruebas-de-al-menos-32-bytes";
const key = new TextEncoder().encode(SECRET);
const service = new JwtTokenService({ secret: SECRET, algorithm: "HS256", expireMinutes: 30 });
const now = () => Math.floor(Date.now() / 1000);

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

function signed(payload: Record<string, unknown>, alg = "HS256", secret = key): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg, typ: "JWT" }).sign(secret);
}

describe("JwtTokenService", () => {
  test("issues a token whose claims are sub (as a string), username, iat and exp", async () => {
    const token = await service.issue({ userId: 42, username: "ana", tokenVersion: 0 });
    const [header, payload] = token
      .split(".")
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
    expect(header.alg).toBe("HS256");
    expect(payload.sub).toBe("42");
    expect(payload.username).toBe("ana");
    expect(payload.exp - payload.iat).toBe(30 * 60);
    expect(service.lifetimeSeconds).toBe(payload.exp - payload.iat);
    expect(await service.verify(token)).toEqual({
      userId: 42,
      username: "ana",
      tokenVersion: 0,
      expiresAt: payload.exp * 1000,
    });
  });

  test("signs with the configured algorithm", async () => {
    const hs512 = new JwtTokenService({ secret: SECRET, algorithm: "HS512", expireMinutes: 5 });
    const token = await hs512.issue({ userId: 1, username: "ana", tokenVersion: 0 });
    expect(JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString()).alg).toBe("HS512");
    expect(await hs512.verify(token)).toEqual({
      userId: 1,
      username: "ana",
      tokenVersion: 0,
      expiresAt: expect.any(Number),
    });
  });

  test("refuses a token of another HMAC algorithm, even with the right secret", async () => {
    const token = await signed({ sub: "1", username: "ana", iat: now(), exp: now() + 60 }, "HS512");
    expect(await service.verify(token)).toBeNull();
  });

  test("refuses alg none", async () => {
    const payload = base64url({ sub: "1", username: "ana", iat: now(), exp: now() + 60 });
    expect(await service.verify(`${base64url({ alg: "none", typ: "JWT" })}.${payload}.`)).toBeNull();
    expect(await service.verify(`${base64url({ alg: "none" })}.${payload}`)).toBeNull();
  });

  test("refuses a token signed with another secret", async () => {
    const other = new TextEncoder().encode("otro-secreto-de-pruebas-de-al-menos-32-bytes");
    expect(
      await service.verify(await signed({ sub: "1", username: "ana", iat: now(), exp: now() + 60 }, "HS256", other)),
    ).toBeNull();
  });

  test("refuses an expired token", async () => {
    expect(
      await service.verify(await signed({ sub: "1", username: "ana", iat: now() - 3600, exp: now() - 60 })),
    ).toBeNull();
  });

  test("refuses a token issued in the future beyond the clock skew; a little ahead is fine", async () => {
    const ahead = (seconds: number) =>
      signed({ sub: "1", username: "ana", iat: now() + seconds, exp: now() + seconds + 600 });
    expect(await service.verify(await ahead(3600))).toBeNull();
    // Well past the skew: refused however slowly this test runs (the clock is real here).
    expect(await service.verify(await ahead(CLOCK_SKEW_SECONDS + 600))).toBeNull();
    expect(await service.verify(await ahead(10))).toEqual({
      userId: 1,
      username: "ana",
      tokenVersion: 0,
      expiresAt: expect.any(Number),
    });
  });

  test("carries the token version; a token without one has version 0, a bad one is refused", async () => {
    const issued = await service.issue({ userId: 5, username: "ana", tokenVersion: 3 });
    expect(await service.verify(issued)).toEqual({
      userId: 5,
      username: "ana",
      tokenVersion: 3,
      expiresAt: expect.any(Number),
    });
    const claims = { sub: "5", username: "ana", iat: now(), exp: now() + 60 };
    expect((await service.verify(await signed(claims)))?.tokenVersion).toBe(0);
    for (const ver of [-1, 1.5, "2", null]) {
      expect(await service.verify(await signed({ ...claims, ver }))).toBeNull();
    }
  });

  test("refuses malformed tokens", async () => {
    for (const token of ["", "abc", "a.b.c", "a.b", `${base64url({ alg: "HS256" })}.no-json.sig`]) {
      expect(await service.verify(token)).toBeNull();
    }
  });

  test("refuses tokens with missing or invalid claims", async () => {
    const t = now();
    const cases = [
      { username: "ana", iat: t, exp: t + 60 }, // no sub
      { sub: "1", iat: t, exp: t + 60 }, // no username
      { sub: "1", username: "ana", iat: t }, // no exp: it would never expire
      { sub: "1", username: "ana", exp: t + 60 }, // no iat
      { sub: "abc", username: "ana", iat: t, exp: t + 60 },
      { sub: "0", username: "ana", iat: t, exp: t + 60 },
      { sub: "-1", username: "ana", iat: t, exp: t + 60 },
      { sub: "1.5", username: "ana", iat: t, exp: t + 60 },
      { sub: "1", username: 7, iat: t, exp: t + 60 },
    ];
    for (const payload of cases) expect(await service.verify(await signed(payload))).toBeNull();
  });
});
