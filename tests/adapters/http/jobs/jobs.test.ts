/**
 * GET /jobs/{id}: an import's job, for the caller who sent it only, its report by pages. Chunks of
 * one item here: an import of several is stored as a job even when it finishes in its request.
 */
import { describe, expect, test } from "bun:test";
import { LAPTOP, MOUSE } from "../catalogue-fixtures.ts";
import { createHarness } from "../harness.ts";

describe("GET /jobs/{id}", () => {
  test("the job of an import that finished in its request: status, counts, times and its report", async () => {
    const h = await createHarness({ jobSettings: { chunkSize: 1 } });
    const imported = await h.call("POST", "/products/bulk", { token: h.token, json: [LAPTOP, { name: "x" }, MOUSE] });
    expect(imported.status).toBe(200);
    const job = await h.call("GET", "/jobs/1", { token: h.token });
    expect(job.status).toBe(200);
    expect(job.json).toEqual({
      id: 1,
      status: "succeeded",
      total: 3,
      counts: { created: 2, updated: 0, unchanged: 0, failed: 1, pending: 0 },
      error: null,
      enqueued_at: "2025-01-01T00:00:00.000Z",
      started_at: "2025-01-01T00:00:00.000Z",
      finished_at: "2025-01-01T00:00:00.000Z",
      items: imported.json.items,
      next_cursor: null,
    });
  });

  test("a large report comes in pages: limit, and cursor from next_cursor", async () => {
    const h = await createHarness({ jobSettings: { chunkSize: 1 } });
    await h.call("POST", "/products/bulk", { token: h.token, json: [LAPTOP, MOUSE, LAPTOP, MOUSE, LAPTOP] });
    const indexes: number[] = [];
    let path = "/jobs/1?limit=2";
    for (let page = 0; page < 5; page++) {
      const response = await h.call("GET", path, { token: h.token });
      expect(response.status).toBe(200);
      indexes.push(...response.json.items.map((item: { index: number }) => item.index));
      if (response.json.next_cursor === null) break;
      path = `/jobs/1?limit=2&cursor=${response.json.next_cursor}`;
    }
    expect(indexes).toEqual([0, 1, 2, 3, 4]);
    for (const query of ["limit=0", "limit=5001", "limit=dos", "limit=2.5", "cursor=-1", "cursor=abc", "page=2"]) {
      const refused = await h.call("GET", `/jobs/1?${query}`, { token: h.token });
      expect({ query, status: refused.status }).toEqual({ query, status: 422 });
    }
  });

  test("belongs to its caller: another user gets 404, as for a job that does not exist; no token, 401", async () => {
    const h = await createHarness({ jobSettings: { chunkSize: 1 } });
    await h.call("POST", "/products/bulk", { token: h.token, json: [LAPTOP, MOUSE] });
    const other = await h.tokenOf("bea");
    const foreign = await h.call("GET", "/jobs/1", { token: other });
    const missing = await h.call("GET", "/jobs/2", { token: h.token });
    expect(foreign.status).toBe(404);
    expect(foreign.json).toEqual({ detail: "No existe ninguna importación con id '1'" });
    expect(missing.status).toBe(404);
    expect((await h.call("GET", "/jobs/abc", { token: h.token })).status).toBe(404);
    const anonymous = await h.call("GET", "/jobs/1");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe("Bearer");
    // The other user's own imports are theirs.
    await h.call("POST", "/products/bulk", { token: other, json: [MOUSE], headers: { prefer: "respond-async" } });
    expect((await h.call("GET", "/jobs/2", { token: other })).status).toBe(200);
    expect((await h.call("GET", "/jobs/2", { token: h.token })).status).toBe(404);
  });
});
