import type { Attributes } from "../domain/attributes.ts";
import type { Vector } from "../domain/vector.ts";

/** The vector space stored embeddings live in: the model that made them and their length. */
export interface EmbeddingSpace {
  model: string;
  dimension: number;
}

/**
 * What re-embedding reads of a product: its id and what its embedding is computed from (domain/product.ts
 * embeddingText): its fields, its attributes and the ones its catalogue embeds.
 */
export interface ProductText {
  id: number;
  name: string;
  category: string;
  description: string;
  attributes?: Attributes;
  /** Its catalogue's setting `embedded_attributes` (none by default). */
  embeddedAttributes: readonly string[];
  /**
   * Digest of that text as it is now (domain/product.ts contentDigest): a staged vector counts only
   * for the digest it was made from, and becomes the product's stored digest at the switch.
   */
  contentDigest: string;
}

/** A new vector for a product, made from the text whose digest it carries. */
export interface StagedVector {
  id: number;
  contentDigest: string;
  vector: Vector;
}

/**
 * Where the catalogue's embeddings can be rebuilt in another vector space without touching the live
 * ones: new vectors are staged beside them, search never reads the staged ones, and one atomic switch
 * makes them the embeddings. A staging survives the process (an interrupted re-embed resumes it).
 */
export interface EmbeddingSpaceStore {
  /** The space the live embeddings are in. */
  current(): Promise<EmbeddingSpace>;
  /**
   * Starts staging vectors of `space`, or resumes the staging already begun for that same space
   * (one for another space is discarded). Returns how many products it already holds a current
   * vector for, and how many products there are.
   */
  beginStaging(space: EmbeddingSpace): Promise<{ staged: number; total: number }>;
  /**
   * Up to `limit` products, by id after `afterId`, with no staged vector for their current text
   * (never staged, or changed since).
   */
  unstaged(afterId: number, limit: number): Promise<ProductText[]>;
  stage(vectors: readonly StagedVector[]): Promise<void>;
  /**
   * Makes the staged vectors the live embeddings and `space` the live space, atomically: while
   * writes are held, the products still without a current staged vector (written meanwhile) get
   * theirs from `embedRest` first. If anything fails, nothing changes (the staging stays).
   * Returns how many products the catalogue holds in the new space.
   */
  switchTo(
    space: EmbeddingSpace,
    embedRest: (products: readonly ProductText[]) => Promise<Vector[]>,
  ): Promise<{ products: number }>;
  /** Drops the staging and its vectors. */
  abandonStaging(): Promise<void>;
}
