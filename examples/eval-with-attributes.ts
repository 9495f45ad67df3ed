/**
 * The eval catalogue (../shared/eval/products-all.jsonl.gz: 12,430 Flipkart products, CC BY-SA 4.0,
 * PromptCloud) as a shop's catalogue with attributes, for `bun run cli import`:
 *
 *   bun examples/eval-with-attributes.ts [input] [output]
 *     input:  ../shared/eval/products-all.jsonl.gz (or products.jsonl; gzip or not)
 *     output: data/eval-with-attributes.jsonl (data/ is not committed)
 *
 * Each line is `{"name","description","category","sku","attributes"}` with, as attributes:
 * - `brand`: the product's `brand` field when its name starts with it ("Nike Running Shoes", brand
 *   Nike); otherwise (an empty field, or one that holds a fit or a colour, as "Regular" for
 *   "Wrangler Regular Fit Men's Jeans": the source's columns slipped there) the start of its name
 *   where that is a known brand (one that at least two products of the file name themselves with),
 *   in its most common spelling; otherwise none.
 * - `price` and `currency` ("INR"): the price the description states ("Price: Rs. 22,646"); when it
 *   states none, a made-up one, the same every run: 199 to 4,999 rupees from a hash of the sku.
 * - `in_stock`: made up from the same hash, true for about 85 % of the products.
 * - `subcategory`: the second level of the product's category path ("Women's Footwear").
 * Nothing is read or written but the two files; the same input gives the same output, byte for byte.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/** A product of the eval catalogue (its README's "Product fields"). */
export interface EvalProduct {
  id: number;
  sku: string;
  name: string;
  description: string;
  category: string;
  path: string;
  brand: string;
}

/** A product as `bun run cli import` reads it. */
export interface ShopProduct {
  name: string;
  description: string;
  category: string;
  sku: string;
  attributes: Record<string, string | number | boolean>;
}

/** How many products got each attribute, and from where (printed by the script). */
export interface DerivedCounts {
  products: number;
  brandFromField: number;
  brandFromName: number;
  priceFromDescription: number;
  priceMadeUp: number;
  inStock: number;
}

/** FNV-1a, 32 bits: a stable number from a text (the same sku gives the same made-up price every run). */
function hash(text: string): number {
  let value = 0x811c9dc5;
  for (const char of text) {
    value ^= char.codePointAt(0) ?? 0;
    value = Math.imul(value, 0x01000193) >>> 0;
  }
  return value;
}

/** The price a description states ("Price: Rs. 22,646", "Rs.499"), in rupees, or undefined. */
export function statedPrice(description: string): number | undefined {
  const match = /\bRs\.?\s*([\d,]+(?:\.\d+)?)/.exec(description);
  const price = match ? Number((match[1] as string).replaceAll(",", "")) : Number.NaN;
  return Number.isFinite(price) && price > 0 ? price : undefined;
}

/**
 * The brands products of the file name themselves with (their `brand` field is the start of their
 * name, at least twice), by their lower-case form, each in its most common spelling.
 */
function knownBrands(products: readonly EvalProduct[]): Map<string, string> {
  const spellings = new Map<string, Map<string, number>>();
  for (const { brand, name } of products) {
    if (brand === "" || !name.toLowerCase().startsWith(`${brand.toLowerCase()} `)) continue;
    const counts = spellings.get(brand.toLowerCase()) ?? new Map<string, number>();
    counts.set(brand, (counts.get(brand) ?? 0) + 1);
    spellings.set(brand.toLowerCase(), counts);
  }
  const known = new Map<string, string>();
  for (const [lower, counts] of spellings) {
    const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
    if (total < 2) continue;
    const [spelling] = [...counts].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1))[0] as [string, number];
    known.set(lower, spelling);
  }
  return known;
}

/** The known brand the name starts with (the longest, for "Allure Auto" and "Allure"), or undefined. */
function brandOfName(name: string, known: Map<string, string>): string | undefined {
  const words = name.toLowerCase().split(/\s+/);
  for (let length = Math.min(words.length - 1, 4); length >= 1; length--) {
    const brand = known.get(words.slice(0, length).join(" "));
    if (brand !== undefined) return brand;
  }
  return undefined;
}

/** The products with their derived attributes, in the same order, and what was derived from where. */
export function withAttributes(products: readonly EvalProduct[]): { items: ShopProduct[]; counts: DerivedCounts } {
  const known = knownBrands(products);
  const counts: DerivedCounts = {
    products: products.length,
    brandFromField: 0,
    brandFromName: 0,
    priceFromDescription: 0,
    priceMadeUp: 0,
    inStock: 0,
  };
  const items = products.map((product): ShopProduct => {
    const attributes: ShopProduct["attributes"] = {};
    const field = product.brand.trim();
    const fieldNamesIt = field !== "" && product.name.toLowerCase().startsWith(`${field.toLowerCase()} `);
    const brand = fieldNamesIt ? field : brandOfName(product.name, known);
    if (brand) {
      attributes.brand = brand;
      if (fieldNamesIt) counts.brandFromField++;
      else counts.brandFromName++;
    }
    const seed = hash(product.sku);
    const stated = statedPrice(product.description);
    if (stated !== undefined) counts.priceFromDescription++;
    else counts.priceMadeUp++;
    attributes.price = stated ?? 199 + (seed % 49) * 100;
    attributes.currency = "INR";
    attributes.in_stock = (seed >>> 8) % 100 < 85;
    if (attributes.in_stock) counts.inStock++;
    const subcategory = product.path.split(" > ")[1]?.trim();
    if (subcategory) attributes.subcategory = subcategory;
    return {
      name: product.name,
      description: product.description,
      category: product.category,
      sku: product.sku,
      attributes,
    };
  });
  return { items, counts };
}

/** The products of a JSON Lines file, gzip-compressed or not. */
export function readEvalProducts(path: string): EvalProduct[] {
  const bytes = readFileSync(path);
  const text = (path.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as EvalProduct);
}

if (import.meta.main) {
  const [input = "../shared/eval/products-all.jsonl.gz", output = "data/eval-with-attributes.jsonl"] =
    process.argv.slice(2);
  const { items, counts } = withAttributes(readEvalProducts(input));
  writeFileSync(output, items.map((item) => `${JSON.stringify(item)}\n`).join(""));
  console.error(
    `${output}: ${counts.products} products; brand from its field ${counts.brandFromField}, from its name ` +
      `${counts.brandFromName}, none ${counts.products - counts.brandFromField - counts.brandFromName}; price stated ` +
      `in the description ${counts.priceFromDescription}, made up ${counts.priceMadeUp}; in stock ${counts.inStock}`,
  );
}
