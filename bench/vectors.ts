/**
 * Synthetic, repeatable, "embedding-like" vectors for the benchmark scripts (search.ts, index.ts).
 *
 * Unit vectors around Gaussian cluster centres (one per category, one per second level of the
 * category path, plus a direction all of them share, as real sentence embeddings have), from a
 * seeded PRNG, so every run makes the same rows. The real model is far too slow to embed 100k
 * texts for a latency bench. The names, descriptions and categories are the real ones of
 * ../shared/eval/products-all.jsonl.gz (read where it is, never copied here), so rows have
 * realistic text sizes; row numbers past the file's length reuse its texts.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { contentDigest } from "../src/domain/product.ts";
import type { BulkWrite } from "../src/ports/product-repository.ts";

export const DEFAULT_PRODUCTS_FILE = resolve(import.meta.dir, "../../shared/eval/products-all.jsonl.gz");

export interface CatalogueProduct {
  name: string;
  description: string;
  category: string;
  /** Cluster keys: the category, and the first two levels of its path. */
  keys: [string, string];
}

export function loadCatalogue(file: string = DEFAULT_PRODUCTS_FILE): CatalogueProduct[] {
  return gunzipSync(readFileSync(file))
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const p = JSON.parse(line) as { name: string; description: string; category: string; path?: string };
      const path = p.path ?? p.category;
      return {
        name: p.name,
        // Most rows of the file have no description; the service requires one, so they get their path.
        description: p.description || path,
        category: p.category,
        keys: [p.category, path.split(" > ").slice(0, 2).join(" > ")],
      };
    });
}

/** FNV-1a: a 32-bit seed from a label, so each row's vector depends only on (dimension, row). */
export function seedOf(label: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) hash = Math.imul(hash ^ label.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** Standard normal numbers from mulberry32 through Box–Muller. */
export function gaussians(label: string): () => number {
  let state = seedOf(label);
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 1) / 4294967297; // in (0, 1)
  };
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const value = spare;
      spare = undefined;
      return value;
    }
    const r = Math.sqrt(-2 * Math.log(uniform()));
    const theta = 2 * Math.PI * uniform();
    spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  };
}

export function normalize(v: Float64Array): Float64Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / norm;
  return v;
}

/**
 * Weights of the shared direction, the category centre, the sub-category centre and the noise.
 * With them, two products of one sub-category have cosine ≈ 0.53, of one category ≈ 0.26, of
 * different categories ≈ 0.08: about what a sentence-embedding model gives.
 */
const WEIGHTS = { shared: 0.3, category: 0.45, sub: 0.55, noise: 0.72 };
/** Queries are short texts: further from their cluster than products are. */
const QUERY_NOISE = 1.1;
/** How much further from their sub-category than products queryLowRank's queries are. */
const QUERY_SPREAD = 1.3;

/** Shared directions of productLowRank, and how many of them each sub-category varies along. */
const TOPICS = 256;
const TOPICS_PER_SUB = 16;

/** Standard normal numbers for productLowRank's isotropic part (a power of two long). */
const NOISE_BANK = (() => {
  const gauss = gaussians("noise bank");
  return Float64Array.from({ length: 1 << 16 }, gauss);
})();

export class SyntheticSpace {
  private readonly centres = new Map<string, Float64Array>();

  constructor(
    readonly catalogue: readonly CatalogueProduct[],
    readonly dimension: number,
  ) {}

  /** The catalogue text of row `row` (0-based). */
  text(row: number): CatalogueProduct {
    return this.catalogue[row % this.catalogue.length] as CatalogueProduct;
  }

  private centre(key: string): Float64Array {
    let centre = this.centres.get(key);
    if (!centre) {
      const gauss = gaussians(`centre:${this.dimension}:${key}`);
      centre = normalize(Float64Array.from({ length: this.dimension }, gauss));
      this.centres.set(key, centre);
    }
    return centre;
  }

  private around(keys: readonly [string, string], label: string, noise: number): Float64Array {
    const [shared, category, sub] = [this.centre("*"), this.centre(keys[0]), this.centre(keys[1])];
    const gauss = gaussians(label);
    const scale = noise / Math.sqrt(this.dimension);
    const v = new Float64Array(this.dimension);
    for (let j = 0; j < v.length; j++) {
      v[j] =
        WEIGHTS.shared * (shared[j] as number) +
        WEIGHTS.category * (category[j] as number) +
        WEIGHTS.sub * (sub[j] as number) +
        scale * gauss();
    }
    return normalize(v);
  }

  /** The embedding of catalogue row `row` (0-based): the same in every run. */
  product(row: number): Float64Array {
    return this.around(this.text(row).keys, `product:${this.dimension}:${row}`, WEIGHTS.noise);
  }

  /**
   * For the fake provider of bench/scale.ts (it must be cheap: the service is measured on the same
   * CPU): like product(row), but where product(row) adds isotropic noise in all `dimension`
   * directions (every product of a sub-category then lies about as far from every other, a
   * neighbour profile far flatter than a sentence model's), this one varies along TOPICS shared
   * directions, 16 of them per sub-category, plus a little isotropic noise read from a bank: text
   * embeddings have a low intrinsic dimension. Distinct rows get distinct vectors.
   * `spread` > 1 makes a query near the row's sub-category instead (further from it).
   */
  productLowRank(row: number, spread = 1, label = `row:${row}`): Float64Array {
    const keys = this.text(row).keys;
    const [shared, category, sub] = [this.centre("*"), this.centre(keys[0]), this.centre(keys[1])];
    const topics = this.topics();
    const first = seedOf(`topics:${keys[1]}`);
    const coefficient = gaussians(label);
    const mix = new Float64Array(this.dimension);
    for (let k = 0; k < TOPICS_PER_SUB; k++) {
      const topic = topics[(first + k * 37) % TOPICS] as Float64Array;
      const c = (coefficient() * WEIGHTS.noise) / Math.sqrt(TOPICS_PER_SUB);
      for (let j = 0; j < mix.length; j++) mix[j] = (mix[j] as number) + c * (topic[j] as number);
    }
    const mask = NOISE_BANK.length - 1;
    const offset = seedOf(`offset:${label}`) & mask;
    const stride = (seedOf(`stride:${label}`) & mask) | 1;
    const isotropic = (0.25 * spread) / Math.sqrt(this.dimension);
    const v = new Float64Array(this.dimension);
    for (let j = 0; j < v.length; j++) {
      v[j] =
        WEIGHTS.shared * (shared[j] as number) +
        WEIGHTS.category * (category[j] as number) +
        WEIGHTS.sub * (sub[j] as number) +
        spread * (mix[j] as number) +
        isotropic * (NOISE_BANK[(offset + j * stride) & mask] as number);
    }
    return normalize(v);
  }

  private topicVectors: Float64Array[] | undefined;
  private topics(): Float64Array[] {
    this.topicVectors ??= Array.from({ length: TOPICS }, (_, t) =>
      normalize(Float64Array.from({ length: this.dimension }, gaussians(`topic:${this.dimension}:${t}`))),
    );
    return this.topicVectors;
  }

  /** Query `i`: near the cluster of a product picked by the seed, the same in every run and at every size. */
  query(i: number): number[] {
    return this.queryNear(seedOf(`pick:${i}`) % this.catalogue.length, `query:${this.dimension}:${i}`);
  }

  /**
   * A query like the products of catalogue row `row` (low rank, as sentence embeddings are), further
   * from its sub-category than they are (a short text): the queries of bench:scale and
   * bench/catalogues, whose recall figures are compared.
   */
  queryLowRank(row: number, label: string): number[] {
    return Array.from(this.productLowRank(row, QUERY_SPREAD, label));
  }

  /** A query near the clusters of catalogue row `row`, its noise seeded by `label`. */
  queryNear(row: number, label: string): number[] {
    return Array.from(this.around(this.text(row).keys, label, QUERY_NOISE));
  }
}

/** Row `row` of `space` as a product's fields, named `<text> #<row>` so that each is distinct. */
export function syntheticProduct(
  space: SyntheticSpace,
  row: number,
): { name: string; description: string; category: string } {
  const text = space.text(row);
  return { name: `${text.name} #${row}`, description: text.description, category: text.category };
}

/**
 * Products [first, first + count) of `space` (syntheticProduct) as the repository's inserts, embedded
 * (their clustered vectors) and digested as the service writes them.
 */
export function embeddedInserts(space: SyntheticSpace, first: number, count: number): Promise<BulkWrite[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i): Promise<BulkWrite> => {
      const product = syntheticProduct(space, first + i);
      return {
        kind: "insert",
        row: {
          product,
          embedding: Array.from(space.productLowRank(first + i)),
          contentDigest: await contentDigest(product, []),
        },
      };
    }),
  );
}
