import { Elysia } from "elysia";
import { HttpProblem } from "../core/errors.ts";
import { loadUiBundle, UI_ASSETS_PREFIX, type UiFile } from "./ui-bundle.ts";

/**
 * The page's Content-Security-Policy: its own script, stylesheet and icon only, no inline code,
 * requests to this server only, never framed; and, since product text is untrusted, the DOM's
 * HTML sinks (innerHTML...) are closed to strings (the page only ever sets text).
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** The file names are content hashes: each URL always names the same bytes. */
const ONE_YEAR_CACHE = "public, max-age=31536000, immutable";

type Headers = Record<string, string | number>;

function send(file: UiFile, headers: Headers, cache?: string): Uint8Array {
  headers["Content-Type"] = file.type;
  headers["Content-Security-Policy"] = UI_CONTENT_SECURITY_POLICY;
  // Same key as app.ts's SECURITY_HEADERS, so this replaces its `no-store` (the page itself keeps it).
  if (cache) headers["Cache-Control"] = cache;
  return file.bytes;
}

/**
 * GET /ui, the search page (src/ui/), and GET /ui/assets/<hashed name>, its files: served by the
 * service itself, from the executable when built (ui-bundle.ts). Hidden from the OpenAPI document.
 */
export function uiRoutes() {
  const hide = { detail: { hide: true } };
  return new Elysia()
    .get("/ui", async ({ set }) => send((await loadUiBundle()).page, set.headers), hide)
    .get(
      `${UI_ASSETS_PREFIX}:name`,
      async ({ params, set }) => {
        const asset = (await loadUiBundle()).assets.get(params.name);
        // Not Elysia's NotFoundError: for a path that matches a route, app.ts answers that with 405.
        if (!asset) throw new HttpProblem(404, "No encontrado");
        return send(asset, set.headers, ONE_YEAR_CACHE);
      },
      hide,
    );
}
