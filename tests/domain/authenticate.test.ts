import { beforeEach, describe, expect, test } from "bun:test";
import { JwtTokenService } from "../../src/adapters/http/auth/jwt-token-service.ts";
import { Authenticate, type LoginAttempt, TOKEN_REFUSALS } from "../../src/domain/authenticate.ts";
import { InvalidCredentials, NotAuthenticated, TooManyAttempts } from "../../src/domain/errors.ts";
import { LoginThrottle, type ThrottlePolicy } from "../../src/domain/login-throttle.ts";
import type { User } from "../../src/domain/user.ts";
import type { PasswordHasher } from "../../src/ports/password-hasher.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { MemoryUserRepository } from "../fakes/memory-user-repository.ts";

/** A fast, transparent hasher that records every verification. */
class SpyHasher implements PasswordHasher {
  readonly verified: { password: string; hash: string }[] = [];
  hashes = 0;

  async hash(password: string): Promise<string> {
    this.hashes += 1;
    return `hashed:${password}`;
  }

  async verify(password: string, hash: string): Promise<boolean> {
    this.verified.push({ password, hash });
    return hash === `hashed:${password}`;
  }
}

const USERNAME_POLICY: ThrottlePolicy = { maxFailures: 3, windowMs: 10 * 60_000, lockoutMs: 5 * 60_000 };
const ADDRESS_POLICY: ThrottlePolicy = { maxFailures: 6, windowMs: 10 * 60_000, lockoutMs: 7 * 60_000 };
const SECRET = "secreto-de-pruebas-de-al-menos-32-bytes-de-largo";
const PASSWORD = "contraseña-correcta";

let users: MemoryUserRepository;
let hasher: SpyHasher;
let tokens: JwtTokenService;
let clock: FakeClock;
let auth: Authenticate;
let ana: User;

beforeEach(async () => {
  users = new MemoryUserRepository();
  hasher = new SpyHasher();
  tokens = new JwtTokenService({ secret: SECRET, algorithm: "HS256", expireMinutes: 30 });
  clock = new FakeClock();
  auth = new Authenticate({
    users,
    hasher,
    tokens,
    usernameThrottle: new LoginThrottle(USERNAME_POLICY, clock),
    addressThrottle: new LoginThrottle(ADDRESS_POLICY, clock),
  });
  ana = await users.create("ana", await hasher.hash(PASSWORD), "admin");
});

async function failure(attempt: LoginAttempt): Promise<unknown> {
  try {
    await auth.login(attempt);
  } catch (error) {
    return error;
  }
  throw new Error(`login of '${attempt.username}' unexpectedly succeeded`);
}

describe("Authenticate.login", () => {
  test("the right password gives a token the token service verifies for that user", async () => {
    const token = await auth.login({ username: "ana", password: PASSWORD });
    expect(await tokens.verify(token)).toEqual({
      userId: ana.id,
      username: "ana",
      tokenVersion: 0,
      expiresAt: expect.any(Number),
    });
    expect(await auth.userForToken(token)).toEqual(ana);
  });

  test("a wrong password and an unknown user fail alike", async () => {
    const wrongPassword = await failure({ username: "ana", password: "otra-contraseña" });
    const unknownUser = await failure({ username: "nadie", password: PASSWORD });
    expect(wrongPassword).toBeInstanceOf(InvalidCredentials);
    expect(unknownUser).toBeInstanceOf(InvalidCredentials);
    expect((unknownUser as Error).message).toBe((wrongPassword as Error).message);
    expect((wrongPassword as Error).message).toBe("Usuario o contraseña incorrectos");
  });

  test("every attempt costs exactly one password verification, whether or not the user exists", async () => {
    await failure({ username: "nadie", password: PASSWORD });
    expect(hasher.verified).toHaveLength(1);
    // The unknown user's password is checked against a hash, never skipped.
    expect(hasher.verified[0]?.password).toBe(PASSWORD);
    expect(hasher.verified[0]?.hash).not.toBe(ana.passwordHash);

    await failure({ username: "ana", password: "otra-contraseña" });
    expect(hasher.verified).toHaveLength(2);
    expect(hasher.verified[1]?.hash).toBe(ana.passwordHash);

    await auth.login({ username: "ana", password: PASSWORD });
    expect(hasher.verified).toHaveLength(3);

    await failure({ username: "otro-desconocido", password: "x" });
    expect(hasher.verified).toHaveLength(4);
  });

  test("after maxFailures failures the username is locked, even for the right password", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures; i++) {
      expect(await failure({ username: "ana", password: `mala-${i}` })).toBeInstanceOf(InvalidCredentials);
    }
    const locked = await failure({ username: "ana", password: PASSWORD });
    expect(locked).toBeInstanceOf(TooManyAttempts);
    expect((locked as TooManyAttempts).retryAfterSeconds).toBeGreaterThan(0);
    expect((locked as TooManyAttempts).retryAfterSeconds).toBe(USERNAME_POLICY.lockoutMs / 1000);
  });

  test("a locked attempt does not verify the password", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures; i++) await failure({ username: "ana", password: "mala" });
    const before = hasher.verified.length;
    await failure({ username: "ana", password: PASSWORD });
    expect(hasher.verified).toHaveLength(before);
  });

  test("the username lock applies to unknown users too, so it does not reveal which exist", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures; i++) await failure({ username: "nadie", password: "mala" });
    expect(await failure({ username: "nadie", password: "mala" })).toBeInstanceOf(TooManyAttempts);
  });

  test("the username lock ignores letter case", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures; i++) await failure({ username: "ANA", password: "mala" });
    expect(await failure({ username: "ana", password: PASSWORD })).toBeInstanceOf(TooManyAttempts);
  });

  test("once the lockout has passed, the right password works again", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures; i++) await failure({ username: "ana", password: "mala" });
    clock.advance(USERNAME_POLICY.lockoutMs - 1000);
    const stillLocked = await failure({ username: "ana", password: PASSWORD });
    expect(stillLocked).toBeInstanceOf(TooManyAttempts);
    expect((stillLocked as TooManyAttempts).retryAfterSeconds).toBe(1);
    clock.advance(1000);
    const token = await auth.login({ username: "ana", password: PASSWORD });
    expect((await tokens.verify(token))?.userId).toBe(ana.id);
  });

  test("a success resets the username's failure count", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures - 1; i++) await failure({ username: "ana", password: "mala" });
    await auth.login({ username: "ana", password: PASSWORD });
    // Without the reset, one more failure would lock the account.
    for (let i = 0; i < USERNAME_POLICY.maxFailures - 1; i++) {
      expect(await failure({ username: "ana", password: "mala" })).toBeInstanceOf(InvalidCredentials);
    }
    await auth.login({ username: "ana", password: PASSWORD });
  });

  test("without a success, failures keep adding up to the lock", async () => {
    for (let i = 0; i < USERNAME_POLICY.maxFailures - 1; i++) await failure({ username: "ana", password: "mala" });
    expect(await failure({ username: "ana", password: "mala" })).toBeInstanceOf(InvalidCredentials);
    expect(await failure({ username: "ana", password: PASSWORD })).toBeInstanceOf(TooManyAttempts);
  });

  test("the address throttle counts failures across usernames from one address", async () => {
    const clientAddress = "203.0.113.7";
    // Each username stays below its own limit; the address passes its limit.
    for (let i = 0; i < ADDRESS_POLICY.maxFailures; i++) {
      const error = await failure({ username: `usuario${i}`, password: "mala", clientAddress });
      expect(error).toBeInstanceOf(InvalidCredentials);
    }
    const locked = await failure({ username: "ana", password: PASSWORD, clientAddress });
    expect(locked).toBeInstanceOf(TooManyAttempts);
    expect((locked as TooManyAttempts).retryAfterSeconds).toBe(ADDRESS_POLICY.lockoutMs / 1000);
    // Another address, and an attempt without an address, are not affected.
    await auth.login({ username: "ana", password: PASSWORD, clientAddress: "198.51.100.1" });
    await auth.login({ username: "ana", password: PASSWORD });
  });

  test("addresses are throttled independently", async () => {
    for (let i = 0; i < ADDRESS_POLICY.maxFailures; i++) {
      await failure({ username: `usuario${i}`, password: "mala", clientAddress: "203.0.113.7" });
    }
    for (let i = 0; i < ADDRESS_POLICY.maxFailures - 1; i++) {
      const error = await failure({ username: `otro${i}`, password: "mala", clientAddress: "203.0.113.8" });
      expect(error).toBeInstanceOf(InvalidCredentials);
    }
    expect(await failure({ username: "ana", password: PASSWORD, clientAddress: "203.0.113.7" })).toBeInstanceOf(
      TooManyAttempts,
    );
    const token = await auth.login({ username: "ana", password: PASSWORD, clientAddress: "203.0.113.8" });
    expect((await tokens.verify(token))?.username).toBe("ana");
  });

  test("attempts in flight at once cannot get around the limit", async () => {
    const attempts = Array.from({ length: USERNAME_POLICY.maxFailures * 5 }, (_, i) =>
      failure({ username: "ana", password: `mala-${i}` }),
    );
    const errors = await Promise.all(attempts);
    expect(hasher.verified.length).toBeLessThanOrEqual(USERNAME_POLICY.maxFailures);
    expect(errors.filter((error) => error instanceof InvalidCredentials).length).toBeLessThanOrEqual(
      USERNAME_POLICY.maxFailures,
    );
    expect(errors.filter((error) => error instanceof TooManyAttempts).length).toBeGreaterThan(0);
    expect(await failure({ username: "ana", password: PASSWORD })).toBeInstanceOf(TooManyAttempts);
  });
});

describe("Authenticate.userForToken", () => {
  test("a valid token gives its user", async () => {
    const token = await tokens.issue({ userId: ana.id, username: "ana", tokenVersion: 0 });
    expect(await auth.userForToken(token)).toEqual(ana);
  });

  test("no token", async () => {
    await expect(auth.userForToken(undefined)).rejects.toBeInstanceOf(NotAuthenticated);
    await expect(auth.userForToken("")).rejects.toBeInstanceOf(NotAuthenticated);
  });

  test("a malformed or forged token", async () => {
    await expect(auth.userForToken("no-es-un-token")).rejects.toBeInstanceOf(NotAuthenticated);
    const forger = new JwtTokenService({ secret: `${SECRET}-otro`, algorithm: "HS256", expireMinutes: 30 });
    const forged = await forger.issue({ userId: ana.id, username: "ana", tokenVersion: 0 });
    await expect(auth.userForToken(forged)).rejects.toBeInstanceOf(NotAuthenticated);
  });

  test("the token of a user who has been removed", async () => {
    const token = await auth.login({ username: "ana", password: PASSWORD });
    await users.remove("ana");
    await expect(auth.userForToken(token)).rejects.toBeInstanceOf(NotAuthenticated);
  });

  test("a token whose username no longer matches the user id", async () => {
    const token = await auth.login({ username: "ana", password: PASSWORD });
    await users.remove("ana");
    // A new user takes the old name: the old token's id points nowhere, or to someone else.
    const again = await users.create("ana", await hasher.hash(PASSWORD), "admin");
    expect(again.id).not.toBe(ana.id);
    await expect(auth.userForToken(token)).rejects.toBeInstanceOf(NotAuthenticated);

    const mismatched = await tokens.issue({ userId: again.id, username: "otra", tokenVersion: 0 });
    await expect(auth.userForToken(mismatched)).rejects.toBeInstanceOf(NotAuthenticated);
  });
});

describe("Authenticate: verified tokens remembered", () => {
  const MAX_AGE_MS = 60_000;
  let lookups: number;
  let remembering: Authenticate;
  let stop: () => Promise<void>;

  beforeEach(async () => {
    clock = new FakeClock(Date.now());
    lookups = 0;
    const findById = users.findById.bind(users);
    users.findById = (id) => {
      lookups++;
      return findById(id);
    };
    remembering = new Authenticate({
      users,
      hasher,
      tokens,
      usernameThrottle: new LoginThrottle(USERNAME_POLICY, clock),
      addressThrottle: new LoginThrottle(ADDRESS_POLICY, clock),
      verifiedTokens: { maxEntries: 100, maxAgeMs: MAX_AGE_MS },
      clock,
    });
    stop = await remembering.rememberVerifiedTokens();
  });

  test("a token verified once is not verified again (no second look at its user)", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    expect(await remembering.userForToken(token)).toEqual(ana);
    expect(await remembering.userForToken(token)).toEqual(ana);
    expect(lookups).toBe(1);
  });

  test("a password change ends a remembered token at once, and so does removing the user", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    await remembering.userForToken(token);
    await users.updatePassword("ana", await hasher.hash("otra-contraseña"));
    await expect(remembering.userForToken(token)).rejects.toThrow(TOKEN_REFUSALS.passwordChanged);

    const fresh = await remembering.login({ username: "ana", password: "otra-contraseña" });
    await remembering.userForToken(fresh);
    await users.remove("ana");
    await expect(remembering.userForToken(fresh)).rejects.toThrow(TOKEN_REFUSALS.userGone);
  });

  test("a change heard while a token is being verified refuses it, though the row read was from before", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    const findById = users.findById;
    users.findById = async (id) => {
      const user = await findById(id); // read before the change commits...
      await users.updatePassword("ana", await hasher.hash("otra-contraseña")); // ...which lands now
      users.findById = findById;
      return user;
    };
    await expect(remembering.userForToken(token)).rejects.toThrow(TOKEN_REFUSALS.passwordChanged);
    await expect(remembering.userForToken(token)).rejects.toThrow(TOKEN_REFUSALS.passwordChanged);
  });

  test("a token a change ended stays refused when its user is read from a standby not yet caught up", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    const before = await users.findById(ana.id);
    await users.updatePassword("ana", await hasher.hash("otra-contraseña"));
    const findById = users.findById;
    users.findById = async () => before; // the standby still has the old row
    await expect(remembering.userForToken(token)).rejects.toThrow(TOKEN_REFUSALS.passwordChanged);
    await users.remove("ana");
    const fresh = await tokens.issue({ userId: ana.id, username: "ana", tokenVersion: 1 });
    users.findById = async () => ({ ...(before as User), tokenVersion: 1 }); // still there, lagging
    await expect(remembering.userForToken(fresh)).rejects.toThrow(TOKEN_REFUSALS.userGone);
    users.findById = findById;
  });

  test("a token is verified again after maxAgeMs, and never remembered past its expiry", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    await remembering.userForToken(token);
    clock.advance(MAX_AGE_MS);
    await remembering.userForToken(token);
    expect(lookups).toBe(2);

    const shortLived = new JwtTokenService({ secret: SECRET, algorithm: "HS256", expireMinutes: 0.5 });
    const soon = await shortLived.issue({ userId: ana.id, username: "ana", tokenVersion: 0 });
    await remembering.userForToken(soon);
    clock.advance(30_000); // its expiry, before maxAgeMs: verified again (here still valid by the real clock)
    await remembering.userForToken(soon);
    expect(lookups).toBe(4);
  });

  test("nothing is remembered once stopped, nor without the policy", async () => {
    const token = await remembering.login({ username: "ana", password: PASSWORD });
    await stop();
    await remembering.userForToken(token);
    await remembering.userForToken(token);
    await auth.userForToken(token);
    await auth.userForToken(token);
    expect(lookups).toBe(4);
  });
});
