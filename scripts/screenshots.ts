/**
 * `bun run screenshots`: the README's pictures of the search page. Starts the service in process
 * as `bun start` would (the offline model, Apertium when installed, the local recommendation
 * writer) on an in-memory database with a small sample catalogue, drives /ui in headless Chromium
 * (.ci/chromium.sh installs it) and saves PNGs to docs/: the search on a desktop (1280×800) and on a
 * phone (390×844), browsing (a facet chosen, sorted by price, a page of four) on a desktop, and
 * the catalogue on a desktop. The sample products carry a shop's attributes (price, brand, stock,
 * a picture as a data: URL, a link).
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { openPglite } from "../src/adapters/pglite/pglite-client.ts";
import { loadConfig } from "../src/app/config.ts";
import { createHttpService } from "../src/app/http-service.ts";
import { createLogger } from "../src/app/logger.ts";
import { CHROMIUM_PATH, hasChromium, launchChromium } from "../tests/support/chromium.ts";

const DOCS = resolve(import.meta.dir, "../docs");
const ADMIN = { username: "admin", password: "capturas-de-pantalla-de-ejemplo" };
const QUERY = "algo para preparar café por la mañana";

const CATALOGUE = [
  {
    name: "Cafetera espresso",
    description:
      "Prepara café espresso y capuchino en casa: bomba de 15 bares, espumador de leche y depósito de 1,2 litros",
    category: "Cocina",
    sku: "CAF-15",
  },
  {
    name: "Cafetera italiana",
    description: "Cafetera moka de aluminio para preparar 6 tazas de café, apta para inducción",
    category: "Cocina",
    sku: "CAF-6",
  },
  {
    name: "Molinillo de café",
    description: "Molinillo eléctrico de muelas cónicas con 18 niveles de molienda",
    category: "Cocina",
    sku: "MOL-18",
  },
  {
    name: "Hervidor eléctrico",
    description: "Hervidor de agua de 1,7 litros con control de temperatura",
    category: "Cocina",
    sku: "HER-17",
  },
  {
    name: "Tostadora",
    description: "Tostadora de dos ranuras anchas con función de descongelar",
    category: "Cocina",
    sku: "TOS-2",
  },
  {
    name: "Taza térmica",
    description: "Taza de acero inoxidable de 350 ml con tapa, para llevar bebidas calientes",
    category: "Hogar",
    sku: "TAZ-35",
  },
  {
    name: "Despertador con luz",
    description: "Despertador que simula el amanecer y radio FM",
    category: "Hogar",
    sku: "DES-1",
  },
  {
    name: "Zapatillas de trail",
    description: "Zapatillas ligeras con suela de agarre para caminos de montaña",
    category: "Deporte",
    sku: "ZAP-42",
  },
  {
    name: "Esterilla de yoga",
    description: "Esterilla antideslizante de 6 mm con correa de transporte",
    category: "Deporte",
    sku: "EST-6",
  },
  {
    name: "Silla de oficina",
    description: "Silla ergonómica con soporte lumbar y reposabrazos regulables",
    category: "Oficina",
    sku: "SIL-1",
  },
  {
    name: "Lámpara de escritorio",
    description: "Lámpara LED con brazo articulado y tres tonos de luz",
    category: "Oficina",
    sku: "LAM-3",
  },
  {
    name: "Auriculares inalámbricos",
    description: "Auriculares bluetooth con cancelación de ruido y 30 horas de batería",
    category: "Electrónica",
    sku: "AUR-30",
  },
];

/** The shop's attributes of each sample product (by sku): price, brand, stock, a picture. */
const SHOP: Record<string, [price: number, brand: string, inStock: boolean, color: string]> = {
  "CAF-15": [189, "Barista", true, "#8d5b3e"],
  "CAF-6": [34.9, "Moka & Co", true, "#9aa4ad"],
  "MOL-18": [69.5, "Barista", false, "#4a4a4a"],
  "HER-17": [42, "Hogarium", true, "#d9dee6"],
  "TOS-2": [29.99, "Hogarium", true, "#e0b36a"],
  "TAZ-35": [15.5, "Moka & Co", true, "#2f7d6b"],
  "DES-1": [39.9, "Aurora", false, "#f0a500"],
  "ZAP-42": [79.95, "Vento", true, "#1f5fd1"],
  "EST-6": [24.9, "Vento", true, "#7b4fb3"],
  "SIL-1": [149, "Ergo", true, "#16202c"],
  "LAM-3": [45, "Ergo", true, "#f4d35e"],
  "AUR-30": [99, "Sonora", false, "#b42318"],
};

/** A product's picture: a plain square of its colour, as a data: URL (the page's img-src allows those). */
const picture = (color: string) =>
  `data:image/svg+xml,${encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96"><rect width="96" height="96" rx="12" fill="${color}"/></svg>`)}`;

const SHOP_CATALOGUE = CATALOGUE.map((product) => {
  const [price, brand, inStock, color] = SHOP[product.sku] ?? [];
  if (price === undefined) return product;
  const url = `https://tienda.example/p/${product.sku.toLowerCase()}`;
  return {
    ...product,
    attributes: { price, currency: "EUR", brand, in_stock: inStock, image_url: picture(color as string), url },
  };
});

if (!hasChromium) {
  console.error(`${CHROMIUM_PATH} is missing: install it with .ci/chromium.sh`);
  process.exit(1);
}

const config = loadConfig({
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
  JWT_SECRET: "capturas-de-pantalla-secreto-de-ejemplo-0123456789",
  LOG_LEVEL: "error",
});
const container = await createHttpService(config, createLogger("error"), { database: await openPglite(undefined) });
await container.warmUp();
const server = container.app.listen({ hostname: "127.0.0.1", port: 0, reusePort: false });
const base = `http://127.0.0.1:${server.server?.port}`;
const browser = await launchChromium();
try {
  const login = await fetch(`${base}/auth/login`, { method: "POST", body: new URLSearchParams(ADMIN) });
  const { access_token: token } = (await login.json()) as { access_token: string };
  const imported = await fetch(`${base}/products/bulk`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(SHOP_CATALOGUE),
  });
  if (!imported.ok) throw new Error(`the sample catalogue was not imported: ${await imported.text()}`);
  mkdirSync(DOCS, { recursive: true });

  /** Logs in and searches; `options`: with the search options shown. */
  async function searchPage(viewport: { width: number; height: number }, options = false): Promise<Page> {
    const page = await (await browser.newContext({ viewport, deviceScaleFactor: 1, locale: "es-ES" })).newPage();
    await page.goto(`${base}/ui`);
    await page.getByLabel("Contraseña").fill(ADMIN.password);
    await page.getByLabel("Contraseña").press("Enter");
    if (options) await page.getByText("Opciones de búsqueda").click();
    await page.getByLabel("¿Qué buscas?").fill(QUERY);
    await page.getByLabel("¿Qué buscas?").press("Enter");
    await page.locator("#recommendation-label").waitFor();
    // The focus ring of the search box is not part of the picture.
    await page.locator("#search-query").blur();
    return page;
  }

  const save = async (page: Page, name: string) => {
    const path = join(DOCS, name);
    await page.screenshot({ path });
    console.log(`saved ${path}`);
  };

  await save(await searchPage({ width: 1280, height: 800 }, true), "ui-search-desktop.png");
  await save(await searchPage({ width: 390, height: 844 }), "ui-search-phone.png");

  // Browsing: narrowed by a facet, sorted by price, a page at a time.
  const browsing = await searchPage({ width: 1280, height: 800 }, true);
  // Pages of two: the query's relevant results are three of the twelve (RELEVANT_RESULTS_MIN_SHARE).
  await browsing.getByLabel("Número de resultados").fill("2");
  await browsing.getByLabel("¿Qué buscas?").press("Enter");
  await browsing.locator("#search-status", { hasText: "Del 1 al 2" }).waitFor();
  await browsing.locator('[data-facet="category"]', { hasText: "Cocina" }).click();
  await browsing.locator("#active-filter-list button").waitFor();
  await browsing.getByLabel("Ordenar por").selectOption("price:asc");
  await browsing.locator("#recommendation-label").waitFor();
  // The options closed again, and the picture from the top: the status, the filter chosen, the facets.
  await browsing.getByText("Opciones de búsqueda").click();
  await browsing.evaluate("window.scrollTo(0, 0)");
  await save(browsing, "ui-search-browse-desktop.png");

  const catalogue = await searchPage({ width: 1280, height: 800 });
  await catalogue.getByRole("button", { name: "Productos" }).click();
  await catalogue.locator("#products-body tr").first().waitFor();
  await catalogue.getByRole("button", { name: "Editar «Cafetera italiana»" }).click();
  await save(catalogue, "ui-products-desktop.png");
} finally {
  await browser.close();
  await container.app.stop();
  await container.close();
}
