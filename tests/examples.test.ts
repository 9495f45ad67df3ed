/**
 * The README's tenant token recipes (examples/tenant-token.ts and examples/tenant_token.py), run as
 * a shop's backend would run them, and their tokens used against the service: they search within
 * their filter, and the README shows exactly these files.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createHarness } from "./adapters/http/harness.ts";

const PROJECT = join(import.meta.dir, "..");
const README = readFileSync(join(PROJECT, "README.md"), "utf8");

const RECIPES = [
  {
    file: "examples/tenant-token.ts",
    command: (key: string, filter: string) => ["bun", "examples/tenant-token.ts", key, filter, "600"],
  },
  {
    file: "examples/tenant_token.py",
    command: (key: string, filter: string) => ["python3", "examples/tenant_token.py", key, filter, "600"],
  },
];

describe.each(RECIPES)("the tenant token recipe $file", ({ file, command }) => {
  test("is in the README as it is, and its token searches within its filter", async () => {
    expect(README).toContain(readFileSync(join(PROJECT, file), "utf8").trim());
    // The recipe stamps `exp` from the real clock, ahead of the harness's (2025-01-01).
    const h = await createHarness();
    for (const product of [
      { name: "Portátil ligero", description: "13 pulgadas", category: "Informática" },
      { name: "Taza de café", description: "Cerámica", category: "Cocina" },
    ]) {
      await h.call("POST", "/products/", { token: h.token, json: product });
    }
    const { key } = await h.keyOf({ actions: ["search"] });
    const run = Bun.spawnSync(command(key, JSON.stringify({ category: ["Cocina"] })), { cwd: PROJECT });
    expect(run.stderr.toString()).toBe("");
    const token = run.stdout.toString().trim();
    const search = await h.call("POST", "/products/search", { token, json: { query: "portátil", limit: 10 } });
    expect(search.status).toBe(200);
    expect(search.json.results.map((product: { name: string }) => product.name)).toEqual(["Taza de café"]);
    expect((await h.call("GET", "/products", { token })).status).toBe(403);
  });
});
