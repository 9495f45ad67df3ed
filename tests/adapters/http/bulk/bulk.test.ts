/** POST /products/bulk over HTTP: a JSON array or JSON Lines, reported by position. */
import { describe, expect, test } from "bun:test";
import { CHAIR, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

describe("POST /products/bulk", () => {
  const ndjson = { "content-type": "application/x-ndjson" };

  test("a JSON array: valid items stored, invalid ones reported by position, counts", async () => {
    const h = await createHarness();
    const response = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, sku: "L1" }, { name: "sin más" }, MOUSE],
    });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      items: [
        { index: 0, status: "created", id: 1, sku: "L1" },
        { index: 1, status: "failed", detail: "Campo 'description': es obligatorio" },
        { index: 2, status: "created", id: 2 },
      ],
      counts: { created: 2, updated: 0, unchanged: 0, failed: 1 },
    });
  });

  test("JSON Lines: a line that is not JSON fails alone; a second identical import changes nothing", async () => {
    const h = await createHarness();
    const body = [JSON.stringify({ ...LAPTOP, sku: "L1" }), "{roto", "", JSON.stringify({ ...CHAIR, sku: "C1" })].join(
      "\n",
    );
    const first = await h.call("POST", "/products/bulk", { token: h.token, body, headers: ndjson });
    expect(first.json.items.map((item: { status: string }) => item.status)).toEqual(["created", "failed", "created"]);
    expect(first.json.items[1]).toEqual({ index: 1, status: "failed", detail: "El elemento no es un JSON válido" });
    const embedded = h.embedder.calls.length;
    const second = await h.call("POST", "/products/bulk", { token: h.token, body, headers: ndjson });
    expect(second.json.counts).toEqual({ created: 0, updated: 0, unchanged: 2, failed: 1 });
    expect(h.embedder.calls.length).toBe(embedded);
  });

  test("limits and shapes: too many items or bytes 413, wrong type 415, a broken array 400, empty 422", async () => {
    const h = await createHarness({ settings: { bulk: { maxBytes: 2_000, maxItems: 3 } } });
    const tooMany = await h.call("POST", "/products/bulk", { token: h.token, json: [LAPTOP, LAPTOP, LAPTOP, LAPTOP] });
    expect(tooMany.status).toBe(413);
    const tooBig = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, description: "x".repeat(3_000) }],
    });
    expect(tooBig.status).toBe(413);
    const wrongType = await h.call("POST", "/products/bulk", { token: h.token, form: { a: "b" } });
    expect(wrongType.status).toBe(415);
    for (const body of ['{"name": "x"}', "[1, 2", "[1,,2]", "[1] x"]) {
      const broken = await h.call("POST", "/products/bulk", {
        token: h.token,
        body,
        headers: { "content-type": "application/json" },
      });
      expect({ body, status: broken.status }).toEqual({ body, status: 400 });
    }
    const empty = await h.call("POST", "/products/bulk", { token: h.token, json: [] });
    expect(empty.status).toBe(422);
    expect(h.products.products).toEqual([]);
  });
});
