import type { ApiKeyRepository } from "../ports/api-key-repository.ts";
import type { ApiKeySecrets } from "../ports/api-key-secrets.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { ApiKey } from "./api-keys.ts";
import { allows, type Caller } from "./caller.ts";
import { NotAuthenticated } from "./errors.ts";
import { tenantFilterOf } from "./search-filter.ts";

/** Why a key or a tenant token is refused (NotAuthenticated's message): a client sees it in the 401. */
export const KEY_REFUSALS = {
  unknown: "La clave de API no es válida o ha sido revocada",
  expired: "La clave de API ha caducado",
  tenantInvalid: "El token de inquilino no es válido o ha caducado",
  tenantFilter: "El filtro del token de inquilino no es válido",
  parentGone: "La clave que firmó el token de inquilino no existe o ha sido revocada",
  parentExpired: "La clave que firmó el token de inquilino ha caducado",
} as const;

/** How often a key's `last_used_at` is written at most: a busy key costs no write per request. */
export const TOUCH_EVERY_MS = 60_000;

export interface AuthenticateKeysDeps {
  keys: ApiKeyRepository;
  secrets: ApiKeySecrets;
  clock?: Clock | undefined;
  /** Keys' rows remembered while removals are watched (rememberKeys); absent: read at every request. */
  remembered?: { maxEntries: number; maxAgeMs: number } | undefined;
  /** `key_touch_failed` when `last_used_at` could not be written (the request goes on). */
  log?: (event: Record<string, unknown>) => void;
}

interface RememberedKey {
  key: ApiKey | null;
  until: number;
}

/**
 * AuthenticateKeys: the caller an API key or a tenant token stands for.
 *
 * A key is checked by recomputing it from its id (ApiKeySecrets), then its row is read: gone
 * (revoked) or expired is NotAuthenticated. Rows are remembered per process while every removal
 * is heard (ApiKeyRepository.watchChanges: a DELETE on any instance is a notification when it
 * commits), so a busy key costs no read per request and a revoked one stops at once everywhere; a
 * removal heard stays refused even if the row is then read from a standby that has not caught up.
 *
 * A tenant token is a JWT signed (HS256) with its key: its holder made it without asking us. It is
 * its key's caller reduced to `search`, in the key's catalogues, with the token's filter fixed.
 */
export class AuthenticateKeys {
  private readonly clock: Clock;
  private readonly remembered = new Map<string, RememberedKey>();
  /** Removals heard: refused for good (ids are never reused). */
  private readonly removed = new Set<string>();
  private readonly touched = new Map<string, number>();
  private watching = false;
  private changes = 0;

  constructor(private readonly deps: AuthenticateKeysDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Starts remembering keys' rows while removals are watched; resolves with the function that stops it. */
  async rememberKeys(): Promise<() => Promise<void>> {
    if (!this.deps.remembered) return async () => {};
    const forget = () => {
      this.changes++;
      this.remembered.clear();
    };
    const stop = await this.deps.keys.watchChanges(
      (keyId) => {
        if (keyId !== null) this.removed.add(keyId);
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

  /** Whether a credential is sent as an API key (its prefix), rather than a token. */
  isKey(credential: string): boolean {
    return this.deps.secrets.isKey(credential);
  }

  /** Whether a bearer token claims to be a tenant token (a JWT naming a `key_id`). */
  isTenantToken(token: string): boolean {
    return this.deps.secrets.tenantKeyId(token) !== undefined;
  }

  /** The caller of an API key: its actions in its catalogues; NotAuthenticated when unknown, revoked or expired. */
  async callerForKey(presented: string): Promise<Caller> {
    const keyId = this.deps.secrets.keyIdOf(presented);
    const key = keyId === undefined ? null : await this.find(keyId);
    if (!key) throw new NotAuthenticated(KEY_REFUSALS.unknown);
    if (key.expiresAt !== null && key.expiresAt.getTime() <= this.clock.now()) {
      throw new NotAuthenticated(KEY_REFUSALS.expired);
    }
    this.used(key.id);
    return { kind: "key", grants: key.actions, catalogues: key.catalogues, id: `key:${key.id}` };
  }

  /**
   * The caller of a tenant token: `search` (when its key has it) in its key's catalogues, every
   * search narrowed by the token's filter. NotAuthenticated when the token is not its key's
   * (tampered, another key's signature, another algorithm), expired, or its key is gone or expired.
   */
  async callerForTenantToken(token: string): Promise<Caller> {
    const claims = this.deps.secrets.verifyTenantToken(token);
    if (!claims || claims.expiresAt <= this.clock.now()) throw new NotAuthenticated(KEY_REFUSALS.tenantInvalid);
    const filter = tenantFilterOf(claims.filter);
    if (!filter) throw new NotAuthenticated(KEY_REFUSALS.tenantFilter);
    const key = await this.find(claims.keyId);
    if (!key) throw new NotAuthenticated(KEY_REFUSALS.parentGone);
    if (key.expiresAt !== null && key.expiresAt.getTime() <= this.clock.now()) {
      throw new NotAuthenticated(KEY_REFUSALS.parentExpired);
    }
    this.used(key.id);
    const parent: Caller = { kind: "key", grants: key.actions, catalogues: key.catalogues, id: `key:${key.id}` };
    return {
      kind: "tenant",
      grants: allows(parent, "search") ? ["search"] : [],
      catalogues: key.catalogues,
      filter,
      id: `tenant:${key.id}`,
    };
  }

  private async find(keyId: string): Promise<ApiKey | null> {
    if (this.removed.has(keyId)) return null;
    const now = this.clock.now();
    const remembered = this.remembered.get(keyId);
    if (remembered !== undefined && now < remembered.until) return remembered.key;
    const changesBefore = this.changes;
    const key = await this.deps.keys.findById(keyId);
    const policy = this.deps.remembered;
    // Not when a change was heard while it was read: the row may be from before it.
    if (this.watching && policy && changesBefore === this.changes && !this.removed.has(keyId)) {
      if (this.remembered.size >= policy.maxEntries) {
        const oldest = this.remembered.keys().next();
        if (!oldest.done) this.remembered.delete(oldest.value);
      }
      this.remembered.set(keyId, { key, until: now + policy.maxAgeMs });
    }
    return this.removed.has(keyId) ? null : key;
  }

  /** Writes `last_used_at` at most once a TOUCH_EVERY_MS per key, without waiting for it. */
  private used(keyId: string): void {
    const now = this.clock.now();
    const last = this.touched.get(keyId);
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    this.touched.set(keyId, now);
    this.deps.keys.touch(keyId).catch((error) => {
      // Tried again at the next use: a standby, or a database down for a moment, loses nothing.
      this.touched.delete(keyId);
      this.deps.log?.({ event: "key_touch_failed", keyId, error });
    });
  }
}
