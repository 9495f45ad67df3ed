import { describe, expect, test } from "bun:test";
import {
  accentVariants,
  decideLanguage,
  escapeForApertium,
  expandAbbreviations,
  omissionVariants,
  readAnalysis,
  readTranslation,
  replaceWords,
} from "../../../src/adapters/translation/spanish-text.ts";

describe("Apertium's stream format", () => {
  test("every reserved character is escaped, and a NUL (the end of a segment) cannot get through", () => {
    expect(escapeForApertium("[a] ^b$ c/d \\e @f <g> {h}")).toBe("\\[a\\] \\^b\\$ c\\/d \\\\e \\@f \\<g\\> \\{h\\}");
    expect(escapeForApertium("uno\u0000dos")).toBe("uno dos");
    expect(escapeForApertium("ñandú, 50% * # ¿qué?")).toBe("ñandú, 50% * # ¿qué?");
  });

  test("a translation comes back with escapes undone and Apertium's unknown-word marks removed", () => {
    expect(readTranslation("Things for the *cachimba")).toBe("Things for the cachimba");
    expect(readTranslation("#€5 @house *Lenovo <*b>")).toBe("€5 house Lenovo <b>");
    expect(readTranslation("\\@tienda \\[offer\\] \\^yours\\$ a\\/b \\\\*x")).toBe("@tienda [offer] ^yours$ a/b \\x");
    // A mark starts a word: these are text.
    expect(readTranslation("5 * 3 = 15 # e-mail@x")).toBe("5 * 3 = 15 # e-mail@x");
  });

  test("an analysis is read unit by unit, known or not, escapes included", () => {
    expect(readAnalysis("^la de/la<prn>+de<pr>$ ^pa/*pa$ ^\\@x/*\\@x$^./.<sent>$")).toEqual([
      { surface: "la de", known: true },
      { surface: "pa", known: false },
      { surface: "@x", known: false },
      { surface: ".", known: true },
    ]);
  });
});

describe("telling Spanish from English", () => {
  const units = (known: Record<string, boolean>) =>
    Object.entries(known).map(([surface, isKnown]) => ({ surface, known: isKnown }));

  test("the language whose analyser knows more than half of the words, and more than the other does", () => {
    const spanish = units({ funda: true, de: true, terciopelo: true, sofa: false });
    const english = units({ funda: false, de: false, terciopelo: false, sofa: true });
    expect(decideLanguage(spanish, english)).toBe("es");
    expect(decideLanguage(english, spanish)).toBe("en");
  });

  test("unknown when neither analyser knows enough, or both know as much", () => {
    expect(decideLanguage(units({ HP: false, Lenovo: false }), units({ HP: false, Lenovo: false }))).toBe("unknown");
    expect(decideLanguage(units({ no: true }), units({ no: true }))).toBe("unknown");
    expect(decideLanguage(units({ "15": true, ".": true }), units({ "15": true }))).toBe("unknown");
  });
});

describe("casual Spanish", () => {
  test("chat abbreviations are written out, as whole words only", () => {
    expect(expandAbbreviations("algo pa q huela bien, tb x la noche d verano")).toBe(
      "algo para que huela bien, también por la noche de verano",
    );
    expect(expandAbbreviations("Q tal pal finde")).toBe("que tal para el fin de semana");
    expect(expandAbbreviations("oferta 2x1 en pantalones de talla XL, papá")).toBe(
      "oferta 2x1 en pantalones de talla XL, papá",
    );
  });

  test("accent candidates put one accent (or tilde) on one letter", () => {
    expect(accentVariants("salon")).toEqual(["sálon", "salón", "saloñ"]);
    expect(accentVariants("cafe")).toEqual(["cáfe", "café"]);
    expect(accentVariants("pinguino")).toContain("pingüino");
    expect(accentVariants("xyz")).toEqual([]);
  });

  test("omission candidates put one letter back, never in front", () => {
    const variants = omissionVariants("cargadr");
    expect(variants).toContain("cargador");
    expect(variants).toContain("cargadrñ");
    expect(variants).not.toContain("acargadr");
    expect(new Set(variants).size).toBe(variants.length);
  });

  test("repairs replace whole words, whatever their case", () => {
    const repairs = new Map([["movil", "móvil"]]);
    expect(replaceWords("Movil y automovil, movil.", repairs)).toBe("móvil y automovil, móvil.");
  });
});
