import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  englishPlural,
  normaliseWord,
  parseVocabulary,
  preEdit,
  ShopVocabulary,
  spanishPlural,
} from "../../../src/adapters/translation/shop-vocabulary.ts";

const VOCABULARY_DIR = join(import.meta.dir, "../../../src/adapters/translation/vocabulary");

const vocabulary = (text: string) => new ShopVocabulary(parseVocabulary(text, "test.tsv"));

describe("the vocabulary files", () => {
  test("each file parses, and no file gives the same Spanish words twice", () => {
    const files = readdirSync(VOCABULARY_DIR).filter((file) => file.endsWith(".tsv"));
    expect(files.sort()).toEqual(["accents.tsv", "phrases.tsv", "products.tsv", "regional.tsv"]);
    for (const file of files) {
      const forms = parseVocabulary(readFileSync(join(VOCABULARY_DIR, file), "utf8"), file);
      expect(forms.length).toBeGreaterThan(5);
      const keys = forms.map((form) => form.words.join(" "));
      expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
    }
  });

  test("a malformed line is refused, naming its file and line", () => {
    expect(() => parseVocabulary("# comment\nreloj watch\n", "products.tsv")).toThrow("products.tsv:2");
    expect(() => parseVocabulary("reloj\twatch\trelojes\n", "products.tsv")).toThrow("products.tsv:1");
  });
});

describe("plurals", () => {
  test("Spanish: +s after a vowel, +es after a consonant with the last accent dropped, z → ces; a phrase up to its preposition", () => {
    expect(spanishPlural("funda")).toBe("fundas");
    expect(spanishPlural("reloj")).toBe("relojes");
    expect(spanishPlural("cordón")).toBe("cordones");
    expect(spanishPlural("lápiz")).toBe("lápices");
    expect(spanishPlural("tenis")).toBe("tenis");
    expect(spanishPlural("camino de mesa")).toBe("caminos de mesa");
    expect(spanishPlural("funda nórdica")).toBe("fundas nórdicas");
  });

  test("English: +s, +es after s, x, ch, sh, consonant + y → ies, on the last word", () => {
    expect(englishPlural("coffee maker")).toBe("coffee makers");
    expect(englishPlural("watch")).toBe("watches");
    expect(englishPlural("lunch box")).toBe("lunch boxes");
    expect(englishPlural("battery")).toBe("batteries");
    expect(englishPlural("toy")).toBe("toys");
  });

  test("an entry gives both numbers, or only the one given when its plural columns say '-'", () => {
    const forms = parseVocabulary("reloj\twatch\nvaqueros\tjeans\t-\t-\njersey\tsweater\tjerséis\tsweaters\n", "x.tsv");
    expect(forms.map((form) => [form.words.join(" "), form.replacement, form.plural])).toEqual([
      ["reloj", "watch", false],
      ["relojes", "watches", true],
      ["vaqueros", "jeans", true],
      ["jersey", "sweater", false],
      ["jerseis", "sweaters", true],
    ]);
  });
});

describe("matching", () => {
  const shop = vocabulary("reloj\twatch\nreloj de pared\twall clock\nsábana\tbedsheet\n");

  test("whole words, ignoring case and accents; the longest phrase wins", () => {
    const text = "Relojes de pared y un RELOJ, sabanas";
    expect(shop.matches(text).map((m) => [text.slice(m.start, m.end), m.replacement])).toEqual([
      ["Relojes de pared", "wall clocks"],
      ["RELOJ", "watch"],
      ["sabanas", "bedsheets"],
    ]);
    expect(shop.matches("relojería")).toEqual([]);
    // A phrase's words are separated by spaces only.
    expect(shop.matches("reloj, de pared").map((m) => m.replacement)).toEqual(["watch"]);
    expect(normaliseWord("Sábanas")).toBe("sabanas");
  });

  test("replace puts each match's replacement in its place (Spanish → Spanish lists)", () => {
    const accents = vocabulary("mama\tmamá\tmamas\tmamás\nel te\tel té\t-\t-\n");
    expect(accents.replace("regalo para mi mama que bebe el te; te quiero")).toBe(
      "regalo para mi mamá que bebe el té; te quiero",
    );
  });
});

describe("the pre-edit around Apertium", () => {
  const shop = vocabulary("reloj\twatch\nfunda\tcover\ncafetera\tcoffee maker\nvela\tcandle\n");

  test("each phrase becomes a placeholder noun of its number and, by its ending, gender; its English comes back", () => {
    const edited = preEdit("una funda y dos relojes para la cafetera", shop);
    expect(edited.text).toBe("una nutria y dos ornitorrincos para la comadreja");
    // What Apertium makes of it, then the vocabulary's English in its place (capitals kept).
    expect(edited.restore("Otter and two platypuses for the weasel")).toBe(
      "Cover and two watches for the coffee maker",
    );
  });

  test("an article made for the placeholder is mended; a placeholder Apertium lost is added at the end", () => {
    const candle = preEdit("una vela", shop);
    expect(candle.restore("An otter")).toBe("A candle");
    expect(preEdit("un reloj", shop).restore("A thing")).toBe("A thing watch");
  });

  test("a placeholder the text already holds is not used; a text without phrases is left alone", () => {
    const edited = preEdit("el ornitorrinco y su reloj", shop);
    expect(edited.text).toBe("el ornitorrinco y su tejón");
    expect(edited.restore("The platypus and his badger")).toBe("The platypus and his watch");
    const plain = preEdit("una lámpara", shop);
    expect(plain.text).toBe("una lámpara");
    expect(plain.restore("A lamp")).toBe("A lamp");
  });
});
