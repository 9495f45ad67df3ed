import { describe, expect, test } from "bun:test";
import { HmacApiKeys } from "../../src/adapters/security/hmac-api-keys.ts";
import { ManageApiKeys } from "../../src/domain/api-keys.ts";
import type { Caller } from "../../src/domain/caller.ts";
import { ApiKeyNotFound, Forbidden, InvalidInput } from "../../src/domain/errors.ts";
import { FakeClock } from "../fakes/fake-clock.ts";
import { MemoryApiKeyRepository } from "../fakes/memory-api-key-repository.ts";

function setUp() {
  const clock = new FakeClock();
  const keys = new MemoryApiKeyRepository(clock);
  const secrets = new HmacApiKeys("secreto-de-pruebas-de-al-menos-32-bytes");
  return { clock, keys, secrets, manage: new ManageApiKeys({ keys, secrets, clock }) };
}

const NEW = { name: " Tienda ", actions: ["search"], catalogues: ["default"], expiresAt: null };

describe("ManageApiKeys", () => {
  test("create stores the row without the key, and answers the key once, derived from the id", async () => {
    const { manage, keys, secrets } = setUp();
    const created = await manage.create(NEW);
    expect(created.apiKey).toMatchObject({ name: "Tienda", actions: ["search"], catalogues: ["default"] });
    expect(created.key).toBe(secrets.keyOf(created.apiKey.id));
    expect(created.prefix).toBe(`sks_${created.apiKey.id}`);
    expect(JSON.stringify(await keys.list())).not.toContain(created.key);
  });

  test('"*" among the actions or catalogues means all; actions are kept each once, in order', async () => {
    const { manage } = setUp();
    expect((await manage.create({ ...NEW, actions: ["search", "*"], catalogues: ["*"] })).apiKey).toMatchObject({
      actions: "*",
      catalogues: "*",
    });
    const two = await manage.create({ ...NEW, actions: ["products.write", "search", "search"] });
    expect(two.apiKey.actions).toEqual(["search", "products.write"]);
  });

  test("bad names, actions, catalogues and past expiry are InvalidInput, and nothing is stored", async () => {
    const { manage, keys, clock } = setUp();
    for (const request of [
      { ...NEW, name: "  " },
      { ...NEW, actions: [] },
      { ...NEW, actions: ["borrar-todo"] },
      { ...NEW, catalogues: [] },
      { ...NEW, catalogues: ["Tienda"] },
      { ...NEW, catalogues: ["-tienda"] },
      { ...NEW, catalogues: ["x".repeat(64)] },
      { ...NEW, expiresAt: new Date(clock.now()) },
    ]) {
      await expect(manage.create(request)).rejects.toBeInstanceOf(InvalidInput);
    }
    expect(await keys.list()).toEqual([]);
  });

  test("a caller creating a key gives it no more than it holds itself", async () => {
    const { manage } = setUp();
    const keyManager: Caller = { kind: "key", grants: ["keys.manage", "search"], catalogues: ["outlet"], id: "key:1" };
    await expect(manage.create({ ...NEW, catalogues: ["outlet"] }, keyManager)).resolves.toBeDefined();
    for (const wider of [
      { ...NEW, catalogues: ["default"] },
      { ...NEW, catalogues: ["*"] },
      { ...NEW, actions: ["products.write"], catalogues: ["outlet"] },
      { ...NEW, actions: ["*"], catalogues: ["outlet"] },
    ]) {
      await expect(manage.create(wider, keyManager)).rejects.toBeInstanceOf(Forbidden);
    }
    const admin: Caller = { kind: "user", grants: "*", catalogues: "*", id: "user:1" };
    await expect(manage.create({ ...NEW, actions: ["*"], catalogues: ["*"] }, admin)).resolves.toBeDefined();
  });

  test("revoke deletes; an unknown id is ApiKeyNotFound", async () => {
    const { manage } = setUp();
    const created = await manage.create(NEW);
    await manage.revoke(created.apiKey.id);
    expect(await manage.list()).toEqual([]);
    await expect(manage.revoke(created.apiKey.id)).rejects.toBeInstanceOf(ApiKeyNotFound);
  });
});
