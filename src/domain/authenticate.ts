import { type Clock, systemClock } from "../ports/clock.ts";
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
  /** Tokens found valid are remembered (see userForToken) while users' changes are watched; absent: never. */
  verifiedTokens?: VerifiedTokenPolicy | undefined;
  clock?: Clock | undefined;
}

export interface VerifiedTokenPolicy {
  /** Most tokens remembered (the oldest are forgotten first). */
  maxEntries: number;
  /** Longest a token is trusted without being verified again, in ms (besides any user change ending it at once). */
  maxAgeMs: number;
}

interface RememberedToken {
  user: User;
  /** Clock time past which it is verified again: its expiry, or maxAgeMs after its verification. */
  until: number;
}

/**
 * Authenticate: checks a username and password and issues an access token.
 * Unknown users cost a password verification too, so neither the answer nor its timing
 * tells whether a username exists.
 */
export class Authenticate {
  private dummyHash: Promise<string> | undefined;
  private readonly clock: Clock;
  /** Tokens verified, while user changes are watched (`watching`); emptied at every change. */
  private readonly verified = new Map<string, RememberedToken>();
  private watching = false;
  /** Grows at every user change: a verification begun before one is not remembered. */
  private changes = 0;
  /**
   * What the changes heard say of each user: removed, or the lowest token version still valid. It
   * holds even when the user's row is read from a standby that has not caught up.
   */
  private readonly heard = new Map<number, number | "removed">();

  constructor(private readonly deps: Deps) {
    this.clock = deps.clock ?? systemClock;
  }

  /**
   * Starts remembering verified tokens, for as long as every change to users is heard of
   * (UserRepository.watchChanges): a password change or a removal, committed by any process on
   * the database, forgets every remembered token at once, so none outlives it; so does a lost
   * watch. What a change says (the user removed, its new token version) is kept, so that a token
   * it ended stays refused even when the user is then read from a standby not yet caught up.
   * Without `verifiedTokens`, or where changes cannot be watched, nothing is remembered.
   * Resolves with the function that stops it.
   */
  async rememberVerifiedTokens(): Promise<() => Promise<void>> {
    if (!this.deps.verifiedTokens) return async () => {};
    const forget = () => {
      this.changes++;
      this.verified.clear();
    };
    const stop = await this.deps.users.watchChanges(
      (change) => {
        if (change.userId !== null) {
          const known = this.heard.get(change.userId);
          if ("removed" in change || known === "removed") this.heard.set(change.userId, "removed");
          else this.heard.set(change.userId, Math.max(known ?? 0, change.tokenVersion));
        }
        forget();
      },
      () => {
        forget();
        this.watching = true;
      },
    );
    return async () => {
      this.watching = false;
      forget();
      await stop();
    };
  }

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

  /**
   * The user a bearer token stands for; NotAuthenticated when the token is bad or the user is gone.
   * A token verified a moment ago (rememberVerifiedTokens) is not verified again: its signature
   * and its user's row were the same work at every request.
   */
  async userForToken(token: string | undefined): Promise<User> {
    if (!token) throw new NotAuthenticated(TOKEN_REFUSALS.missing);
    const now = this.clock.now();
    const remembered = this.verified.get(token);
    if (remembered !== undefined && now < remembered.until) return remembered.user;
    const changesBefore = this.changes;
    const claims = await this.deps.tokens.verify(token);
    if (!claims) throw new NotAuthenticated(TOKEN_REFUSALS.invalid);
    const user = await this.deps.users.findById(claims.userId);
    const heard = this.heard.get(claims.userId);
    if (!user || user.username !== claims.username || heard === "removed") {
      throw new NotAuthenticated(TOKEN_REFUSALS.userGone);
    }
    // A password change (or a re-created user) retires every token issued before it.
    if (claims.tokenVersion !== user.tokenVersion || (heard !== undefined && claims.tokenVersion < heard)) {
      throw new NotAuthenticated(TOKEN_REFUSALS.passwordChanged);
    }
    // Not when a change was heard while it was verified: the row read may be from before it.
    if (this.watching && this.deps.verifiedTokens && changesBefore === this.changes) {
      this.remember(token, { user, until: Math.min(claims.expiresAt, now + this.deps.verifiedTokens.maxAgeMs) });
    }
    return user;
  }

  private remember(token: string, entry: RememberedToken): void {
    this.verified.delete(token);
    if (this.verified.size >= (this.deps.verifiedTokens?.maxEntries ?? 0)) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(token, entry);
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
