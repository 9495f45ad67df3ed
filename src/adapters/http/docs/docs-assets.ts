/**
 * Swagger UI's script and stylesheet, served by this server so that /openapi works offline (the
 * openapi plugin's default page loads them from a public CDN).
 *
 * Imported `with { type: "file" }`: run from source each is the path of the file in node_modules;
 * in the executable built by `bun build --compile` (scripts/build.ts) the file is embedded and the
 * path points inside the executable. Either way `Bun.file(path)` reads it.
 */
import { Elysia } from "elysia";
import swaggerUiPackage from "swagger-ui-dist/package.json" with { type: "json" };
import stylesheetPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };

/** The version is in the path, so each URL always names the same bytes and may be cached for good. */
const ASSETS_PREFIX = `/openapi/assets/swagger-ui-${swaggerUiPackage.version}`;

/** Where the /openapi page finds Swagger UI (absolute paths on this server). */
export const DOCS_ASSETS = {
  script: `${ASSETS_PREFIX}/swagger-ui-bundle.js`,
  stylesheet: `${ASSETS_PREFIX}/swagger-ui.css`,
} as const;

const ONE_YEAR_CACHE = "public, max-age=31536000, immutable";

/** GET the Swagger UI script and stylesheet at DOCS_ASSETS (hidden from the OpenAPI document). */
export function docsAssetRoutes() {
  const serve = (path: string, contentType: string) => {
    const file = Bun.file(path);
    return ({ set }: { set: { headers: Record<string, string | number> } }) => {
      // Same key as app.ts's SECURITY_HEADERS, so this replaces its `no-store`.
      set.headers["Cache-Control"] = ONE_YEAR_CACHE;
      set.headers["Content-Type"] = contentType;
      return file;
    };
  };
  return new Elysia()
    .get(DOCS_ASSETS.script, serve(bundlePath, "text/javascript; charset=utf-8"), { detail: { hide: true } })
    .get(DOCS_ASSETS.stylesheet, serve(stylesheetPath, "text/css; charset=utf-8"), { detail: { hide: true } });
}
