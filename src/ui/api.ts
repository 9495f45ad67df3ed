/**
 * The service's API as the page calls it. The bearer token lives in this object and in the tab's
 * sessionStorage (so a reload keeps the session, closing the tab ends it), never in a URL.
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
  token: string;
  username: string;
}

/** Where the session is kept in sessionStorage. */
const SESSION_KEY = "sku-search.session";

/** What the page says when the service is unreachable. */
const UNREACHABLE = "No se ha podido contactar con el servicio. Comprueba la conexión y vuelve a intentarlo.";

export class Api {
  private session: Session | null;
  /** Called once when the service refuses the token (401): the session is over, the page asks for a login. */
  onSessionEnded: (detail: string) => void = () => {};

  constructor(private readonly storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null) {
    this.session = readSession(storage);
  }

  get username(): string | null {
    return this.session?.username ?? null;
  }

  get loggedIn(): boolean {
    return this.session !== null;
  }

  /** POST /auth/login with the form fields; keeps the token. */
  async login(username: string, password: string): Promise<void> {
    const response = await send("/auth/login", { method: "POST", body: new URLSearchParams({ username, password }) });
    if (!response.ok) throw await errorOf(response);
    const { access_token: token } = (await response.json()) as { access_token: string };
    this.session = { token, username };
    try {
      this.storage?.setItem(SESSION_KEY, JSON.stringify(this.session));
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
    const response = await send(path, { ...init, headers });
    if (response.ok) return response;
    const error = await errorOf(response);
    if (response.status === 401 && this.session) {
      this.logout();
      this.onSessionEnded(error.message);
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
}

function readSession(storage: Pick<Storage, "getItem"> | null): Session | null {
  try {
    const stored = JSON.parse(storage?.getItem(SESSION_KEY) ?? "null") as Partial<Session> | null;
    if (typeof stored?.token === "string" && typeof stored.username === "string") {
      return { token: stored.token, username: stored.username };
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
