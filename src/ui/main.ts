/**
 * The search page served at /ui: log in, search (the recommendation streams in), browse and edit
 * the catalogue, import a file. Plain DOM, no framework; bundled by the service (ui-bundle.ts).
 */
import { Api } from "./api.ts";
import { byId, messageOf, say } from "./dom.ts";
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

const api = new Api(sessionStorageOrNull());
const search = new SearchView(api);
const products = new ProductsView(api);
const importer = new ImportView(api);

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
const loginForm = byId("login-form", HTMLFormElement);
const username = byId("login-username", HTMLInputElement);
const password = byId("login-password", HTMLInputElement);
const loginError = byId("login-error", HTMLParagraphElement);
const loginNotice = byId("login-notice", HTMLParagraphElement);
const loginButton = loginForm.querySelector<HTMLButtonElement>("button[type=submit]");

function show(view: View): void {
  for (const [name, section] of Object.entries(sections)) section.hidden = name !== view;
  nav.hidden = view === "login";
  session.hidden = view === "login";
  for (const button of navButtons) {
    if (button.dataset.view === view) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  document.title = `${titles[view]} · sku-search`;
}

const titles: Record<View, string> = {
  login: "Iniciar sesión",
  search: "Buscar productos",
  products: "Productos",
  import: "Importar productos",
};

async function refreshCategories(): Promise<void> {
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

function startSession(): void {
  sessionUser.textContent = api.username ?? "";
  say(loginNotice, "");
  enter("search");
  void refreshCategories();
}

function showLogin(notice: string): void {
  search.stop();
  importer.stop();
  for (const dialog of document.querySelectorAll("dialog")) dialog.close();
  show("login");
  say(loginNotice, notice);
  say(loginError, "");
  password.value = "";
  (username.value ? password : username).focus();
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  say(loginError, "");
  if (loginButton) loginButton.disabled = true;
  try {
    await api.login(username.value, password.value);
    password.value = "";
    startSession();
  } catch (error) {
    say(loginError, messageOf(error));
    password.select();
  } finally {
    if (loginButton) loginButton.disabled = false;
  }
});

for (const button of navButtons) {
  button.addEventListener("click", () => enter(button.dataset.view as Exclude<View, "login">));
}

byId("logout", HTMLButtonElement).addEventListener("click", () => {
  api.logout();
  showLogin("Has cerrado la sesión.");
});

api.onSessionEnded = (detail) => showLogin(`Tu sesión ha terminado (${detail}). Vuelve a iniciar sesión.`);
products.onChange = () => void refreshCategories();
importer.onChange = () => void refreshCategories();

say(loginError, "");
if (api.loggedIn) startSession();
else showLogin("");
