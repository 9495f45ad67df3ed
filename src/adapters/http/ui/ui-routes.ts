import { Elysia } from "elysia";
import { IMAGE_ORIGINS_META } from "../../../ui/browse.ts";
import { HttpProblem } from "../core/errors.ts";
import { loadUiBundle, UI_ASSETS_PREFIX, type UiFile } from "./ui-bundle.ts";

/**
 * Where product pictures (`image_url`) may come from besides the service's own origin and `data:`
 * URLs, by default: any HTTPS origin, as a shop's pictures live on its CDN (UI_IMAGE_ORIGINS lists
 * exact origins instead, or `none`). `https:` is CSP's scheme source: any host over HTTPS.
 */
export const DEFAULT_UI_IMAGE_ORIGINS: readonly string[] = ["https:"];

/**
 * The page's Content-Security-Policy: its own script, stylesheet and icon only, no inline code,
 * requests to this server only, never framed; pictures also from `imageOrigins`; and, since product
 * text is untrusted, the DOM's HTML sinks (innerHTML...) are closed to strings (the page only ever
 * sets text). A picture can run nothing and read nothing of the page: what an image origin costs is
 * that the shopper's browser asks it for the picture (no referrer: Referrer-Policy no-referrer).
 */
export function uiContentSecurityPolicy(imageOrigins: readonly string[] = DEFAULT_UI_IMAGE_ORIGINS): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self' data:", ...imageOrigins].join(" "),
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");
}

/** The file names are content hashes: each URL always names the same bytes. */
const ONE_YEAR_CACHE = "public, max-age=31536000, immutable";

type Headers = Record<string, string | number>;

function send(file: UiFile, headers: Headers, policy: string, cache?: string): Uint8Array {
  headers["Content-Type"] = file.type;
  headers["Content-Security-Policy"] = policy;
  // Same key as app.ts's SECURITY_HEADERS, so this replaces its `no-store` (the page itself keeps it).
  if (cache) headers["Cache-Control"] = cache;
  return file.bytes;
}

/**
 * The page with the origins its pictures may come from in a meta element (the page cannot read its
 * own Content-Security-Policy, and a picture it refuses would be an error in the browser's console).
 */
function withImageOrigins(page: UiFile, imageOrigins: readonly string[]): UiFile {
  const escaped = imageOrigins.join(" ").replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);
  const html = new TextDecoder().decode(page.bytes);
  const meta = `<meta name="${IMAGE_ORIGINS_META}" content="${escaped}">`;
  return { type: page.type, bytes: new TextEncoder().encode(html.replace("</head>", `${meta}</head>`)) };
}

export interface UiRoutesSettings {
  /** Where product pictures may come from besides the service itself and data: URLs (UI_IMAGE_ORIGINS). */
  imageOrigins?: readonly string[] | undefined;
}

/**
 * GET /ui, the search page (src/ui/), and GET /ui/assets/<hashed name>, its files: served by the
 * service itself, from the executable when built (ui-bundle.ts). Hidden from the OpenAPI document.
 */
export function uiRoutes({ imageOrigins = DEFAULT_UI_IMAGE_ORIGINS }: UiRoutesSettings = {}) {
  const hide = { detail: { hide: true } };
  const policy = uiContentSecurityPolicy(imageOrigins);
  let page: Promise<UiFile> | undefined;
  const thePage = () => {
    page ??= loadUiBundle().then((bundle) => withImageOrigins(bundle.page, imageOrigins));
    return page;
  };
  return new Elysia()
    .get("/ui", async ({ set }) => send(await thePage(), set.headers, policy), hide)
    .get(
      `${UI_ASSETS_PREFIX}:name`,
      async ({ params, set }) => {
        const asset = (await loadUiBundle()).assets.get(params.name);
        // Not Elysia's NotFoundError: for a path that matches a route, app.ts answers that with 405.
        if (!asset) throw new HttpProblem(404, "No encontrado");
        return send(asset, set.headers, policy, ONE_YEAR_CACHE);
      },
      hide,
    );
}
