import { describe, expect, test } from "bun:test";
import { highlightsOf, marked, SNIPPET_LENGTH, wordsToMark } from "../../src/domain/highlights.ts";

describe("highlights", () => {
  test("marks the query's words, whatever their case and accents, and words of the same stem", () => {
    const words = wordsToMark(["Zapatillas para ORBITA", "running shoes"]);
    expect(words).toEqual(["zapatillas", "orbita", "running", "shoes"]);
    expect(marked("Zapatilla Órbita de running", words)).toBe(
      "<mark>Zapatilla</mark> <mark>Órbita</mark> de <mark>running</mark>",
    );
    expect(marked("Bota de montaña", words)).toBe("Bota de montaña");
  });

  test("escapes HTML everywhere but in its own marks", () => {
    const words = wordsToMark(["script taza"]);
    expect(marked(`<script>alert("x")</script> Taza & 'plato'`, words)).toBe(
      "&lt;<mark>script</mark>&gt;alert(&quot;x&quot;)&lt;/<mark>script</mark>&gt; <mark>Taza</mark> &amp; &#39;plato&#39;",
    );
  });

  test("a long description is cut around its first match, with … where it was cut", () => {
    const description = `${"palabra ".repeat(60)}cafetera italiana ${"otra ".repeat(60)}`;
    const { name, description: snippet } = highlightsOf({ name: "Cafetera", description }, wordsToMark(["cafetera"]));
    expect(name).toBe("<mark>Cafetera</mark>");
    expect(snippet.startsWith("…")).toBe(true);
    expect(snippet.endsWith("…")).toBe(true);
    expect(snippet).toContain("<mark>cafetera</mark> italiana");
    expect(snippet.replace(/<\/?mark>/g, "").length).toBe(SNIPPET_LENGTH + 2);
  });
});
