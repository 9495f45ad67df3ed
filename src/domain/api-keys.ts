import type { ApiKeyRepository } from "../ports/api-key-repository.ts";
import type { ApiKeySecrets } from "../ports/api-key-secrets.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import { allows, type Caller, canSeeCatalogue, type Grant, PERMISSIONS, type Permission } from "./caller.ts";
import { ApiKeyNotFound, Forbidden, InvalidInput } from "./errors.ts";
import { textProblem, trimText } from "./text.ts";

/**
 * An API key as stored: what it may do and where. Its secret is not here: it is derived from the
 * id and the server's secret (ApiKeySecrets), so neither the row nor a dump of the table is a key.
 */
export interface ApiKey {
  /** Random, unguessable only as a courtesy: the secret part of the key is what proves it. */
  id: string;
  name: string;
  /** "*" or the permissions granted. */
  actions: "*" | readonly Permission[];
  /** "*" or the catalogues it may see. */
  catalogues: "*" | readonly string[];
  expiresAt: Date | null;
  createdAt: Date;
  /** When it was last used, to the minute (AuthenticateKeys writes it at most once a minute). */
  lastUsedAt: Date | null;
}

/** What `POST /keys` and `keys add` ask for. */
export interface NewApiKey {
  name: string;
  /** Permissions, or ["*"]. */
  actions: readonly string[];
  /** Catalogue names, or ["*"]. */
  catalogues: readonly string[];
  /** When it stops working; null: never. */
  expiresAt: Date | null;
}

/** A key just made: the row, and the key itself, shown only this once. */
export interface CreatedApiKey {
  apiKey: ApiKey;
  key: string;
  /** The key's visible start (`sks_<id>`), by which a listing names it. */
  prefix: string;
}

/** The actions a key may be given: each permission, or "*" for all of them. */
export const KEY_ACTIONS = [...PERMISSIONS, "*"] as const satisfies readonly Grant[];

/** The catalogue name rule (issue 19): lower-case letters, digits, `_` and `-`, 1 to 63, not starting with `_` or `-`. */
export const CATALOGUE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const KEY_NAME_MAX_LENGTH = 100;

export interface ManageApiKeysDeps {
  keys: ApiKeyRepository;
  secrets: ApiKeySecrets;
  clock?: Clock | undefined;
}

/**
 * ManageApiKeys: creating, listing and revoking API keys (POST/GET/DELETE /keys, `keys add|list|revoke`).
 *
 * A key's catalogues are checked against the name rule only, not against the catalogues that exist:
 * a key may be made for a shop before its catalogue is, and removing a catalogue changes no key
 * (one of that name made again is the key's again). A caller creating a key over HTTP gives it no
 * more than it holds itself: a key with `keys.manage` but not `products.write` cannot make one that
 * writes (Forbidden); the operator's command line may make any.
 */
export class ManageApiKeys {
  private readonly clock: Clock;

  constructor(private readonly deps: ManageApiKeysDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  async create(request: NewApiKey, creator?: Caller): Promise<CreatedApiKey> {
    const name = checkName(request.name);
    const actions = checkActions(request.actions);
    const catalogues = checkCatalogues(request.catalogues);
    if (request.expiresAt !== null && request.expiresAt.getTime() <= this.clock.now()) {
      throw new InvalidInput("El campo 'expires_at' debe ser una fecha futura (o null: no caduca)");
    }
    if (creator) checkWithinCreator(creator, actions, catalogues);
    const id = this.deps.secrets.newKeyId();
    const apiKey = await this.deps.keys.create({ id, name, actions, catalogues, expiresAt: request.expiresAt });
    return { apiKey, key: this.deps.secrets.keyOf(id), prefix: this.deps.secrets.prefixOf(id) };
  }

  list(): Promise<ApiKey[]> {
    return this.deps.keys.list();
  }

  /** The visible start of a key (`sks_<id>`), for listings. */
  prefixOf(id: string): string {
    return this.deps.secrets.prefixOf(id);
  }

  /** Deletes the key: it, and every tenant token signed with it, stop working on every instance (ApiKeyRepository.watchChanges). */
  async revoke(id: string): Promise<void> {
    if (!(await this.deps.keys.remove(id))) throw new ApiKeyNotFound(id);
  }
}

function checkName(raw: string): string {
  const name = trimText(raw);
  const problem = textProblem(name, { maxLength: KEY_NAME_MAX_LENGTH });
  if (problem) throw new InvalidInput(`El campo 'name' ${problem}`);
  return name;
}

/** ["*", ...] is "*"; otherwise the permissions, each once, in PERMISSIONS' order. */
function checkActions(actions: readonly string[]): "*" | Permission[] {
  if (actions.length === 0) throw new InvalidInput("El campo 'actions' debe nombrar al menos una acción");
  const unknown = actions.find((action) => !(KEY_ACTIONS as readonly string[]).includes(action));
  if (unknown !== undefined) {
    throw new InvalidInput(`El campo 'actions' solo admite: ${KEY_ACTIONS.join(", ")} (no '${shorten(unknown)}')`);
  }
  if (actions.includes("*")) return "*";
  return PERMISSIONS.filter((permission) => actions.includes(permission));
}

function checkCatalogues(catalogues: readonly string[]): "*" | string[] {
  if (catalogues.length === 0)
    throw new InvalidInput("El campo 'catalogues' debe nombrar al menos un catálogo, o \"*\"");
  if (catalogues.includes("*")) return "*";
  const bad = catalogues.find((name) => !CATALOGUE_NAME.test(name));
  if (bad !== undefined) {
    throw new InvalidInput(
      `El campo 'catalogues' nombra un catálogo no válido ('${shorten(bad)}'): minúsculas, cifras, '_' y '-', ` +
        "de 1 a 63, sin empezar por '_' ni '-'",
    );
  }
  return [...new Set(catalogues)];
}

function checkWithinCreator(creator: Caller, actions: "*" | Permission[], catalogues: "*" | string[]): void {
  const wider =
    (actions === "*" ? creator.grants !== "*" : actions.some((action) => !allows(creator, action))) ||
    (catalogues === "*"
      ? creator.catalogues !== "*"
      : catalogues.some((catalogue) => !canSeeCatalogue(creator, catalogue)));
  if (wider) throw new Forbidden("No puede crear una clave con más permisos o catálogos que los de su credencial");
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
