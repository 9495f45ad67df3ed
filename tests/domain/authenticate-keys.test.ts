import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { HmacApiKeys } from "../../src/adapters/security/hmac-api-keys.ts";
import { ManageApiKeys, type NewApiKey } from "../../src/domain/api-keys.ts";
import { AuthenticateKeys, KEY_REFUSALS, TOUCH_EVERY_MS } from "../../src/domain/authenticate-keys.ts";
import { NotAuthenticated } from "../../src/domain/errors.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { MemoryApiKeyRepository } from "../fakes/memory-api-key-repository.ts";

async function setUp(remembered = true) {
  const clock = new FakeClock();
  const keys = new MemoryApiKeyRepository(clock);
  const secrets = new HmacApiKeys("secreto-de-pruebas-de-al-menos-32-bytes");
  const manage = new ManageApiKeys({ keys, secrets, clock });
  const authenticate = new AuthenticateKeys({
    keys,
    secrets,
    clock,
    remembered: remembered ? { maxEntries: 10, maxAgeMs: 60_000 } : undefined,
  });
  await authenticate.rememberKeys();
  const make = async (request: Partial<NewApiKey> = {}) => {
    const created = await manage.create({
      name: "k",
      actions: ["search"],
      catalogues: ["*"],
      expiresAt: null,
      ...request,
    });
    return { key: created.key, id: created.apiKey.id };
  };
  return { clock, keys, authenticate, manage, make };
}

function tenantToken(key: string, payload: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part(payload)}`;
  return `${signed}.${createHmac("sha256", key).update(signed).digest("base64url")}`;
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.catch((caught) => caught);
  expect(error).toBeInstanceOf(NotAuthenticated);
  return (error as Error).message;
}

describe("AuthenticateKeys: API keys", () => {
  test("a key is its caller: its actions in its catalogues, counted by its id", async () => {
    const { authenticate, make } = await setUp();
    const { key, id } = await make({ actions: ["search", "products.read"], catalogues: ["outlet"] });
    expect(await authenticate.callerForKey(key)).toEqual({
      kind: "key",
      grants: ["search", "products.read"],
      catalogues: ["outlet"],
      id: `key:${id}`,
    });
  });

  test("unknown, forged, revoked and expired keys are refused, saying which", async () => {
    const { authenticate, make, manage, clock } = await setUp();
    expect(await refusal(authenticate.callerForKey("sks_0000000000000000_nope"))).toBe(KEY_REFUSALS.unknown);
    const revoked = await make();
    await authenticate.callerForKey(revoked.key);
    await manage.revoke(revoked.id);
    expect(await refusal(authenticate.callerForKey(revoked.key))).toBe(KEY_REFUSALS.unknown);
    const expiring = await make({ expiresAt: new Date(clock.now() + 1000) });
    await authenticate.callerForKey(expiring.key);
    clock.advance(1000);
    expect(await refusal(authenticate.callerForKey(expiring.key))).toBe(KEY_REFUSALS.expired);
  });

  test("a busy key costs one read while removals are watched; a removal heard ends it at once", async () => {
    const { authenticate, make, keys } = await setUp();
    const { key, id } = await make();
    for (let i = 0; i < 5; i++) await authenticate.callerForKey(key);
    expect(keys.reads).toBe(1);
    // Another instance revokes it: this one hears the notification and refuses the next request.
    await keys.remove(id);
    expect(await refusal(authenticate.callerForKey(key))).toBe(KEY_REFUSALS.unknown);
  });

  test("without a watch every request reads the key", async () => {
    const { authenticate, make, keys } = await setUp(false);
    const { key } = await make();
    for (let i = 0; i < 3; i++) await authenticate.callerForKey(key);
    expect(keys.reads).toBe(3);
  });

  test("last_used_at is written at most once a minute per key, without waiting for it", async () => {
    const { authenticate, make, keys, clock } = await setUp();
    const { key, id } = await make();
    for (let i = 0; i < 10; i++) await authenticate.callerForKey(key);
    expect(keys.touches).toEqual([id]);
    clock.advance(TOUCH_EVERY_MS - 1);
    await authenticate.callerForKey(key);
    expect(keys.touches).toEqual([id]);
    clock.advance(1);
    await authenticate.callerForKey(key);
    expect(keys.touches).toEqual([id, id]);
  });
});

describe("AuthenticateKeys: tenant tokens", () => {
  test("a token signed with a search key searches only, in the key's catalogues, with its filter", async () => {
    const { authenticate, make, clock } = await setUp();
    const { key, id } = await make({ actions: ["search", "products.write"], catalogues: ["outlet"] });
    const token = tenantToken(key, { key_id: id, exp: clock.now() / 1000 + 60, filter: { category: ["Cocina"] } });
    expect(authenticate.isTenantToken(token)).toBe(true);
    expect(await authenticate.callerForTenantToken(token)).toEqual({
      kind: "tenant",
      grants: ["search"],
      catalogues: ["outlet"],
      filter: { category: ["Cocina"] },
      id: `tenant:${id}`,
    });
  });

  test("a key without search signs tokens that may do nothing", async () => {
    const { authenticate, make, clock } = await setUp();
    const { key, id } = await make({ actions: ["products.read"] });
    const token = tenantToken(key, { key_id: id, exp: clock.now() / 1000 + 60 });
    expect((await authenticate.callerForTenantToken(token)).grants).toEqual([]);
  });

  test("expired, of a revoked or expired key, or with a filter of another shape (a search filter's: category and attribute conditions): refused", async () => {
    const { authenticate, make, manage, clock } = await setUp();
    const exp = clock.now() / 1000 + 60;
    const { key, id } = await make();
    expect(
      await refusal(authenticate.callerForTenantToken(tenantToken(key, { key_id: id, exp: clock.now() / 1000 }))),
    ).toBe(KEY_REFUSALS.tenantInvalid);
    for (const filter of [
      { Price: 3 },
      { price: { between: [1, 2] } },
      { category: 7 },
      { category: [] },
      "Cocina",
      [1],
    ]) {
      expect(await refusal(authenticate.callerForTenantToken(tenantToken(key, { key_id: id, exp, filter })))).toBe(
        KEY_REFUSALS.tenantFilter,
      );
    }
    await manage.revoke(id);
    expect(await refusal(authenticate.callerForTenantToken(tenantToken(key, { key_id: id, exp })))).toBe(
      KEY_REFUSALS.parentGone,
    );
    const expiring = await make({ expiresAt: new Date(clock.now() + 1000) });
    const token = tenantToken(expiring.key, { key_id: expiring.id, exp });
    await authenticate.callerForTenantToken(token);
    clock.advance(1000);
    expect(await refusal(authenticate.callerForTenantToken(token))).toBe(KEY_REFUSALS.parentExpired);
  });
});
