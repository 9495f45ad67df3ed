import { beforeEach, describe, expect, test } from "bun:test";
import { InvalidInput, UserAlreadyExists, UserNotFound } from "../../src/domain/errors.ts";
import { ManageUsers } from "../../src/domain/manage-users.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH } from "../../src/domain/user.ts";
import type { PasswordHasher } from "../../src/ports/password-hasher.ts";
import { MemoryUserRepository } from "../fakes/memory-user-repository.ts";

/** A fast, transparent hasher: tests check what was stored through `verify`. */
class PlainHasher implements PasswordHasher {
  readonly hashed: string[] = [];

  async hash(password: string): Promise<string> {
    this.hashed.push(password);
    return `hashed:${password}`;
  }

  async verify(password: string, hash: string): Promise<boolean> {
    return hash === `hashed:${password}`;
  }
}

const PASSWORD = "contraseña-segura";

let users: MemoryUserRepository;
let hasher: PlainHasher;
let manage: ManageUsers;

beforeEach(() => {
  users = new MemoryUserRepository();
  hasher = new PlainHasher();
  manage = new ManageUsers({ users, hasher });
});

async function passwordOf(username: string, password: string): Promise<boolean> {
  const user = await users.findByUsername(username);
  if (!user) throw new Error(`no user '${username}'`);
  return hasher.verify(password, user.passwordHash);
}

describe("ManageUsers.add", () => {
  test("stores the user with a hash of the password, never the password itself", async () => {
    const user = await manage.add("ana", PASSWORD, "admin");
    expect(user.username).toBe("ana");
    expect(user.passwordHash).not.toBe(PASSWORD);
    expect(await users.findById(user.id)).toEqual(user);
    expect(await passwordOf("ana", PASSWORD)).toBe(true);
  });

  test("trims the username", async () => {
    const user = await manage.add("  ana \t", PASSWORD, "admin");
    expect(user.username).toBe("ana");
    expect(await users.findByUsername("ana")).not.toBeNull();
  });

  test("an empty or whitespace username: InvalidInput, nothing stored", async () => {
    for (const username of ["", "   \t"]) {
      await expect(manage.add(username, PASSWORD, "admin")).rejects.toBeInstanceOf(InvalidInput);
    }
    expect(await users.count()).toBe(0);
  });

  test("the username may have up to USERNAME_MAX_LENGTH characters after trimming", async () => {
    const longest = "u".repeat(USERNAME_MAX_LENGTH);
    expect((await manage.add(` ${longest} `, PASSWORD, "admin")).username).toBe(longest);
    await expect(manage.add(`${longest}u`, PASSWORD, "admin")).rejects.toBeInstanceOf(InvalidInput);
    expect(await users.count()).toBe(1);
  });

  test("passwords from PASSWORD_MIN_LENGTH to PASSWORD_MAX_LENGTH characters are accepted", async () => {
    const shortest = "p".repeat(PASSWORD_MIN_LENGTH);
    const longest = "p".repeat(PASSWORD_MAX_LENGTH);
    await manage.add("corta", shortest, "admin");
    await manage.add("larga", longest, "admin");
    expect(await passwordOf("corta", shortest)).toBe(true);
    expect(await passwordOf("larga", longest)).toBe(true);
  });

  test("a password too short or too long: InvalidInput, nothing hashed or stored", async () => {
    for (const password of ["", "p".repeat(PASSWORD_MIN_LENGTH - 1), "p".repeat(PASSWORD_MAX_LENGTH + 1)]) {
      await expect(manage.add("ana", password, "admin")).rejects.toBeInstanceOf(InvalidInput);
    }
    expect(hasher.hashed).toHaveLength(0);
    expect(await users.count()).toBe(0);
  });

  test("a taken username: UserAlreadyExists, the first user's password kept", async () => {
    await manage.add("ana", PASSWORD, "admin");
    await expect(manage.add(" ana ", "otra-contraseña", "admin")).rejects.toBeInstanceOf(UserAlreadyExists);
    expect(await users.count()).toBe(1);
    expect(await passwordOf("ana", PASSWORD)).toBe(true);
  });
});

describe("ManageUsers.resetPassword and remove", () => {
  test("resetPassword replaces the password", async () => {
    await manage.add("ana", PASSWORD, "admin");
    await manage.resetPassword("ana", "nueva-contraseña");
    expect(await passwordOf("ana", "nueva-contraseña")).toBe(true);
    expect(await passwordOf("ana", PASSWORD)).toBe(false);
  });

  test("resetPassword checks the password's length and keeps the old one", async () => {
    await manage.add("ana", PASSWORD, "admin");
    for (const password of ["corta", "p".repeat(PASSWORD_MAX_LENGTH + 1)]) {
      await expect(manage.resetPassword("ana", password)).rejects.toBeInstanceOf(InvalidInput);
    }
    expect(await passwordOf("ana", PASSWORD)).toBe(true);
  });

  test("resetPassword of an unknown user: UserNotFound", async () => {
    await manage.add("ana", PASSWORD, "admin");
    await expect(manage.resetPassword("luis", "nueva-contraseña")).rejects.toBeInstanceOf(UserNotFound);
  });

  test("remove deletes the user; removing again is UserNotFound", async () => {
    await manage.add("ana", PASSWORD, "admin");
    await manage.add("luis", PASSWORD, "admin");
    await manage.remove("ana");
    expect(await users.findByUsername("ana")).toBeNull();
    expect(await users.findByUsername("luis")).not.toBeNull();
    await expect(manage.remove("ana")).rejects.toBeInstanceOf(UserNotFound);
  });
});

describe("ManageUsers.ensureAdmin", () => {
  test("with no users and a given password, creates the admin and returns no password", async () => {
    expect(await manage.ensureAdmin("admin", PASSWORD)).toEqual({ generatedPassword: null });
    expect(await users.count()).toBe(1);
    expect(await passwordOf("admin", PASSWORD)).toBe(true);
  });

  test("with no users and no password, generates a long random one and returns it once", async () => {
    const { generatedPassword } = await manage.ensureAdmin("admin", undefined);
    expect(generatedPassword).toBeString();
    expect((generatedPassword ?? "").length).toBeGreaterThanOrEqual(24);
    expect(await passwordOf("admin", generatedPassword ?? "")).toBe(true);

    const other = new ManageUsers({ users: new MemoryUserRepository(), hasher });
    const second = (await other.ensureAdmin("admin", undefined)).generatedPassword;
    expect(second).not.toBe(generatedPassword);
    expect((second ?? "").length).toBeGreaterThanOrEqual(24);
  });

  test("does nothing when any user exists", async () => {
    await manage.add("ana", PASSWORD, "admin");
    expect(await manage.ensureAdmin("admin", undefined)).toEqual({ generatedPassword: null });
    expect(await manage.ensureAdmin("admin", PASSWORD)).toEqual({ generatedPassword: null });
    expect(await users.count()).toBe(1);
    expect(await users.findByUsername("admin")).toBeNull();
  });

  test("a second call changes nothing", async () => {
    const { generatedPassword } = await manage.ensureAdmin("admin", undefined);
    const hashesBefore = hasher.hashed.length;
    expect(await manage.ensureAdmin("admin", undefined)).toEqual({ generatedPassword: null });
    expect(hasher.hashed).toHaveLength(hashesBefore);
    expect(await users.count()).toBe(1);
    expect(await passwordOf("admin", generatedPassword ?? "")).toBe(true);
  });

  test("two replicas starting together: one admin, and only the password actually stored is returned", async () => {
    const replicas = [manage, new ManageUsers({ users, hasher })];
    const outcomes = await Promise.all(replicas.map((replica) => replica.ensureAdmin("admin", undefined)));
    expect(await users.count()).toBe(1);
    const generated = outcomes.map((outcome) => outcome.generatedPassword).filter((password) => password !== null);
    expect(generated).toHaveLength(1);
    expect(await passwordOf("admin", generated[0] ?? "")).toBe(true);
  });

  test("a given password that breaks the rules is refused, not replaced", async () => {
    await expect(manage.ensureAdmin("admin", "corta")).rejects.toBeInstanceOf(InvalidInput);
    expect(await users.count()).toBe(0);
  });
});
