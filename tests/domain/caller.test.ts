import { describe, expect, test } from "bun:test";
import {
  allows,
  anonymousCaller,
  type Caller,
  canSeeCatalogue,
  PERMISSIONS,
  rateLimitClient,
  userCaller,
  writerOf,
} from "../../src/domain/caller.ts";

describe("Caller", () => {
  test("an admin holds every permission in every catalogue and spends the budget of its own id", () => {
    const caller = userCaller({ id: 7, role: "admin" });
    for (const permission of PERMISSIONS) expect(allows(caller, permission)).toBe(true);
    expect(canSeeCatalogue(caller, "outlet")).toBe(true);
    expect(rateLimitClient(caller)).toEqual({ id: "user:7", perAddress: false });
    expect(writerOf(caller)).toBe("user:7");
  });

  test("a viewer searches and reads, in every catalogue, and nothing else", () => {
    const viewer = userCaller({ id: 8, role: "viewer" });
    expect(PERMISSIONS.filter((permission) => allows(viewer, permission))).toEqual(["search", "products.read"]);
    expect(canSeeCatalogue(viewer, "default")).toBe(true);
  });

  test("a key holds its actions in its catalogues, and is counted by its own id", () => {
    const key: Caller = { kind: "key", grants: ["search"], catalogues: ["outlet"], id: "key:ab12" };
    expect(PERMISSIONS.filter((permission) => allows(key, permission))).toEqual(["search"]);
    expect(canSeeCatalogue(key, "outlet")).toBe(true);
    expect(canSeeCatalogue(key, "default")).toBe(false);
    // A key that may only search is a storefront's: counted per key and client address.
    expect(rateLimitClient(key)).toEqual({ id: "key:ab12", perAddress: true });
    const writer: Caller = { kind: "key", grants: ["search", "products.write"], catalogues: "*", id: "key:cd34" };
    expect(rateLimitClient(writer)).toEqual({ id: "key:cd34", perAddress: false });
    const tenant: Caller = { kind: "tenant", grants: ["search"], catalogues: ["outlet"], id: "tenant:ab12" };
    expect(rateLimitClient(tenant)).toEqual({ id: "tenant:ab12", perAddress: true });
  });

  test("anonymous holds only what the service opens to anyone, and is counted by address", () => {
    const closed = anonymousCaller([]);
    for (const permission of PERMISSIONS) expect(allows(closed, permission)).toBe(false);
    const open = anonymousCaller(["search"]);
    expect(PERMISSIONS.filter((permission) => allows(open, permission))).toEqual(["search"]);
    expect(rateLimitClient(open)).toBeUndefined();
    expect(writerOf(open)).toBeUndefined();
  });
});
