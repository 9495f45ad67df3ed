import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { TokenService } from "../ports/token-service.ts";
import type { UserRepository } from "../ports/user-repository.ts";
import { InvalidCredentials, NotAuthenticated, TooManyAttempts } from "./errors.ts";
import type { LoginThrottle } from "./login-throttle.ts";
import { isStorableText, trimText } from "./text.ts";
import type { User } from "./user.ts";

/** Why a bearer token is refused (NotAuthenticated's message): a client sees it in the 401. */
export const TOKEN_REFUSALS = {
  missing: "No autenticado: falta el token de acceso",
  invalid: "Token inválido o caducado",
  userGone: "El usuario del token ya no existe",
  passwordChanged: "El token ya no es válido: la contraseña ha cambiado. Inicie sesión de nuevo",
} as const;

export interface LoginAttempt {
  username: string;
  password: string;
  /** The client's address, for throttling; undefined when unknown. */
  clientAddress?: string | undefined;
}

export interface Deps {
  users: UserRepository;
  hasher: PasswordHasher;
  tokens: TokenService;
  /** Failed logins per username (guessing one account's password). */
  usernameThrottle: LoginThrottle;
  /** Failed logins per client address (one client trying many accounts); a looser policy. */
  addressThrottle: LoginThrottle;
}

/**
 * Authenticate: checks a username and password and issues an access token.
 * Unknown users cost a password verification too, so neither the answer nor its timing
 * tells whether a username exists.
 */
export class Authenticate {
  private dummyHash: Promise<string> | undefined;

  constructor(private readonly deps: Deps) {}

  /** How long a token from login() stays valid, in seconds. */
  get tokenLifetimeSeconds(): number {
    return this.deps.tokens.lifetimeSeconds;
  }

  async login(attempt: LoginAttempt): Promise<string> {
    const { users, hasher, tokens } = this.deps;
    const checks = this.throttleChecks(attempt);
    const wait = Math.max(0, ...checks.map(({ throttle, key }) => throttle.retryAfterSeconds(key)));
    if (wait > 0) throw new TooManyAttempts(wait);

    // Counted in flight from the check on (no await in between), so concurrent attempts see each other.
    for (const { throttle, key } of checks) throttle.begin(key);
    try {
      // Stored usernames are trimmed and storable (ManageUsers): any other name is simply unknown.
      const username = trimText(attempt.username);
      const user = isStorableText(username) ? await users.findByUsername(username) : null;
      const hash = user?.passwordHash ?? (await this.hashOfNobody());
      const passwordMatches = await hasher.verify(attempt.password, hash);
      if (!user || !passwordMatches) {
        for (const { throttle, key } of checks) throttle.recordFailure(key);
        throw new InvalidCredentials();
      }
      this.deps.usernameThrottle.reset(usernameKey(attempt.username));
      return await tokens.issue({ userId: user.id, username: user.username, tokenVersion: user.tokenVersion });
    } finally {
      for (const { throttle, key } of checks) throttle.end(key);
    }
  }

  /** The user a bearer token stands for; NotAuthenticated when the token is bad or the user is gone. */
  async userForToken(token: string | undefined): Promise<User> {
    if (!token) throw new NotAuthenticated(TOKEN_REFUSALS.missing);
    const claims = await this.deps.tokens.verify(token);
    if (!claims) throw new NotAuthenticated(TOKEN_REFUSALS.invalid);
    const user = await this.deps.users.findById(claims.userId);
    if (!user || user.username !== claims.username) throw new NotAuthenticated(TOKEN_REFUSALS.userGone);
    // A password change (or a re-created user) retires every token issued before it.
    if (claims.tokenVersion !== user.tokenVersion) throw new NotAuthenticated(TOKEN_REFUSALS.passwordChanged);
    return user;
  }

  private throttleChecks(attempt: LoginAttempt): { throttle: LoginThrottle; key: string }[] {
    const checks = [{ throttle: this.deps.usernameThrottle, key: usernameKey(attempt.username) }];
    if (attempt.clientAddress) checks.push({ throttle: this.deps.addressThrottle, key: attempt.clientAddress });
    return checks;
  }

  private hashOfNobody(): Promise<string> {
    this.dummyHash ??= this.deps.hasher.hash(crypto.randomUUID());
    return this.dummyHash;
  }
}

function usernameKey(username: string): string {
  return trimText(username).toLowerCase();
}
