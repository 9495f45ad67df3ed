import { describe, expect, test } from "bun:test";
import { allowedImage, bucketCondition, imageOriginsOf, markedSegments, safeLink } from "../../src/ui/browse.ts";

const ORIGIN = "http://127.0.0.1:8000";

describe("highlighted snippets", () => {
  test("marks become marked segments; the escaped rest comes back as the text it was", () => {
    expect(markedSegments("<mark>Zapatilla</mark> &lt;b&gt;Acme&lt;/b&gt; &amp; &quot;Zeta&quot; &#39;x&#39;")).toEqual(
      [
        { text: "Zapatilla", marked: true },
        { text: ` <b>Acme</b> & "Zeta" 'x'`, marked: false },
      ],
    );
  });

  test("escaped text that spells a mark stays text, and an entity is decoded once", () => {
    expect(markedSegments("&lt;mark&gt;no&lt;/mark&gt; &amp;lt;")).toEqual([
      { text: "<mark>no</mark> &lt;", marked: false },
    ]);
  });
});

describe("a product's link and image", () => {
  test("a link is http(s) only", () => {
    expect(safeLink("https://tienda.example/a?b=1", ORIGIN)).toBe("https://tienda.example/a?b=1");
    expect(safeLink("javascript:alert(1)", ORIGIN)).toBeUndefined();
    expect(safeLink("data:text/html,<script>", ORIGIN)).toBeUndefined();
    expect(safeLink(42, ORIGIN)).toBeUndefined();
  });

  test("an image only where the page's img-src allows: its own origin, a data: image, or its image origins", () => {
    expect(allowedImage("/ui/assets/a.png", ORIGIN)).toBe(`${ORIGIN}/ui/assets/a.png`);
    expect(allowedImage("data:image/png;base64,AAAA", ORIGIN)).toBe("data:image/png;base64,AAAA");
    expect(allowedImage("https://cdn.example/a.png", ORIGIN)).toBeUndefined();
    expect(allowedImage("data:text/html,x", ORIGIN)).toBeUndefined();
    expect(allowedImage("javascript:alert(1)", ORIGIN)).toBeUndefined();
    // `https:`: any HTTPS origin, never plain HTTP.
    expect(allowedImage("https://cdn.example/a.png", ORIGIN, ["https:"])).toBe("https://cdn.example/a.png");
    expect(allowedImage("http://cdn.example/a.png", ORIGIN, ["https:"])).toBeUndefined();
    // Exact origins: only those (scheme, host and port).
    const listed = ["https://cdn.example", "http://127.0.0.1:9000"];
    expect(allowedImage("http://127.0.0.1:9000/a.png", ORIGIN, listed)).toBe("http://127.0.0.1:9000/a.png");
    expect(allowedImage("https://cdn.example/x/a.png", ORIGIN, listed)).toBe("https://cdn.example/x/a.png");
    expect(allowedImage("http://127.0.0.1:9001/a.png", ORIGIN, listed)).toBeUndefined();
    expect(allowedImage("https://other.example/a.png", ORIGIN, listed)).toBeUndefined();
    expect(allowedImage("javascript:alert(1)", ORIGIN, ["https:"])).toBeUndefined();
  });

  test("the image origins are read from the page's meta element's content", () => {
    expect(imageOriginsOf("https: http://127.0.0.1:9000")).toEqual(["https:", "http://127.0.0.1:9000"]);
    expect(imageOriginsOf("")).toEqual([]);
    expect(imageOriginsOf(null)).toEqual([]);
  });
});

test("a price bucket is a range, the last one including its upper bound", () => {
  expect(bucketCondition({ from: 10, to: 20 }, false).condition).toEqual({ gte: 10, lt: 20 });
  expect(bucketCondition({ from: 20, to: 30 }, true).condition).toEqual({ gte: 20, lte: 30 });
});
