import { describe, expect, test } from "bun:test";
import { CitationFilter, checkCitations, citationMarker, withCheckedCitations } from "../../src/domain/citations.ts";
import type { ScoredProduct } from "../../src/domain/product.ts";
import type { GenerationEvent } from "../../src/ports/generator.ts";
import { FakeGenerator } from "../fakes/fake-generator.ts";
import { drain, shape, shownText } from "../support/streams.ts";

const RETURNED = [1, 2, 3];

describe("checkCitations", () => {
  test("keeps the citations of returned products and reports their ids", () => {
    expect(checkCitations("Le recomiendo la Cafetera [#1] y el Molinillo [#3].", RETURNED)).toEqual({
      text: "Le recomiendo la Cafetera [#1] y el Molinillo [#3].",
      citedIds: [1, 3],
    });
  });

  test("removes a citation of a product that was not returned, with the space before it", () => {
    expect(checkCitations("La Cafetera [#1] y la Tostadora [#99], que no existe.", RETURNED)).toEqual({
      text: "La Cafetera [#1] y la Tostadora, que no existe.",
      citedIds: [1],
    });
    expect(checkCitations("Solo la Tostadora [#99].", RETURNED)).toEqual({ text: "Solo la Tostadora.", citedIds: [] });
  });

  test("each id once, in the order first cited", () => {
    const { citedIds } = checkCitations("B [#2], A [#1], B otra vez [#2] y C [#3].", RETURNED);
    expect(citedIds).toEqual([2, 1, 3]);
  });

  test("writes valid ids in the one canonical form, from a list or with leading zeros", () => {
    expect(checkCitations("Ambas [#1, #2].", RETURNED).text).toBe("Ambas [#1][#2].");
    expect(checkCitations("Ambas [#1,2, #99].", RETURNED)).toEqual({ text: "Ambas [#1][#2].", citedIds: [1, 2] });
    expect(checkCitations("La [#003].", RETURNED)).toEqual({ text: "La [#3].", citedIds: [3] });
    expect(checkCitations("La [# 2].", RETURNED).text).toBe("La [#2].");
  });

  test("removes malformed markers", () => {
    for (const marker of ["[#abc]", "[#]", "[#1;2]", "[#1 y #2]", "[#1,]", "[#-1]", "[#1.5]", `[#${"1".repeat(16)}]`]) {
      expect(checkCitations(`Cafetera ${marker} roja.`, RETURNED)).toEqual({ text: "Cafetera roja.", citedIds: [] });
    }
  });

  test("leaves alone what is not a marker: other brackets, a bare #, a [# never closed on its line", () => {
    for (const text of [
      "Talla [M] y [1].",
      "El modelo #2 es rojo.",
      "Un [ #2] con espacio.",
      "Abierto [#2 sin cerrar",
      "Abierto [#2\ny cerrado] en otra línea.",
      `Largo [#${"1, ".repeat(30)}1] de más.`,
    ]) {
      expect(checkCitations(text, RETURNED)).toEqual({ text, citedIds: [] });
    }
    expect(checkCitations("Anidado [#1 [#2] dentro.", RETURNED)).toEqual({
      text: "Anidado [#1 [#2] dentro.",
      citedIds: [2],
    });
  });

  test("a removed marker at the start of the text or of a line takes the spaces after it", () => {
    expect(checkCitations("[#99] Hola.", RETURNED).text).toBe("Hola.");
    expect(checkCitations("Uno.\n[#99] Dos.", RETURNED).text).toBe("Uno.\nDos.");
    expect(checkCitations("Pegado[#99] sigue.", RETURNED).text).toBe("Pegado sigue.");
    expect(checkCitations("Dos seguidos [#98] [#99] y fin.", RETURNED).text).toBe("Dos seguidos y fin.");
  });

  test("trims the text", () => {
    expect(checkCitations("  \n Hola [#1].  \n", RETURNED).text).toBe("Hola [#1].");
    expect(checkCitations("Hola [#99]  ", RETURNED).text).toBe("Hola");
  });

  test("nothing is valid when no product was returned", () => {
    expect(checkCitations("Cafetera [#1].", [])).toEqual({ text: "Cafetera.", citedIds: [] });
  });

  test("citationMarker is the form the checks accept", () => {
    expect(citationMarker(12)).toBe("[#12]");
    expect(checkCitations(`X ${citationMarker(2)}`, RETURNED).citedIds).toEqual([2]);
  });
});

/** Feeds `pieces` to a filter: what it sends after each, and its cited ids. */
function filtered(pieces: readonly string[], validIds: readonly number[] = RETURNED) {
  const filter = new CitationFilter(validIds);
  const sent = pieces.map((piece) => filter.push(piece));
  sent.push(filter.end());
  return { sent, text: sent.join(""), citedIds: filter.citedIds };
}

const SAMPLES = [
  "Le recomiendo la Cafetera [#1] y el Molinillo [#99], o ambos [#1, #2].",
  "  [#98] Empieza citando.\n[#99]  Sigue en otra línea [#3]  ",
  "Malformado [#x] y abierto [#2 sin cerrar; Pegado[#99] fin [#02].",
  "Nada que citar aquí.",
  "[#",
  "[#1] [#99] [#2]",
];

describe("CitationFilter", () => {
  test("holds back a marker cut between pieces until it is complete", () => {
    expect(filtered(["La Cafetera [", "#1] es buena"]).sent).toEqual(["La Cafetera", " [#1] es buena", ""]);
    expect(filtered(["La Tostadora [#", "9", "9] no"]).sent).toEqual(["La Tostadora", "", " no", ""]);
  });

  test("holds back trailing spaces: they go out before the next text, or never", () => {
    expect(filtered(["Hola ", "mundo  "]).sent).toEqual(["Hola", " mundo", ""]);
  });

  test("a [# still open at the end is plain text", () => {
    expect(filtered(["Abierto [#1"]).sent).toEqual(["Abierto", " [#1"]);
  });

  test("what is sent, however the text is cut, equals checkCitations of the whole text", () => {
    for (const sample of SAMPLES) {
      const whole = checkCitations(sample, RETURNED);
      const cuts: string[][] = [Array.from(sample)];
      for (let i = 0; i <= sample.length; i++) cuts.push([sample.slice(0, i), sample.slice(i)]);
      for (let i = 0; i + 3 <= sample.length; i += 3)
        cuts.push([sample.slice(0, i), sample.slice(i, i + 3), sample.slice(i + 3)]);
      for (const pieces of cuts) {
        const { text, citedIds } = filtered(pieces);
        expect({ text, citedIds, pieces }).toEqual({ ...whole, pieces });
      }
    }
  });
});

async function* events(...list: GenerationEvent[]): AsyncGenerator<GenerationEvent> {
  yield* list;
}

const done = (text: string, position = 0): GenerationEvent => ({
  type: "done",
  recommendation: { text, provider: "TEST", model: "m" },
  position,
});

describe("withCheckedCitations", () => {
  test("filters the deltas and gives done the text exactly as streamed, with the valid ids", async () => {
    const { events: checked } = await drain(
      withCheckedCitations(
        events(
          { type: "delta", text: "La Cafetera [" },
          { type: "delta", text: "#1] y la Tostadora [#9" },
          { type: "delta", text: "9]." },
          done("La Cafetera [#1] y la Tostadora [#99].", 2),
        ),
        RETURNED,
      ),
    );
    expect(shownText(checked)).toBe("La Cafetera [#1] y la Tostadora.");
    expect(checked.at(-1)).toEqual({
      type: "done",
      recommendation: { text: "La Cafetera [#1] y la Tostadora.", provider: "TEST", model: "m" },
      position: 2,
      citedIds: [1],
    });
  });

  test("a reset starts over: the ids cited before it no longer count", async () => {
    const { events: checked } = await drain(
      withCheckedCitations(
        events(
          { type: "delta", text: "Primero [#1] " },
          { type: "reset" },
          { type: "delta", text: "Después [#2]." },
          done("Después [#2].", 1),
        ),
        RETURNED,
      ),
    );
    expect(shape(checked)).toEqual(["delta", "reset", "delta", "done"]);
    expect(checked.at(-1)).toMatchObject({ recommendation: { text: "Después [#2]." }, citedIds: [2] });
  });

  test("a reset of text that was all held back is not passed on", async () => {
    const { events: checked } = await drain(
      withCheckedCitations(
        events({ type: "delta", text: "  [#" }, { type: "reset" }, { type: "delta", text: "Otro." }, done("Otro.", 1)),
        RETURNED,
      ),
    );
    expect(shape(checked)).toEqual(["delta", "done"]);
  });

  test("a fake model that cites a product that was not retrieved: the citation is removed everywhere", async () => {
    const products: ScoredProduct[] = [
      { id: 4, name: "Cafetera espresso", description: "15 bares", category: "Cocina", score: 0.7 },
      { id: 8, name: "Molinillo", description: "Muela cónica", category: "Cocina", score: 0.5 },
    ];
    const model = new FakeGenerator();
    model.write = () => "Le recomiendo la Cafetera espresso [#4] y la Tostadora Turbo [#77], y el Molinillo [#8].";
    const request = { query: "café", products };
    const ids = products.map((product) => product.id);
    const expected = "Le recomiendo la Cafetera espresso [#4] y la Tostadora Turbo, y el Molinillo [#8].";

    const streamed = await drain(withCheckedCitations(model.stream(request), ids));
    expect(streamed.error).toBeUndefined();
    expect(shownText(streamed.events)).toBe(expected);
    expect(streamed.events.filter((event) => event.type === "delta").length).toBeGreaterThan(10);
    expect(streamed.events.at(-1)).toMatchObject({ recommendation: { text: expected }, citedIds: [4, 8] });

    expect(checkCitations((await model.generate(request)).text, ids)).toEqual({ text: expected, citedIds: [4, 8] });
  });
});
