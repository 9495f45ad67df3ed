import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { UserRepository } from "../ports/user-repository.ts";
import { ROLES, type Role } from "./caller.ts";
import { InvalidInput, UserNotFound } from "./errors.ts";
import { textProblem, trimText } from "./text.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, USERNAME_MAX_LENGTH, type User, type UserSummary } from "./user.ts";

export interface Deps {
  users: UserRepository;
  hasher: PasswordHasher;
}

/** ManageUsers: the operator's user administration (CLI), and the first admin at startup. */
export class ManageUsers {
  constructor(private readonly deps: Deps) {}

  /** `role`: as the operator names it (checked: one of ROLES). */
  async add(username: string, password: string, role: Role | string): Promise<User> {
    const name = checkUsername(username);
    checkPassword(password);
    return this.deps.users.create(name, await this.deps.hasher.hash(password), checkRole(role));
  }

  /** Gives a user another role; the user's earlier tokens stop working (they were issued for the old one). */
  async setRole(username: string, role: Role | string): Promise<void> {
    const name = checkUsername(username);
    if (!(await this.deps.users.setRole(name, checkRole(role)))) throw new UserNotFound(name);
  }

  async resetPassword(username: string, password: string): Promise<void> {
    const name = checkUsername(username);
    checkPassword(password);
    const updated = await this.deps.users.updatePassword(name, await this.deps.hasher.hash(password));
    if (!updated) throw new UserNotFound(name);
  }

  async remove(username: string): Promise<void> {
    const name = checkUsername(username);
    if (!(await this.deps.users.remove(name))) throw new UserNotFound(name);
  }

  list(): Promise<UserSummary[]> {
    return this.deps.users.list();
  }

  /**
   * Creates the first admin when there are no users at all. Returns the password it set when it
   * had to generate one (so the caller can show it once), null otherwise.
   */
  async ensureAdmin(username: string, password: string | undefined): Promise<{ generatedPassword: string | null }> {
    if ((await this.deps.users.count()) > 0) return { generatedPassword: null };
    const chosen = password ?? generatePassword();
    try {
      await this.add(username, chosen, "admin");
    } catch (error) {
      // Another replica created users between our count and our insert: nothing left to do.
      if ((await this.deps.users.count()) > 0) return { generatedPassword: null };
      throw error;
    }
    return { generatedPassword: password === undefined ? chosen : null };
  }
}

function checkUsername(username: string): string {
  const name = trimText(username);
  const problem = textProblem(name, { maxLength: USERNAME_MAX_LENGTH });
  if (problem) throw new InvalidInput(`El nombre de usuario ${problem}`);
  return name;
}

/** A role named by the operator (the command line passes any text). */
export function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new InvalidInput(`El rol debe ser uno de: ${ROLES.join(", ")}`);
  }
  return role as Role;
}

function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new InvalidInput(`La contraseña debe tener entre ${PASSWORD_MIN_LENGTH} y ${PASSWORD_MAX_LENGTH} caracteres`);
  }
}

/** 24 random bytes, URL-safe base64: 192 bits. */
function generatePassword(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url");
}
