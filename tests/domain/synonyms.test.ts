import { describe, expect, test } from "bun:test";
import { InvalidInput } from "../../src/domain/errors.ts";
import { checkSynonymSets, ManageSynonyms, SYNONYM_LIMITS, synonymsFor } from "../../src/domain/synonyms.ts";
import { MemorySynonymStore } from "../fakes/memory-synonym-store.ts";

describe("checkSynonymSets", () => {
  test("terms are trimmed, their invisible characters removed, and repeats (case and accents aside) kept once", () => {
    expect(checkSynonymSets([[" celular ", "Móvil", "movil", "smart\u200Bphone", "teléfono  móvil"]])).toEqual([
      ["celular", "Móvil", "smartphone", "teléfono móvil"],
    ]);
  });

  test("a set of fewer than two distinct terms, an empty term, too many sets or terms: InvalidInput naming the set", () => {
    expect(() => checkSynonymSets([["a", "b"], ["celular"]])).toThrow(
      new InvalidInput("El grupo de sinónimos 1 debe tener entre 2 y 20 términos distintos"),
    );
    expect(() => checkSynonymSets([["móvil", "MOVIL"]])).toThrow(InvalidInput);
    expect(() => checkSynonymSets([["móvil", " "]])).toThrow(
      new InvalidInput("El grupo de sinónimos 0: cada término no puede estar vacío"),
    );
    expect(() => checkSynonymSets([["móvil", "x".repeat(101)]])).toThrow(InvalidInput);
    expect(() => checkSynonymSets([Array.from({ length: 21 }, (_, i) => `t${i}`)])).toThrow(InvalidInput);
    expect(() => checkSynonymSets(Array.from({ length: SYNONYM_LIMITS.sets + 1 }, () => ["a", "b"]))).toThrow(
      InvalidInput,
    );
    expect(checkSynonymSets([])).toEqual([]);
  });
});

describe("synonymsFor", () => {
  const sets = [
    ["celular", "móvil", "smartphone"],
    ["cama de matrimonio", "cama doble"],
    ["tv", "televisor"],
  ];

  test("a term found as whole words (case and accents aside) adds the other terms of its set", () => {
    expect(synonymsFor(["funda para MOVIL"], sets)).toEqual(["celular", "smartphone"]);
    expect(synonymsFor(["una tv grande"], sets)).toEqual(["televisor"]);
    // Either text counts (the query and its English).
    expect(synonymsFor(["algo", "a smartphone case"], sets)).toEqual(["celular", "móvil"]);
  });

  test("phrases match only whole; parts of words do not match", () => {
    expect(synonymsFor(["sábanas para cama de matrimonio"], sets)).toEqual(["cama doble"]);
    expect(synonymsFor(["una cama"], sets)).toEqual([]);
    expect(synonymsFor(["tvs y televisores"], sets)).toEqual([]);
  });
});

describe("ManageSynonyms", () => {
  test("replaces a catalogue's synonyms as a whole, each catalogue its own", async () => {
    const store = new MemorySynonymStore();
    const manage = new ManageSynonyms(store);
    expect(await manage.replace("default", [["celular", " móvil "]])).toEqual([["celular", "móvil"]]);
    await manage.replace("otra", [["tv", "televisor"]]);
    expect(await manage.get("default")).toEqual([["celular", "móvil"]]);
    expect(await manage.get("otra")).toEqual([["tv", "televisor"]]);
    await manage.replace("default", []);
    expect(await manage.get("default")).toEqual([]);
    // Bad input changes nothing.
    await expect(manage.replace("otra", [["solo"]])).rejects.toBeInstanceOf(InvalidInput);
    expect(await manage.get("otra")).toEqual([["tv", "televisor"]]);
  });
});
