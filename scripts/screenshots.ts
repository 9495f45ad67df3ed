/**
 * `bun run screenshots`: the README's pictures of the search page. Starts the service in process
 * as `bun start` would (the offline model, Apertium when installed, the local recommendation
 * writer) on an in-memory database with a small sample catalogue, drives /ui in headless Chromium
 * (.ci/chromium.sh installs it) and saves PNGs to docs/: the search on a desktop (1280×800) and on a
 * phone (390×844), and the catalogue on a desktop.
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
    body: JSON.stringify(CATALOGUE),
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
