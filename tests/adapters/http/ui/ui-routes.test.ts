/** GET /ui and its files over HTTP: what the browser gets, headers included (tests/ui/ drives the page itself). */
import { describe, expect, test } from "bun:test";
import { UI_CONTENT_SECURITY_POLICY } from "../../../../src/adapters/http/ui/ui-routes.ts";
import { createHarness } from "../harness.ts";

describe("the search page's routes", () => {
  test("GET /ui: the page, under a strict Content-Security-Policy, with no inline script or style", async () => {
    const h = await createHarness();
    const page = await h.call("GET", "/ui");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    expect(page.headers.get("content-security-policy")).toBe(UI_CONTENT_SECURITY_POLICY);
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(UI_CONTENT_SECURITY_POLICY.split("; ")).toContain(directive);
    }
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.text).toContain('<html lang="es">');
    // Every script is a file of this server's; no inline code, styles or event handlers.
    for (const tag of page.text.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/ src="\/ui\/assets\//);
    expect(page.text).not.toMatch(/<style\b| style=| on[a-z]+=|javascript:/i);
    expect(page.text).not.toMatch(/https?:\/\//);
    expect((await h.call("GET", "/ui/")).status).toBe(200);
  });

  test("its script, stylesheet and icon, under hashed names, cached for good; anything else 404", async () => {
    const h = await createHarness();
    const page = await h.call("GET", "/ui");
    const urls = [...page.text.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((match) => match[1] as string);
    const types = new Set<string>();
    for (const url of new Set(urls)) {
      expect(url).toMatch(/^\/ui\/assets\/[a-z]+-[a-z0-9]{8}\.(js|css|svg)$/);
      const asset = await h.call("GET", url);
      expect({ url, status: asset.status }).toEqual({ url, status: 200 });
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(asset.text.length).toBeGreaterThan(100);
      types.add((asset.headers.get("content-type") ?? "").split(";")[0] as string);
    }
    expect([...types].sort()).toEqual(["image/svg+xml", "text/css", "text/javascript"]);

    const missing = await h.call("GET", "/ui/assets/index-00000000.js");
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ detail: "No encontrado" });
    const wrongMethod = await h.call("POST", "/ui");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD");
  });

  test("are not part of the API's OpenAPI document", async () => {
    const h = await createHarness();
    const document = await h.call("GET", "/openapi/json");
    expect(Object.keys(document.json.paths).filter((path) => path.startsWith("/ui"))).toEqual([]);
  });
});
