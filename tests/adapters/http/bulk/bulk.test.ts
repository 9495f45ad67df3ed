/** POST /products/bulk over HTTP: a JSON array or JSON Lines, reported by position. */
import { describe, expect, test } from "bun:test";
import { CHAIR, LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness, type Harness } from "../harness.ts";

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

/** `count` products without a sku: an item stored twice would be two products. */
const numbered = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ name: `Producto ${i}`, description: `Número ${i}`, category: "varios" }));

/** Runs the harness's job worker until the returned function stops it. */
function worker(h: Harness) {
  const stop = new AbortController();
  const loop = h.importJobs.run(stop.signal);
  return async () => {
    stop.abort();
    await loop;
  };
}

describe("POST /products/bulk as a job", () => {
  test("Prefer: respond-async: 202 with the job and its Location; the job completes with the full report", async () => {
    const h = await createHarness();
    const stop = worker(h);
    const accepted = await h.call("POST", "/products/bulk", {
      token: h.token,
      json: [{ ...LAPTOP, sku: "L1" }, { name: "sin más" }, MOUSE],
      headers: { prefer: "wait=5, Respond-Async" },
    });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("preference-applied")).toBe("respond-async");
    const location = accepted.headers.get("location") as string;
    expect(location).toBe(`/jobs/${accepted.json.id}`);
    expect(accepted.json).toMatchObject({
      status: "enqueued",
      total: 3,
      counts: { created: 0, updated: 0, unchanged: 0, failed: 1, pending: 2 },
      error: null,
      started_at: null,
      finished_at: null,
    });

    const job = await h.endedJob(location);
    await stop();
    expect(job).toMatchObject({
      status: "succeeded",
      counts: { created: 2, failed: 1, pending: 0 },
      next_cursor: null,
    });
    expect(job.items).toEqual([
      { index: 0, status: "created", id: expect.any(Number), sku: "L1" },
      { index: 1, status: "failed", detail: "Campo 'description': es obligatorio" },
      { index: 2, status: "created", id: expect.any(Number) },
    ]);
    expect(h.products.products).toHaveLength(2);
  });

  test("past its deadline a bulk is a job, accounted for item by item: what was stored before is in it", async () => {
    // 1 s of budget: the request hands over at 750 ms; 10 items embedded 2 at a time, 200 ms each, take 1 s.
    const h = await createHarness({
      settings: { requestTimeoutMs: 1_000 },
      jobSettings: { chunkSize: 2, chunkPaceMs: 0 },
    });
    h.embedder.delayMs = 200;
    const accepted = await h.call("POST", "/products/bulk", { token: h.token, json: numbered(10) });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("preference-applied")).toBeNull();
    const { counts } = accepted.json;
    expect(accepted.json.status).toBe("processing");
    expect(counts.created + counts.pending).toBe(10);

    h.embedder.delayMs = 0;
    const stop = worker(h);
    const job = await h.endedJob(accepted.headers.get("location") as string);
    await stop();
    expect(job.counts).toEqual({ created: 10, updated: 0, unchanged: 0, failed: 0, pending: 0 });
    expect(job.items.map((item: { index: number }) => item.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(h.products.products.map((product) => product.name).sort()).toEqual(
      numbered(10)
        .map((product) => product.name)
        .sort(),
    );
  });

  test("a small bulk that cannot be stored in time becomes a job whole: nothing of it was stored before", async () => {
    const h = await createHarness({ settings: { requestTimeoutMs: 1_000 } });
    h.embedder.delayMs = 5_000; // past the handover, 750 ms in; the wait is cancelled then
    const accepted = await h.call("POST", "/products/bulk", { token: h.token, json: numbered(2) });
    expect(accepted.status).toBe(202);
    expect(accepted.json).toMatchObject({ status: "enqueued", counts: { created: 0, pending: 2 } });
    expect(h.products.products).toEqual([]);

    h.embedder.delayMs = 0;
    const stop = worker(h);
    const job = await h.endedJob(accepted.headers.get("location") as string);
    await stop();
    expect(job.counts).toMatchObject({ created: 2, pending: 0 });
    expect(h.products.products).toHaveLength(2);
  });

  test("its cost is one unit of the write budget per 100 items; one that does not fit is 429 and stores nothing", async () => {
    const h = await createHarness({ rateLimits: { write: { limit: 10, windowMs: 60_000 } } });
    const first = await h.call("POST", "/products/bulk", { token: h.token, json: numbered(250) });
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-remaining")).toBe("7");

    const tooBig = await h.call("POST", "/products/bulk", { token: h.token, json: numbered(800) });
    expect(tooBig.status).toBe(429);
    expect(tooBig.json.detail).toBe(
      "Esta petición cuesta 8 unidades del cupo y quedan 7. Inténtelo de nuevo en 60 segundos",
    );
    expect(tooBig.headers.get("ratelimit-remaining")).toBe("7");
    expect(Number(tooBig.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(h.products.products).toHaveLength(250);
    expect(h.jobs.jobs).toHaveLength(1);

    const fits = await h.call("POST", "/products/bulk", { token: h.token, json: numbered(700) });
    expect(fits.status).toBe(200);
    expect(fits.headers.get("ratelimit-remaining")).toBe("0");
    expect((await h.call("POST", "/products/", { token: h.token, json: LAPTOP })).status).toBe(429);
  });
});
