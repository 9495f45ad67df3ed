/**
 * The search page served at /ui: log in, or enter with an API key or a tenant token (pasted, or
 * given in the page's address: /ui#key=…&catalogue=…); pick the catalogue; search (the
 * recommendation streams in); browse and edit the catalogue, import a file, where the credential
 * allows it. Plain DOM, no framework; bundled by the service (ui-bundle.ts).
 */
import { Api, ApiError, allows, type Credential, DEFAULT_CATALOGUE } from "./api.ts";
import { byId, h, messageOf, say } from "./dom.ts";
import { ImportView } from "./import-view.ts";
import { ProductsView } from "./products-view.ts";
import { type Category, SearchView } from "./search-view.ts";

type View = "login" | "search" | "products" | "import";

function sessionStorageOrNull(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: the session lives in memory only
  }
}

const storage = sessionStorageOrNull();
const api = new Api(storage);
const search = new SearchView(api);
const products = new ProductsView(api);
const importer = new ImportView(api);

/** Where the catalogue last picked in this tab is kept (a reload stays in it). */
const CATALOGUE_KEY = "sku-search.catalogue";

const sections: Record<View, HTMLElement> = {
  login: byId("view-login", HTMLElement),
  search: byId("view-search", HTMLElement),
  products: byId("view-products", HTMLElement),
  import: byId("view-import", HTMLElement),
};
const nav = byId("nav", HTMLElement);
const navButtons = [...nav.querySelectorAll<HTMLButtonElement>("button[data-view]")];
const session = byId("session", HTMLDivElement);
const sessionUser = byId("session-user", HTMLSpanElement);
const picker = byId("catalogue-picker", HTMLDivElement);
const catalogueSelect = byId("catalogue-select", HTMLSelectElement);
const loginForm = byId("login-form", HTMLFormElement);
const username = byId("login-username", HTMLInputElement);
const password = byId("login-password", HTMLInputElement);
const loginError = byId("login-error", HTMLParagraphElement);
const loginNotice = byId("login-notice", HTMLParagraphElement);
const loginButton = loginForm.querySelector<HTMLButtonElement>("button[type=submit]");
const keyForm = byId("key-form", HTMLFormElement);
const keyInput = byId("key-input", HTMLInputElement);
const keyError = byId("key-error", HTMLParagraphElement);
const keyButton = keyForm.querySelector<HTMLButtonElement>("button[type=submit]");

/** What the session's credential may do and where; undefined until the service has said. */
let credential: Credential | undefined;

/** The views the credential may use: Products takes products.read, Import products.write. */
function usable(view: Exclude<View, "login">): boolean {
  if (view === "search") return true;
  if (!credential) return false;
  return allows(credential, view === "products" ? "products.read" : "products.write");
}

function show(view: View): void {
  for (const [name, section] of Object.entries(sections)) section.hidden = name !== view;
  const outside = view === "login";
  for (const button of navButtons) {
    button.hidden = !usable(button.dataset.view as Exclude<View, "login">);
    if (button.dataset.view === view) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  // One section only (a key that may only search): nothing to switch between.
  nav.hidden = outside || navButtons.filter((button) => !button.hidden).length < 2;
  session.hidden = outside;
  picker.hidden = outside || catalogueSelect.options.length === 0;
  document.title = `${titles[view]} · sku-search`;
}

const titles: Record<View, string> = {
  login: "Iniciar sesión",
  search: "Buscar productos",
  products: "Productos",
  import: "Importar productos",
};

async function refreshCategories(): Promise<void> {
  if (!credential || !allows(credential, "products.read")) {
    search.setCategories(null);
    return;
  }
  try {
    const { categories } = await api.json<{ categories: Category[] }>("/products/categories");
    search.setCategories(categories);
    products.setCategories(categories);
  } catch {
    // The views say what fails when they call the service themselves.
  }
}

function enter(view: Exclude<View, "login">): void {
  show(view);
  if (view === "search") search.focus();
  else if (view === "products") {
    products.focus();
    void products.reload();
  } else importer.focus();
}

/**
 * The catalogue to start in: the one the address names, else the one last picked in this tab,
 * else the default one, else the first, among those the credential sees; undefined when it sees none.
 */
function firstCatalogue(seen: readonly string[], asked: string | null): string | undefined {
  let kept: string | null = null;
  try {
    kept = storage?.getItem(CATALOGUE_KEY) ?? null;
  } catch {
    // Storage disabled: nothing kept.
  }
  return [asked, kept, DEFAULT_CATALOGUE].find((name) => name !== null && seen.includes(name)) ?? seen[0];
}

/**
 * Works in `catalogue` from now on: kept in the tab (a reload stays there) and, when the page's
 * address names a catalogue, written there instead (the address wins at a reload, and can be shared).
 */
function useCatalogue(catalogue: string | undefined): void {
  api.catalogue = catalogue ?? DEFAULT_CATALOGUE;
  if (catalogue !== undefined) {
    catalogueSelect.value = catalogue;
    try {
      storage?.setItem(CATALOGUE_KEY, catalogue);
    } catch {
      // Storage full or disabled: the choice lasts until a reload.
    }
    const url = new URL(window.location.href);
    const fragment = new URLSearchParams(url.hash.slice(1));
    if (fragment.has("catalogue")) {
      fragment.set("catalogue", catalogue);
      url.hash = fragment.toString();
    } else if (url.searchParams.has("catalogue")) {
      url.searchParams.set("catalogue", catalogue);
    }
    window.history.replaceState(null, "", url.toString());
  }
  search.reset(catalogue, credential?.filter ?? null);
  void refreshCategories();
}

/** The session has begun (a login, a key, or one kept in the tab): what it may do, then the search. */
async function startSession(asked: string | null, known?: Credential): Promise<void> {
  try {
    credential = known ?? (await api.me());
  } catch (error) {
    // A 401 has already sent the page back to the login (onSessionEnded).
    if (!(error instanceof ApiError && error.status === 401)) showLogin(messageOf(error));
    return;
  }
  sessionUser.textContent = api.username ?? "";
  catalogueSelect.replaceChildren(
    ...credential.catalogues.map((name) => h("option", { text: name, attrs: { value: name } })),
  );
  say(loginNotice, "");
  enter("search");
  useCatalogue(firstCatalogue(credential.catalogues, asked));
}

/** The login, saying `notice`; the focus where the user types next (`toKey`: the key's field). */
function showLogin(notice: string, toKey = false): void {
  search.stop();
  importer.stop();
  credential = undefined;
  catalogueSelect.replaceChildren();
  for (const dialog of document.querySelectorAll("dialog")) dialog.close();
  show("login");
  say(loginNotice, notice);
  say(loginError, "");
  say(keyError, "");
  password.value = "";
  keyInput.value = "";
  (toKey ? keyInput : username.value ? password : username).focus();
}

/** Enters with an API key or tenant token; `fromAddress`: it came in the page's address. */
async function enterWithKey(key: string, asked: string | null, fromAddress: boolean): Promise<void> {
  say(keyError, "");
  if (keyButton) keyButton.disabled = true;
  try {
    const given = await api.useCredential(key);
    // As GET /products/search?key=: an address stays in histories, so only a credential that may
    // do nothing but search is taken from one (a tenant token's key may only search).
    if (fromAddress && !(given.actions.length === 1 && given.actions[0] === "search")) {
      api.logout();
      showLogin("", true);
      say(
        keyError,
        "Una clave en la dirección de la página queda en el historial del navegador: ahí solo se admiten claves " +
          "de solo búsqueda y tokens de inquilino. Pega esta clave aquí.",
      );
      return;
    }
    keyInput.value = "";
    await startSession(asked, given);
  } catch (error) {
    if (sections.login.hidden) showLogin("", true);
    say(keyError, messageOf(error));
    keyInput.select();
  } finally {
    if (keyButton) keyButton.disabled = false;
  }
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  say(loginError, "");
  if (loginButton) loginButton.disabled = true;
  try {
    await api.login(username.value, password.value);
    password.value = "";
    await startSession(null);
  } catch (error) {
    say(loginError, messageOf(error));
    password.select();
  } finally {
    if (loginButton) loginButton.disabled = false;
  }
});

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void enterWithKey(keyInput.value.trim(), null, false);
});

catalogueSelect.addEventListener("change", () => {
  useCatalogue(catalogueSelect.value);
  if (!sections.products.hidden) void products.reload();
});

for (const button of navButtons) {
  button.addEventListener("click", () => enter(button.dataset.view as Exclude<View, "login">));
}

byId("logout", HTMLButtonElement).addEventListener("click", () => {
  api.logout();
  showLogin("Has cerrado la sesión.");
});

api.onSessionEnded = (detail, via) =>
  via === "credential"
    ? showLogin(`La clave ya no sirve (${detail}). Entra con otra.`, true)
    : showLogin(`Tu sesión ha terminado (${detail}). Vuelve a iniciar sesión.`);
products.onChange = () => void refreshCategories();
importer.onChange = () => void refreshCategories();

/**
 * A key or token and a catalogue given in the page's address, as `#key=…&catalogue=…` (a fragment
 * never leaves the browser) or `?key=…`; the key is taken out of the address at once.
 */
function fromAddress(): { key: string | null; catalogue: string | null } {
  const url = new URL(window.location.href);
  const fragment = new URLSearchParams(url.hash.slice(1));
  const key = fragment.get("key") ?? url.searchParams.get("key");
  const catalogue = fragment.get("catalogue") ?? url.searchParams.get("catalogue");
  if (key !== null) {
    fragment.delete("key");
    url.searchParams.delete("key");
    url.hash = fragment.toString();
    window.history.replaceState(null, "", url.toString().replace(/#$/, ""));
  }
  return { key: key?.trim() || null, catalogue };
}

say(loginError, "");
say(keyError, "");
const given = fromAddress();
if (given.key !== null) void enterWithKey(given.key, given.catalogue, true);
else if (api.loggedIn) void startSession(given.catalogue);
else showLogin("");
