import { describe, expect, test } from "bun:test";
import {
  accentVariants,
  decideLanguage,
  diminutiveBases,
  escapeForApertium,
  expandAbbreviations,
  knowledgeOfWords,
  omissionVariants,
  readAnalysis,
  readBilingualAlternatives,
  readTranslation,
  replaceWords,
  typoVariants,
  unknownWords,
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
  const decide = (
    spanish: Record<string, boolean>,
    english: Record<string, boolean>,
    spanishAlso: (word: string) => boolean = () => false,
  ) => decideLanguage(knowledgeOfWords(units(spanish), units(english), spanishAlso));

  test("the language whose analyser knows more than half of the words, and more than the other does", () => {
    const spanish = { funda: true, de: true, terciopelo: true, sofa: false };
    const english = { funda: false, de: false, terciopelo: false, sofa: true };
    expect(decide(spanish, english)).toBe("es");
    expect(decide(english, spanish)).toBe("en");
  });

  test("words no language knows (names, brands, model numbers) do not count", () => {
    // Before, "reloj casio" was unknown: one known word of two is not more than half.
    expect(decide({ reloj: true, casio: false }, { reloj: false, casio: false })).toBe("es");
    expect(decide({ battery: false, lenovo: false }, { battery: true, lenovo: false })).toBe("en");
  });

  test("a multiword unit of the analyser counts for each of its words", () => {
    expect(knowledgeOfWords(units({ "la de": true, casa: true }), units({ "la de": false, casa: false }))).toEqual([
      { spanish: true, english: false, repaired: false },
      { spanish: true, english: false, repaired: false },
      { spanish: true, english: false, repaired: false },
    ]);
  });

  test("a word Spanish only once repaired or through the vocabulary counts as Spanish, and wins a tie", () => {
    // "cafe": the English analyser knows it, the Spanish one knows "café".
    expect(decide({ cafe: false }, { cafe: true })).toBe("en");
    expect(decide({ cafe: false }, { cafe: true }, (word) => word === "cafe")).toBe("es");
    // "cancion": neither knows it; the Spanish analyser knows "canción".
    expect(decide({ cancion: false }, { cancion: false }, (word) => word === "cancion")).toBe("es");
    expect(decide({ cafe: false, mug: false }, { cafe: true, mug: true }, (word) => word === "cafe")).toBe("en");
  });

  test("unknown when no word is known, or both languages know as much and nothing was repaired", () => {
    expect(decide({ HP: false, Lenovo: false }, { HP: false, Lenovo: false })).toBe("unknown");
    expect(decide({ no: true }, { no: true })).toBe("unknown");
    expect(decide({ "15": true, ".": true }, { "15": true })).toBe("unknown");
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

  test("typo candidates: a letter put back, replaced, dropped, or two neighbours swapped; never the word itself", () => {
    const variants = typoVariants("mocasijes");
    expect(variants).toContain("mocasines"); // replaced
    expect(typoVariants("cargadr")).toContain("cargador"); // put back
    expect(typoVariants("aromatersapia")).toContain("aromaterapia"); // dropped
    expect(typoVariants("slaón")).toContain("salón"); // swapped
    expect(variants).not.toContain("mocasijes");
    expect(new Set(variants).size).toBe(variants.length);
  });

  test("repairs replace whole words, whatever their case", () => {
    const repairs = new Map([["movil", "móvil"]]);
    expect(replaceWords("Movil y automovil, movil.", repairs)).toBe("móvil y automovil, móvil.");
  });

  test("a diminutive's possible words, the likeliest first, spelling changes undone, plural kept", () => {
    expect(diminutiveBases("relojito")).toContain("reloj");
    expect(diminutiveBases("bolsito")[0]).toBe("bolso");
    expect(diminutiveBases("bolsita")[0]).toBe("bolsa");
    expect(diminutiveBases("tacita")).toContain("taza");
    expect(diminutiveBases("poquito")).toContain("poco");
    expect(diminutiveBases("cafecito")).toContain("café");
    expect(diminutiveBases("cochecito")).toContain("coche");
    expect(diminutiveBases("relojitos")).toContain("relojes");
    expect(diminutiveBases("tacitas")).toContain("tazas");
    expect(diminutiveBases("mesa")).toEqual([]);
  });
});

describe("what a search may match besides the translation", () => {
  test("the bilingual dictionary's translations of each noun and adjective, without tags, marks or repeats", () => {
    const output =
      "^reloj<n><m><sg>/clock<n><sg>/watch<n><sg>$ ^de<pr>/of<pr>/from<pr>$ ^vela<n><f><sg>/sail<n><sg>/candle<n><sg>$ " +
      "^aromático<adj><f><sg>/aromatic<adj><f><sg>$ ^quitar<vblex><inf>/remove<vblex><inf>/take# away<vblex><sep><inf>$ " +
      "^*cafetera/*cafetera$ ^cargador<adj><m><sg>/@cargador<adj><m><sg>$ ^reloj<n><m><pl>/clock<n><pl>/watch<n><pl>$";
    expect(readBilingualAlternatives(output)).toEqual(["clock", "watch", "sail", "candle", "aromatic"]);
  });

  test("the words neither analyser knows, nor the vocabulary or a repair, once each", () => {
    const spanish = readAnalysis("^funda/funda<n>$ ^cafetrea/*cafetrea$ ^xyz/*xyz$ ^para/para<pr>$ ^xyz/*xyz$");
    const english = readAnalysis("^funda/*funda$ ^cafetrea/*cafetrea$ ^xyz/*xyz$ ^para/*para$ ^xyz/*xyz$");
    expect(unknownWords(spanish, english, () => false)).toEqual(["cafetrea", "xyz"]);
    expect(unknownWords(spanish, english, (word) => word === "xyz")).toEqual(["cafetrea"]);
  });
});
