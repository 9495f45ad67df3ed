/** GET and PUT /products/synonyms: a catalogue's synonyms, and what they change in a search. */
import { describe, expect, test } from "bun:test";
import { addProducts, CHAIR, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

describe("/products/synonyms", () => {
  test("none at first; PUT replaces them all (cleaned) and GET reads them back; an empty list removes them", async () => {
    const h = await createHarness();
    expect((await h.call("GET", "/products/synonyms", { token: h.token })).json).toEqual({ synonyms: [] });
    const put = await h.call("PUT", "/products/synonyms", {
      token: h.token,
      json: {
        synonyms: [
          [" celular", "móvil", "MOVIL", "smartphone"],
          ["ordenador", "computadora"],
        ],
      },
    });
    expect(put.status).toBe(200);
    const stored = {
      synonyms: [
        ["celular", "móvil", "smartphone"],
        ["ordenador", "computadora"],
      ],
    };
    expect(put.json).toEqual(stored);
    expect((await h.call("GET", "/products/synonyms", { token: h.token })).json).toEqual(stored);
    await h.call("PUT", "/products/synonyms", { token: h.token, json: { synonyms: [] } });
    expect((await h.call("GET", "/products/synonyms", { token: h.token })).json).toEqual({ synonyms: [] });
  });

  test("bad sets are 422 saying which, and change nothing", async () => {
    const h = await createHarness();
    await h.call("PUT", "/products/synonyms", { token: h.token, json: { synonyms: [["tv", "televisor"]] } });
    const cases: [unknown, string][] = [
      [{ synonyms: [["celular"]] }, "El grupo de sinónimos 0 debe tener entre 2 y 20 términos distintos"],
      [
        {
          synonyms: [
            ["tv", "televisor"],
            ["a", " "],
          ],
        },
        "El grupo de sinónimos 1: cada término no puede estar vacío",
      ],
      [{}, "Campo 'synonyms': es obligatorio"],
      [{ synonyms: [["a", "b"]], other: 1 }, "Campo 'other': no está permitido"],
    ];
    for (const [json, detail] of cases) {
      const response = await h.call("PUT", "/products/synonyms", { token: h.token, json });
      expect({ json, status: response.status, body: response.json }).toEqual({ json, status: 422, body: { detail } });
    }
    expect((await h.call("GET", "/products/synonyms", { token: h.token })).json).toEqual({
      synonyms: [["tv", "televisor"]],
    });
  });

  test("reading takes products.read, replacing products.write: a viewer reads them and cannot change them", async () => {
    const h = await createHarness();
    expect((await h.call("GET", "/products/synonyms")).status).toBe(401);
    const viewer = await h.tokenOf("vera", "viewer");
    expect((await h.call("GET", "/products/synonyms", { token: viewer })).status).toBe(200);
    const put = await h.call("PUT", "/products/synonyms", { token: viewer, json: { synonyms: [["a", "b"]] } });
    expect(put.status).toBe(403);
  });

  test("a hybrid or lexical search finds the products of a synonym at once, with no product embedded again", async () => {
    const h = await createHarness();
    await addProducts(h, MOUSE, LAPTOP, CHAIR);
    const first = async (mode: string) =>
      (await h.call("POST", "/products/search", { token: h.token, json: { query: "notebook", mode, limit: 1 } })).json
        .results[0]?.name;
    expect(await first("hybrid")).not.toBe(LAPTOP.name);
    h.embedder.calls.length = 0;
    await h.call("PUT", "/products/synonyms", { token: h.token, json: { synonyms: [["notebook", "portátil"]] } });
    expect(await first("hybrid")).toBe(LAPTOP.name);
    expect(await first("lexical")).toBe(LAPTOP.name);
    // The semantic search is the contract's ranking by the embeddings alone: synonyms do not touch it.
    expect(await first("semantic")).not.toBe(LAPTOP.name);
    expect(h.embedder.calls.every((call) => call.purpose === "query")).toBe(true);
  });
});
