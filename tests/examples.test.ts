/**
 * The README's examples: the tenant token recipes (examples/tenant-token.ts and
 * examples/tenant_token.py), run as a shop's backend would run them, and their tokens used against
 * the service: they search within their filter, and the README shows exactly these files. And the
 * eval catalogue with attributes (examples/eval-with-attributes.ts): what it derives, on a few
 * products made here and on the first lines of ../shared/eval's file when it is there.
 */
import { describe, expect, test } from "bun:test";
import { createReadStream, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import { type EvalProduct, statedPrice, withAttributes } from "../examples/eval-with-attributes.ts";
import { checkImportInput } from "../src/domain/import-products.ts";
import { createHarness } from "./adapters/http/harness.ts";
import { useTempDirs } from "./support/temp-dirs.ts";

const tempDir = useTempDirs("examples");

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

/** The eval catalogue beside the repository: ../shared in a clone, ../../shared in a worktree under wt/. */
const EVAL_FILE = [resolve(PROJECT, "../shared/eval"), resolve(PROJECT, "../../shared/eval")]
  .map((dir) => join(dir, "products-all.jsonl.gz"))
  .find((file) => existsSync(file));

/** The first `count` products of a gzip-compressed JSON Lines file, read no further. */
async function firstProducts(file: string, count: number): Promise<EvalProduct[]> {
  const products: EvalProduct[] = [];
  const stream = createReadStream(file);
  const lines = createInterface({ input: stream.pipe(createGunzip()) });
  for await (const line of lines) {
    products.push(JSON.parse(line) as EvalProduct);
    if (products.length === count) break;
  }
  lines.close();
  stream.destroy();
  return products;
}

function evalProduct(id: number, fields: Partial<EvalProduct>): EvalProduct {
  return {
    id,
    sku: `SKU${id}`,
    name: `Product ${id}`,
    description: "",
    category: "Footwear",
    path: "Footwear > Men's Footwear > Sports Shoes",
    brand: "",
    ...fields,
  };
}

describe("the eval catalogue with attributes (examples/eval-with-attributes.ts)", () => {
  const fixture = [
    evalProduct(1, { name: "Nike Running Shoes", brand: "Nike", description: "Price: Rs. 2,499 Light" }),
    evalProduct(2, { name: "Nike Court Shoes", brand: "Nike" }),
    evalProduct(3, { name: "Nike Flip Flops" }),
    evalProduct(4, { name: "Blue Canvas Shoes", description: "Buy Blue Canvas Shoes for Rs.499 online" }),
    evalProduct(5, { name: "Allure Auto Car Mat", brand: "Allure Auto", path: "Automotive > Accessories" }),
    evalProduct(6, {
      name: "Allure Auto Seat Cover",
      brand: "Allure Auto",
      category: "Automotive",
      path: "Automotive",
    }),
    evalProduct(7, { name: "Allure Auto Sun Shade", category: "Automotive" }),
    evalProduct(8, { name: "NIKE Socks", brand: "NIKE" }),
    // A fit in the brand field (the source's columns slipped): the brand its name starts with instead.
    evalProduct(9, { name: "Nike Slim Fit Track Pants", brand: "Slim" }),
    evalProduct(10, { name: "Plain Slim Fit Shirt", brand: "Slim" }),
  ];

  test("brand from its field when the name starts with it, else the known brand the name starts with", () => {
    const { items, counts } = withAttributes(fixture);
    // A name's brand in the spelling most products use ("Nike" twice, "NIKE" once); the longest that fits.
    expect(items.map((item) => item.attributes.brand)).toEqual([
      "Nike",
      "Nike",
      "Nike",
      undefined,
      "Allure Auto",
      "Allure Auto",
      "Allure Auto",
      "NIKE",
      "Nike",
      undefined,
    ]);
    expect(counts).toMatchObject({ products: 10, brandFromField: 5, brandFromName: 3 });
  });

  test("price from the description when it states one, else made up from the sku: the same every run", () => {
    expect(statedPrice("Price: Rs. 22,646 • Fine")).toBe(22646);
    expect(statedPrice("for Rs.499 online")).toBe(499);
    expect(statedPrice("Rs. 0")).toBeUndefined();
    expect(statedPrice("no price")).toBeUndefined();
    const { items, counts } = withAttributes(fixture);
    expect(items[0]?.attributes).toMatchObject({ price: 2499, currency: "INR" });
    expect(items[3]?.attributes.price).toBe(499);
    for (const item of items) {
      expect(item.attributes.currency).toBe("INR");
      expect(item.attributes.price).toBeGreaterThanOrEqual(199);
      expect(typeof item.attributes.in_stock).toBe("boolean");
    }
    expect(counts).toMatchObject({ priceFromDescription: 2, priceMadeUp: 8 });
    expect(withAttributes(fixture).items).toEqual(items);
    expect(items[4]?.attributes.subcategory).toBe("Accessories");
    expect(items[5]?.attributes).not.toHaveProperty("subcategory");
  });

  test("the script writes import items the service takes as they are", () => {
    const dir = tempDir();
    const input = join(dir, "products.jsonl");
    writeFileSync(input, fixture.map((product) => JSON.stringify(product)).join("\n"));
    const output = join(dir, "shop.jsonl");
    const run = Bun.spawnSync(["bun", "examples/eval-with-attributes.ts", input, output], { cwd: PROJECT });
    expect(run.exitCode).toBe(0);
    expect(run.stderr.toString()).toContain("10 products; brand from its field 5, from its name 3, none 2");
    const lines = readFileSync(output, "utf8").trimEnd().split("\n");
    expect(lines.map((line) => JSON.parse(line))).toEqual(withAttributes(fixture).items);
    for (const line of lines) expect(checkImportInput({ value: JSON.parse(line) })).toHaveProperty("product");
  });

  test.skipIf(EVAL_FILE === undefined)(
    "on the first products of ../shared/eval: valid items, imported and browsed with a filter and facets",
    async () => {
      const { items } = withAttributes(await firstProducts(EVAL_FILE as string, 60));
      expect(items).toHaveLength(60);
      for (const item of items) expect(checkImportInput({ value: item })).toHaveProperty("product");
      const h = await createHarness();
      const imported = await h.call("POST", "/products/bulk", { token: h.token, json: items });
      expect(imported.json.counts.failed).toBe(0);
      const search = await h.call("POST", "/products/search", {
        token: h.token,
        json: { query: "watch", limit: 5, filter: { in_stock: true }, facets: ["brand", "price", "category"] },
      });
      expect(search.status).toBe(200);
      expect(search.json.total).toBeGreaterThan(0);
      expect(search.json.results.every((hit: { attributes: { in_stock: boolean } }) => hit.attributes.in_stock)).toBe(
        true,
      );
      expect(search.json.facets.price).toMatchObject({ min: expect.any(Number), max: expect.any(Number) });
      const counted = search.json.facets.category.reduce(
        (sum: number, value: { count: number }) => sum + value.count,
        0,
      );
      expect(counted).toBe(search.json.total);
    },
  );
});
