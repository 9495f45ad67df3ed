import { describe, expect, test } from "bun:test";
import { createHarness } from "../harness.ts";

/** Every URL the page makes the browser load: src and href attributes, CSS url() and @import. */
function loadedUrls(html: string): string[] {
  const attributes = [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((match) => match[1] ?? "");
  const css = [...html.matchAll(/url\(\s*["']?([^"')]+)|@import\s+["']([^"']+)/gi)].map(
    (match) => match[1] ?? match[2] ?? "",
  );
  return [...attributes, ...css];
}

describe("OpenAPI page works offline", () => {
  test("/openapi names no URL outside this server, and Swagger UI is loaded from here", async () => {
    const h = await createHarness();
    const page = await h.call("GET", "/openapi");
    expect(page.status).toBe(200);

    expect(page.text).not.toMatch(/https?:\/\//i);
    expect(page.text).not.toMatch(/["'(]\s*\/\//); // nor protocol-relative ones
    const urls = loadedUrls(page.text);
    expect(urls.length).toBeGreaterThanOrEqual(2);
    for (const url of urls) expect(url).toMatch(/^\/(?!\/)/);
    expect(urls.some((url) => url.endsWith("/swagger-ui-bundle.js"))).toBe(true);
    expect(urls.some((url) => url.endsWith("/swagger-ui.css"))).toBe(true);
    expect(page.text).toContain('"validatorUrl":"none"');
  });

  test("the script and stylesheet it names are served, typed, non-trivial and cacheable", async () => {
    const h = await createHarness();
    const urls = loadedUrls((await h.call("GET", "/openapi")).text);
    const script = urls.find((url) => url.endsWith(".js"));
    const stylesheet = urls.find((url) => url.endsWith(".css"));
    for (const [url, type, minBytes] of [
      [script, /^text\/javascript/, 500_000],
      [stylesheet, /^text\/css/, 50_000],
    ] as const) {
      expect(url).toBeDefined();
      const response = await h.call("GET", url ?? "");
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(type);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("cache-control")).toContain("max-age=31536000");
      expect(response.headers.get("cache-control")).not.toContain("no-store");
      expect(new TextEncoder().encode(response.text).byteLength).toBeGreaterThan(minBytes);

      const head = await h.call("HEAD", url ?? "");
      expect(head.status).toBe(200);
      const post = await h.call("POST", url ?? "");
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");
    }
    expect((await h.call("GET", "/openapi/json")).headers.get("cache-control")).toBe("no-store");
  });
});
