/**
 * GET and PUT /products/synonyms (the default catalogue's) and /catalogues/{catalogue}/products/synonyms:
 * a catalogue's synonyms, what they change in its searches alone, and who may read or change them.
 */
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

  test("each catalogue has its own: setting one's changes neither another's list nor its searches", async () => {
    const h = await createHarness();
    expect((await h.call("POST", "/catalogues", { token: h.token, json: { name: "norte" } })).status).toBe(201);
    await addProducts(h, MOUSE, LAPTOP, CHAIR);
    for (const product of [MOUSE, LAPTOP, CHAIR]) {
      const created = await h.call("POST", "/catalogues/norte/products/", { token: h.token, json: product });
      expect(created.status).toBe(201);
    }
    const put = await h.call("PUT", "/catalogues/norte/products/synonyms", {
      token: h.token,
      json: { synonyms: [["notebook", "portátil"]] },
    });
    expect(put.json).toEqual({ synonyms: [["notebook", "portátil"]] });
    expect((await h.call("GET", "/catalogues/norte/products/synonyms", { token: h.token })).json).toEqual(put.json);
    // The seed's path is the default catalogue's, which has none.
    for (const path of ["/products/synonyms", "/catalogues/default/products/synonyms"]) {
      expect((await h.call("GET", path, { token: h.token })).json).toEqual({ synonyms: [] });
    }
    const first = async (prefix: string) =>
      (
        await h.call("POST", `${prefix}/search`, {
          token: h.token,
          json: { query: "notebook", mode: "lexical", limit: 1 },
        })
      ).json.results[0]?.name;
    expect(await first("/catalogues/norte/products")).toBe(LAPTOP.name);
    expect(await first("/products")).not.toBe(LAPTOP.name);
  });

  test("a credential of another catalogue gets 404 for these, as if the catalogue did not exist; nothing changes", async () => {
    const h = await createHarness();
    for (const name of ["norte", "sur"]) await h.call("POST", "/catalogues", { token: h.token, json: { name } });
    await h.call("PUT", "/catalogues/sur/products/synonyms", { token: h.token, json: { synonyms: [["tv", "tele"]] } });
    const { key } = await h.keyOf({ actions: ["products.read", "products.write"], catalogues: ["norte"] });
    const headers = { "x-api-key": key };
    // Its own catalogue answers.
    expect((await h.call("GET", "/catalogues/norte/products/synonyms", { headers })).status).toBe(200);
    const written = await h.call("PUT", "/catalogues/norte/products/synonyms", {
      headers,
      json: { synonyms: [["sofá", "sillón"]] },
    });
    expect(written.status).toBe(200);
    // Another's, the default one's (the seed's path too) and one that does not exist: the same 404.
    const refusals: [string, string][] = [
      ["GET", "/catalogues/sur/products/synonyms"],
      ["PUT", "/catalogues/sur/products/synonyms"],
      ["GET", "/products/synonyms"],
      ["PUT", "/products/synonyms"],
      ["GET", "/catalogues/nunca/products/synonyms"],
    ];
    for (const [method, path] of refusals) {
      const response = await h.call(method, path, { headers, json: { synonyms: [["robado", "nuestro"]] } });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
      expect(response.json.detail).toMatch(/catálogo/);
    }
    expect((await h.call("GET", "/catalogues/sur/products/synonyms", { token: h.token })).json).toEqual({
      synonyms: [["tv", "tele"]],
    });
    expect((await h.call("GET", "/products/synonyms", { token: h.token })).json).toEqual({ synonyms: [] });
    // A search-only key of the catalogue may not read them (403), and another's is still 404 for it.
    const searchOnly = await h.keyOf({ actions: ["search"], catalogues: ["norte"] });
    const asShop = { "x-api-key": searchOnly.key };
    expect((await h.call("GET", "/catalogues/norte/products/synonyms", { headers: asShop })).status).toBe(403);
    expect((await h.call("GET", "/catalogues/sur/products/synonyms", { headers: asShop })).status).toBe(404);
  });
});
