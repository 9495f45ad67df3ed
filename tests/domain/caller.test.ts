import { describe, expect, test } from "bun:test";
import { anonymousCaller, PERMISSIONS, permits, rateLimitClient, userCaller } from "../../src/domain/caller.ts";

const ANA = { id: 7, username: "ana", passwordHash: "hash", tokenVersion: 0 };

describe("Caller", () => {
  test("a user holds every permission and spends the budget of its own id", () => {
    const caller = userCaller(ANA);
    for (const permission of PERMISSIONS) expect(permits(caller, permission)).toBe(true);
    expect(rateLimitClient(caller)).toBe("user:7");
  });

  test("anonymous holds only what the service opens to anyone, and is counted by address", () => {
    const closed = anonymousCaller([]);
    for (const permission of PERMISSIONS) expect(permits(closed, permission)).toBe(false);
    const open = anonymousCaller(["search"]);
    expect(PERMISSIONS.filter((permission) => permits(open, permission))).toEqual(["search"]);
    expect(rateLimitClient(open)).toBeUndefined();
  });
});
