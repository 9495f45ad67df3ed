/** How the page splits a recommendation into text, citations and its label. */
import { describe, expect, test } from "bun:test";
import { citedIds, segmentsOf, splitLabel } from "../../src/ui/recommendation.ts";

describe("the recommendation's text", () => {
  test("citations become their own segments, in order; the ids cited are listed once each", () => {
    const text = "Le recomiendo la cafetera [#12], o el molinillo [#3][#12].";
    expect(segmentsOf(text)).toEqual([
      { kind: "text", text: "Le recomiendo la cafetera " },
      { kind: "citation", id: 12 },
      { kind: "text", text: ", o el molinillo " },
      { kind: "citation", id: 3 },
      { kind: "citation", id: 12 },
      { kind: "text", text: "." },
    ]);
    expect(citedIds(text)).toEqual([12, 3]);
    expect(segmentsOf("sin citas [#] ni [12]")).toEqual([{ kind: "text", text: "sin citas [#] ni [12]" }]);
    expect(segmentsOf("")).toEqual([]);
  });

  test("the label the service puts first is taken off the text and shown apart", () => {
    expect(
      splitLabel("[OPENAI - gpt-4.1-mini] Le recomiendo X [#1].", {
        provider: "OPENAI",
        model: "gpt-4.1-mini",
        position: 0,
      }),
    ).toEqual({ text: "Le recomiendo X [#1].", label: "OPENAI · gpt-4.1-mini" });
    expect(
      splitLabel("[LOCAL - recomendador-local-v1] Hola", {
        provider: "LOCAL",
        model: "recomendador-local-v1",
        position: 2,
      }),
    ).toEqual({ text: "Hola", label: "LOCAL · recomendador-local-v1 (de reserva)" });
    // Nothing found: no writer, no label.
    expect(splitLabel("No hemos encontrado nada.", { provider: null, model: null, position: null })).toEqual({
      text: "No hemos encontrado nada.",
      label: null,
    });
  });
});
