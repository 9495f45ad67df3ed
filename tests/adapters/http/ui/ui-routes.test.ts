/** GET /ui and its files over HTTP: what the browser gets, headers included (tests/ui/ drives the page itself). */
import { describe, expect, test } from "bun:test";
import { uiContentSecurityPolicy } from "../../../../src/adapters/http/ui/ui-routes.ts";
import { createHarness } from "../harness.ts";

describe("the search page's routes", () => {
  test("GET /ui: the page, under a strict Content-Security-Policy, with no inline script or style", async () => {
    const h = await createHarness();
    const page = await h.call("GET", "/ui");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const policy = page.headers.get("content-security-policy") ?? "";
    expect(policy).toBe(uiContentSecurityPolicy());
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data: https:",
      "connect-src 'self'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(policy.split("; ")).toContain(directive);
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

  test("product pictures: any HTTPS origin by default, only the listed origins when set, and the page is told which", async () => {
    const meta = (text: string) => /<meta name="sku-search-image-origins" content="([^"]*)">/.exec(text)?.[1];
    const byDefault = await (await createHarness()).call("GET", "/ui");
    expect(byDefault.headers.get("content-security-policy")).toContain("; img-src 'self' data: https:; ");
    expect(meta(byDefault.text)).toBe("https:");

    const listed = await createHarness({
      settings: { uiImageOrigins: ["https://cdn.shop.example", "http://127.0.0.1:9000"] },
    });
    const page = await listed.call("GET", "/ui");
    const policy = page.headers.get("content-security-policy") ?? "";
    expect(policy.split("; ")).toContain("img-src 'self' data: https://cdn.shop.example http://127.0.0.1:9000");
    expect(policy).not.toContain("https:;");
    expect(meta(page.text)).toBe("https://cdn.shop.example http://127.0.0.1:9000");
    // Its files carry the same policy.
    const script = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(page.text)?.[1] as string;
    expect((await listed.call("GET", script)).headers.get("content-security-policy")).toBe(policy);

    const none = await (await createHarness({ settings: { uiImageOrigins: [] } })).call("GET", "/ui");
    expect(none.headers.get("content-security-policy")).toContain("; img-src 'self' data:; ");
    expect(meta(none.text)).toBe("");
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
