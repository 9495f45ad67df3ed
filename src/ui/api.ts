/**
 * The service's API as the page calls it. The credential (a user's token after a login, or an API
 * key or tenant token the page was given) lives in this object and in the tab's sessionStorage (so
 * a reload keeps the session, closing the tab ends it), and goes in the Authorization header, never
 * in a URL. The catalogue chosen is where the catalogue's requests go (`/products…` and `/events`
 * are the default catalogue's, `/catalogues/{catalogue}/…` another's).
 */

/** An answer other than 2xx, with the service's Spanish `detail`; status 0 when the service could not be reached. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    detail: string,
    /** Seconds to wait before retrying (Retry-After of a 429 or 503), when the service said. */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

export interface Session {
  /** A user's token, an API key (sks_…) or a tenant token: each goes as `Authorization: Bearer`. */
  token: string;
  /** What the page shows for it: the username, or what the credential is. */
  username: string;
  /** How the session began: a login, or a key or token given to the page. */
  via: "login" | "credential";
}

/** What a credential may do and where (GET /auth/me). */
export interface Credential {
  kind: "user" | "key" | "tenant" | "anonymous";
  id: string;
  /** What it allows, or ["*"]. */
  actions: string[];
  /** The catalogues it may search that exist, by name. */
  catalogues: string[];
  /** A tenant token's search filter (categories its every search is narrowed to); null for others. */
  filter: { category?: string[] } | null;
}

/** Whether `credential` allows `action`. */
export function allows(credential: Credential, action: string): boolean {
  return credential.actions.includes("*") || credential.actions.includes(action);
}

/** Where the session is kept in sessionStorage. */
const SESSION_KEY = "sku-search.session";

/** The catalogue whose products the contract's own paths (/products…, /events) are. */
export const DEFAULT_CATALOGUE = "default";

/** What the page says when the service is unreachable. */
const UNREACHABLE = "No se ha podido contactar con el servicio. Comprueba la conexión y vuelve a intentarlo.";

export class Api {
  private session: Session | null;
  /** The catalogue the page works in (the picker's). */
  catalogue = DEFAULT_CATALOGUE;
  /** Called once when the service refuses the credential (401): the session is over, the page asks for another. */
  onSessionEnded: (detail: string, via: Session["via"]) => void = () => {};

  constructor(private readonly storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null) {
    this.session = readSession(storage);
  }

  get username(): string | null {
    return this.session?.username ?? null;
  }

  get loggedIn(): boolean {
    return this.session !== null;
  }

  /** How the session began (null without one). */
  get via(): Session["via"] | null {
    return this.session?.via ?? null;
  }

  /** POST /auth/login with the form fields; keeps the token. */
  async login(username: string, password: string): Promise<void> {
    const response = await send("/auth/login", { method: "POST", body: new URLSearchParams({ username, password }) });
    if (!response.ok) throw await errorOf(response);
    const { access_token: token } = (await response.json()) as { access_token: string };
    this.keep({ token, username, via: "login" });
  }

  /**
   * Starts a session with an API key or a tenant token, once the service has said what it may do
   * (GET /auth/me): its answer. ApiError (and no session) when the service refuses it.
   */
  async useCredential(token: string): Promise<Credential> {
    const response = await send("/auth/me", { headers: { Authorization: `Bearer ${token}` } });
    if (!response.ok) throw await errorOf(response);
    const credential = (await response.json()) as Credential;
    this.keep({ token, username: credentialLabel(credential), via: "credential" });
    return credential;
  }

  /** What the session's credential may do and where (GET /auth/me). */
  me(): Promise<Credential> {
    return this.json<Credential>("/auth/me");
  }

  private keep(session: Session): void {
    this.session = session;
    try {
      this.storage?.setItem(SESSION_KEY, JSON.stringify(session));
    } catch {
      // Storage full or disabled: the session lives in memory until the page is closed or reloaded.
    }
  }

  logout(): void {
    this.session = null;
    try {
      this.storage?.removeItem(SESSION_KEY);
    } catch {
      // Nothing stored to remove.
    }
  }

  /** A request with the token; throws ApiError for any answer but 2xx (and ends the session on 401). */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.session) headers.set("Authorization", `Bearer ${this.session.token}`);
    const response = await send(this.pathIn(path), { ...init, headers });
    if (response.ok) return response;
    const error = await errorOf(response);
    if (response.status === 401 && this.session) {
      const { via } = this.session;
      this.logout();
      this.onSessionEnded(error.message, via);
    }
    throw error;
  }

  /** A request with a JSON body (when given) whose answer is JSON. */
  async json<T>(path: string, method = "GET", body?: unknown, signal?: AbortSignal): Promise<T> {
    const init: RequestInit = { method, signal: signal ?? null };
    if (body !== undefined) {
      init.headers = { "Content-Type": "application/json" };
      init.body = JSON.stringify(body);
    }
    const response = await this.request(path, init);
    return (response.status === 204 ? undefined : await response.json()) as T;
  }

  /**
   * A path of the default catalogue's (`/products…`, `/events`) as `catalogue`'s (the chosen one's
   * unless said); any other path as it is (one already naming its catalogue among them).
   */
  pathIn(path: string, catalogue = this.catalogue): string {
    if (catalogue === DEFAULT_CATALOGUE || !/^\/(products|events)(\/|\?|$)/.test(path)) return path;
    return `/catalogues/${encodeURIComponent(catalogue)}${path}`;
  }
}

/** How the page names a key or token's session (a user's is its username). */
function credentialLabel({ kind, id }: Credential): string {
  const keyId = id.slice(id.indexOf(":") + 1, id.indexOf(":") + 9);
  if (kind === "tenant") return `Token de inquilino (clave ${keyId})`;
  if (kind === "key") return `Clave ${keyId}`;
  return "Usuario";
}

function readSession(storage: Pick<Storage, "getItem"> | null): Session | null {
  try {
    const stored = JSON.parse(storage?.getItem(SESSION_KEY) ?? "null") as Partial<Session> | null;
    if (typeof stored?.token === "string" && typeof stored.username === "string") {
      return {
        token: stored.token,
        username: stored.username,
        via: stored.via === "credential" ? "credential" : "login",
      };
    }
  } catch {
    // Unreadable: no session.
  }
  return null;
}

/** fetch, with an unreachable service as ApiError status 0 (an abort stays an AbortError). */
async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error;
    throw new ApiError(0, UNREACHABLE);
  }
}

/** The ApiError of an answer other than 2xx: its `detail`, or a Spanish line naming its status. */
async function errorOf(response: Response): Promise<ApiError> {
  let detail = `El servicio ha respondido ${response.status}.`;
  try {
    const body = (await response.json()) as { detail?: unknown };
    if (typeof body.detail === "string" && body.detail !== "") detail = body.detail;
  } catch {
    // Not JSON (a proxy's page): keep the status line.
  }
  const retryAfter = Number(response.headers.get("retry-after"));
  return new ApiError(response.status, detail, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined);
}
