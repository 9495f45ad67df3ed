import type { Embedder } from "../ports/embedder.ts";
import type { EmbeddingSpace } from "../ports/embedding-space.ts";
import type { BulkWrite, BulkWriteOutcome, ProductCatalogues, ProductRepository } from "../ports/product-repository.ts";
import { type Attributes, sameAttributes } from "./attributes.ts";
import { callsAtOnce, embedAhead, embedMany } from "./embed.ts";
import { DatabaseReadOnly, DomainError, EmbeddingSpaceChanged } from "./errors.ts";
import {
  contentDigest,
  embeddingText,
  type NormalizedProduct,
  normalizeProduct,
  type ProductFields,
  type StoredProduct,
} from "./product.ts";
import type { Vector } from "./vector.ts";

export type ImportStatus = "created" | "updated" | "unchanged" | "failed";

export interface ImportItemResult {
  /** The item's position in the import, from 0. */
  index: number;
  status: ImportStatus;
  /** The product's id, when it exists (not for a failed item). */
  id?: number;
  sku?: string;
  /** Why the item failed (Spanish). */
  detail?: string;
}

export interface ImportReport {
  items: ImportItemResult[];
  counts: Record<ImportStatus, number>;
  /**
   * What stopped the import before its end (the embedder or the database failed for good): every
   * item not yet stored then is reported failed with its message. Absent when it ran to the end.
   */
  stoppedBy?: DomainError;
}

/** One item to import as it was read: a value to check, or why it could not even be read (Spanish). */
export type ImportInput = { value: unknown } | { problem: string };

/** A product to import, validated and normalised (`checkImportInput`). */
export type ImportProduct = NormalizedProduct;

/**
 * Writes a chunk's rows and returns the results of its items, which `resultsOf` makes from what
 * became of each row (in the rows' order). A chunk with nothing to write (all unchanged) comes too,
 * with no rows. A job records the results in the same transaction as the rows (import-jobs.ts).
 */
export type CommitChunk = (
  writes: readonly BulkWrite[],
  resultsOf: (outcomes: readonly BulkWriteOutcome[]) => ImportItemResult[],
) => Promise<ImportItemResult[]>;

export interface ImportOptions {
  /** The catalogue the products go into: skus are matched within it. */
  catalogue: string;
  /**
   * Items embedded and written together (default 512): a provider outage fails only the chunks not
   * yet stored. A function is asked for each chunk's size as that chunk is cut (a job sizes its
   * chunks by the pace it measures).
   */
  chunkSize?: number | (() => number);
  /** Aborts (with the reason to throw) when the caller stops waiting: chunks not yet written are not written. */
  signal?: AbortSignal;
  /** Called after each chunk is written, with the results so far. */
  onChunk?: (results: readonly ImportItemResult[]) => void;
  /**
   * The vector space the items' `embedding` fields were made in, and the attributes embedded with
   * their texts: a catalogue export's header says them. When they are the embedder's and the
   * catalogue's (takesEmbeddingsOf), an item's embedding is stored as it is (checked like any
   * embedding) instead of embedding its text; otherwise the field is ignored and the text embedded.
   * Absent (POST /products/bulk, an ordinary file): an item with an `embedding` is refused.
   */
  embeddings?: ExportedEmbeddings;
  /** Where each chunk is written (default: the repository's writeMany). */
  commit?: CommitChunk;
}

/** What a catalogue export's embeddings were made of: their space, and the attributes embedded with each text (none when not said). */
export interface ExportedEmbeddings extends EmbeddingSpace {
  embeddedAttributes?: readonly string[];
}

export interface Deps {
  products: ProductCatalogues;
  /** Embeds product texts (documents). */
  embedder: Embedder;
  /** Receives one `import_items` event per outcome of each import: `{outcome, count}`. */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * Fields an import item must not have, unless the import is of a catalogue export whose
 * embeddings are in the embedder's space (ImportOptions.embeddings). Any other field besides name,
 * description, category, sku and attributes (a catalogue export's own id, path, brand...) is ignored:
 * it is not stored. An item is the product's whole new state: without `attributes`, it has none.
 */
const REFUSED_FIELDS = ["embedding"];

/** What an import does with an item's `embedding` field. */
type EmbeddingField = "refuse" | "take" | "ignore";

const DEFAULT_CHUNK_SIZE = 512;

/** An item that passed validation, waiting for its chunk. */
interface ValidItem {
  index: number;
  product: ImportProduct;
  /** The embedding the item came with (a catalogue export's, in the embedder's space): stored instead of embedding its text. */
  embedding?: Vector;
  /** The item of the same sku just before this one in the import, if any. */
  previous?: ValidItem;
}

/** The items of the import with this item's sku, up to and including it, in their order. */
function sameSku(item: ValidItem): ValidItem[] {
  const chain: ValidItem[] = [];
  for (let link: ValidItem | undefined = item; link; link = link.previous) chain.push(link);
  return chain.reverse();
}

/**
 * ImportProducts: validates every item first and reports each invalid one by position (fields other
 * than the product's are ignored, but an embedding is refused: the service computes it); stores the
 * valid ones in chunks. An item with a sku is upserted by it: unchanged fields are `unchanged` (no
 * write), changed ones `updated`, and only a changed embedded text (name, category, description and
 * the attributes the catalogue embeds) is embedded again. Texts
 * are embedded a chunk at a time (the embedder batches them within its provider's limits) and each
 * chunk is written in a few statements. When the embedder fails (after its own retries), the
 * chunks already written stay and every item not yet written is reported failed, saying why. The
 * next chunk is embedded while the current one is written (the next few with a remote provider:
 * Embedder.callsAtOnce).
 *
 * A sku repeated in one import is an update, the later item winning: only the last item of a sku
 * is embedded and written, and every item of that sku is reported with it, as if
 * each had been written in turn: the first `created` (or compared with the stored product), each
 * later one `updated`, or `unchanged` when its fields are those of the item before it. So a
 * repeated sku costs no extra statement or embedding, and nothing is written twice in one chunk.
 *
 * A catalogue export restores without embedding anything when its embeddings are of the
 * embedder's model and dimension (ImportOptions.embeddings): each item's vector is checked (its
 * length, finite, not all zeros) and stored as the embedding of its text.
 */
export class ImportProducts {
  constructor(private readonly deps: Deps) {}

  /** The vector space of the embeddings it stores: the embedder's. */
  get space(): EmbeddingSpace {
    return { model: this.deps.embedder.model, dimension: this.deps.embedder.dimension };
  }

  /**
   * Whether embeddings made in `made.space` from texts with `made.embeddedAttributes` are stored as
   * they are in `catalogue` (else the texts are embedded again): the same space, and the same
   * embedded attributes as the catalogue's (the vectors are of the texts that setting gives).
   */
  async takesEmbeddingsOf(made: ExportedEmbeddings, catalogue: string): Promise<boolean> {
    if (made.model !== this.space.model || made.dimension !== this.space.dimension) return false;
    const embedded = await this.deps.products.in(catalogue).embeddedAttributes();
    return sameKeys(embedded, made.embeddedAttributes ?? []);
  }

  async execute(items: readonly ImportInput[], options: ImportOptions): Promise<ImportReport> {
    const products = this.deps.products.in(options.catalogue);
    const results: (ImportItemResult | undefined)[] = new Array(items.length);
    const valid: ValidItem[] = [];
    const lastWithSku = new Map<string, ValidItem>();
    const embeddingField: EmbeddingField =
      options.embeddings === undefined
        ? "refuse"
        : (await this.takesEmbeddingsOf(options.embeddings, options.catalogue))
          ? "take"
          : "ignore";
    for (const [index, item] of items.entries()) {
      const checked = "problem" in item ? item : checkItem(item.value, embeddingField, this.deps.embedder.dimension);
      if ("problem" in checked) {
        results[index] = { index, status: "failed", detail: checked.problem };
        continue;
      }
      const sku = checked.product.sku;
      const previous = sku === undefined ? undefined : lastWithSku.get(sku);
      const validItem: ValidItem = {
        index,
        product: checked.product,
        ...(checked.embedding ? { embedding: checked.embedding } : {}),
        ...(previous ? { previous } : {}),
      };
      if (sku !== undefined) lastWithSku.set(sku, validItem);
      valid.push(validItem);
    }
    // Only the last item of a sku is written: the ones before it are accounted for with it.
    const toWrite = valid.filter(
      (item) => item.product.sku === undefined || lastWithSku.get(item.product.sku) === item,
    );

    const sizeOfChunk = typeof options.chunkSize === "function" ? options.chunkSize : () => options.chunkSize;
    /** Where the next chunk starts in toWrite; each chunk is cut as it is about to be embedded. */
    let cut = 0;
    const nextChunk = (): { start: number; items: ValidItem[] } | undefined => {
      if (cut >= toWrite.length) return undefined;
      const size = Math.max(1, Math.floor((sizeOfChunk() as number | undefined) ?? DEFAULT_CHUNK_SIZE));
      const chunk = { start: cut, items: toWrite.slice(cut, cut + size) };
      cut += chunk.items.length;
      return chunk;
    };
    const record = (outcomes: ImportItemResult[]) => {
      for (const outcome of outcomes) results[outcome.index] = outcome;
    };
    const commit: CommitChunk =
      options.commit ??
      (async (writes, resultsOf) => resultsOf(writes.length === 0 ? [] : await products.writeMany(writes)));
    let stoppedBy: DomainError | undefined;

    async function* chunks() {
      for (let chunk = nextChunk(); chunk; chunk = nextChunk()) yield chunk;
    }
    /** Where the first chunk not written yet starts in toWrite. */
    let unwritten = 0;
    try {
      // Chunks are embedded ahead of the one written: the embedder's callsAtOnce of them (one for a
      // local model, a few for a remote provider, whose calls wait on the network). Written one
      // after another, so a failure leaves every later chunk unwritten.
      await embedAhead(
        chunks(),
        callsAtOnce(this.deps.embedder),
        (chunk) => this.prepare(products, chunk.items, options.signal),
        async (chunk, prepared) => {
          options.signal?.throwIfAborted();
          record(await this.write(prepared, commit));
          unwritten = chunk.start + chunk.items.length;
          options.onChunk?.(results.filter((result): result is ImportItemResult => result !== undefined));
        },
      );
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (!(error instanceof DomainError)) throw error;
      // A database that takes no writes (a standby), or a catalogue moved to another embedding
      // model, before anything was written: the request itself is refused (503), as every other write is.
      if ((error instanceof DatabaseReadOnly || error instanceof EmbeddingSpaceChanged) && unwritten === 0) throw error;
      // The embedder or the database failed: nothing of this chunk or any later one was written.
      stoppedBy = error;
      const detail = `No se guardó: ${error.message}`;
      record(
        toWrite
          .slice(unwritten)
          .flatMap(sameSku)
          .map((item) => failed(item.index, item.product.sku, detail)),
      );
    }

    const finalResults = results.map((result, index) => result ?? failed(index, undefined, "No se procesó"));
    const counts: Record<ImportStatus, number> = { created: 0, updated: 0, unchanged: 0, failed: 0 };
    for (const result of finalResults) counts[result.status]++;
    for (const [outcome, count] of Object.entries(counts)) {
      if (count > 0) this.deps.log?.({ event: "import_items", outcome, count });
    }
    return { items: finalResults, counts, ...(stoppedBy ? { stoppedBy } : {}) };
  }

  /** What each item of a chunk needs: nothing (unchanged), a write, and an embedding when its text changed. */
  private async prepare(
    products: ProductRepository,
    chunk: readonly ValidItem[],
    signal: AbortSignal | undefined,
  ): Promise<PreparedChunk> {
    const skus = chunk.flatMap((item) => (item.product.sku === undefined ? [] : [item.product.sku]));
    const existing = new Map<string, StoredProduct>();
    if (skus.length > 0) {
      for (const product of await products.findBySkus(skus)) existing.set(product.sku as string, product);
    }
    const embedded = await products.embeddedAttributes();
    const plans = await Promise.all(
      chunk.map(async (item): Promise<Plan> => {
        const current = item.product.sku === undefined ? undefined : existing.get(item.product.sku);
        const digest = await contentDigest(item.product, embedded);
        // A stored product whose digest is not that of its own text was embedded from another form
        // of it (before the category was part of the embedded text, or before its catalogue's
        // embedded attributes changed): embedded again.
        const currentStale =
          current !== undefined && current.contentDigest !== (await contentDigest(current, embedded));
        if (current && sameFields(current, item.product) && !currentStale) {
          return { item, current, currentStale, digest, kind: "unchanged" };
        }
        return {
          item,
          current,
          currentStale,
          digest,
          kind: current ? "update" : "insert",
          embed: current?.contentDigest !== digest,
        };
      }),
    );
    const needed = plans.filter((plan) => plan.kind !== "unchanged" && plan.embed);
    const vectorOf = new Map<Plan, Vector>();
    for (const plan of needed) if (plan.item.embedding) vectorOf.set(plan, plan.item.embedding);
    const toEmbed = needed.filter((plan) => !vectorOf.has(plan));
    // No call at all when nothing is to be embedded: the offline model would be loaded for nothing.
    const vectors =
      toEmbed.length === 0
        ? []
        : await embedMany(
            this.deps.embedder,
            toEmbed.map((plan) => embeddingText(plan.item.product, embedded)),
            "document",
            signal,
          );
    for (const [i, plan] of toEmbed.entries()) vectorOf.set(plan, vectors[i] as Vector);
    return { plans, vectorOf };
  }

  private async write({ plans, vectorOf }: PreparedChunk, commit: CommitChunk): Promise<ImportItemResult[]> {
    const writes: { plan: Plan; write: BulkWrite }[] = [];
    const unchanged: ImportItemResult[] = [];
    for (const plan of plans) {
      const { item, current, digest } = plan;
      if (plan.kind === "unchanged") {
        unchanged.push(...results(plan, current?.id));
        continue;
      }
      const vector = vectorOf.get(plan);
      if (plan.kind === "insert") {
        writes.push({
          plan,
          write: { kind: "insert", row: { product: item.product, embedding: vector as Vector, contentDigest: digest } },
        });
      } else {
        const stored = current as StoredProduct;
        writes.push({
          plan,
          write: {
            kind: "update",
            id: stored.id,
            expectedVersion: stored.version,
            update: { fields: item.product, ...(vector ? { embedding: { vector, contentDigest: digest } } : {}) },
          },
        });
      }
    }
    return commit(
      writes.map(({ write }) => write),
      (written) => [...unchanged, ...writes.flatMap(({ plan }, i) => outcomesOf(plan, written[i] as BulkWriteOutcome))],
    );
  }
}

interface Plan {
  item: ValidItem;
  current: StoredProduct | undefined;
  /** The stored product's vector was made from another text than its fields' (its digest differs). */
  currentStale: boolean;
  digest: string;
  kind: "insert" | "update" | "unchanged";
  embed?: boolean;
}

interface PreparedChunk {
  plans: Plan[];
  vectorOf: Map<Plan, Vector>;
}

/** The results of the items a written plan stands for (its item and the earlier ones of its sku). */
function outcomesOf(plan: Plan, outcome: BulkWriteOutcome): ImportItemResult[] {
  if ("written" in outcome) return results(plan, outcome.written.id);
  const detail =
    outcome.raced === "skuTaken"
      ? "Otra petición creó a la vez un producto con este SKU; vuelva a importarlo"
      : outcome.raced === "missing"
        ? "El producto de este SKU se borró durante la importación; vuelva a importarlo"
        : "El producto de este SKU cambió durante la importación; vuelva a importarlo";
  return sameSku(plan.item).map((item) => failed(item.index, item.product.sku, detail));
}

/**
 * The results of the items of the plan's sku once it is stored, each as if written in turn: created
 * when there was no product yet, unchanged when its fields are those of the one before it (the
 * stored product, or the import's previous item of that sku), updated otherwise (a stored product
 * embedded again from its own text, its digest stale, is updated too).
 */
function results(plan: Plan, id: number | undefined): ImportItemResult[] {
  let before: FieldsAndAttributes | undefined = plan.current;
  return sameSku(plan.item).map((item) => {
    const same = before !== undefined && sameFields(before, item.product);
    const unchanged = same && !(before === plan.current && plan.currentStale);
    const status = before === undefined ? "created" : unchanged ? "unchanged" : "updated";
    before = item.product;
    return {
      index: item.index,
      status,
      ...(id === undefined ? {} : { id }),
      ...(item.product.sku === undefined ? {} : { sku: item.product.sku }),
    };
  });
}

function failed(index: number, sku: string | undefined, detail: string): ImportItemResult {
  return { index, status: "failed", ...(sku === undefined ? {} : { sku }), detail };
}

type FieldsAndAttributes = ProductFields & { attributes?: Attributes | undefined };

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((key, i) => key === b[i]);
}

function sameFields(current: FieldsAndAttributes, product: FieldsAndAttributes): boolean {
  return (
    current.name === product.name &&
    current.description === product.description &&
    current.category === product.category &&
    sameAttributes(current.attributes, product.attributes)
  );
}

/**
 * The item of an ordinary import (no embeddings taken: an `embedding` field is refused) as a valid
 * product, normalised, or why it is not one (a Spanish sentence naming the field).
 */
export function checkImportInput(input: ImportInput): { product: ImportProduct } | { problem: string } {
  return "problem" in input ? input : checkItem(input.value, "refuse", 0);
}

/**
 * The item as a valid product (with its embedding when `embeddingField` is "take" and it has one),
 * or why it is not one (a Spanish sentence naming the field).
 */
function checkItem(
  item: unknown,
  embeddingField: EmbeddingField,
  dimension: number,
): { product: ImportProduct; embedding?: Vector } | { problem: string } {
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    return { problem: "Cada elemento debe ser un objeto con name, description, category y, opcionalmente, sku" };
  }
  const fields = item as Record<string, unknown>;
  const refused = REFUSED_FIELDS.find((key) => Object.hasOwn(fields, key));
  if (refused !== undefined && embeddingField === "refuse") return { problem: `Campo '${refused}': no está permitido` };
  let embedding: Vector | undefined;
  if (embeddingField === "take" && fields.embedding !== undefined) {
    const problem = embeddingProblem(fields.embedding, dimension);
    if (problem) return { problem: `Campo 'embedding': ${problem}` };
    embedding = fields.embedding as Vector;
  }
  for (const field of ["name", "description", "category"] as const) {
    if (fields[field] === undefined) return { problem: `Campo '${field}': es obligatorio` };
    if (typeof fields[field] !== "string") return { problem: `Campo '${field}': debe ser un texto` };
  }
  if (fields.sku !== undefined && fields.sku !== null && typeof fields.sku !== "string") {
    return { problem: "Campo 'sku': debe ser un texto" };
  }
  try {
    return {
      product: normalizeProduct({
        name: fields.name as string,
        description: fields.description as string,
        category: fields.category as string,
        sku: fields.sku as string | null | undefined,
        attributes: fields.attributes as Readonly<Record<string, unknown>> | null | undefined,
      }),
      ...(embedding ? { embedding } : {}),
    };
  } catch (error) {
    if (error instanceof DomainError) return { problem: error.message };
    throw error;
  }
}

/** Why a given embedding cannot be stored (Spanish), or null: the checks every computed embedding passes (embed.ts). */
function embeddingProblem(value: unknown, dimension: number): string | null {
  if (!Array.isArray(value) || !value.every((component) => typeof component === "number")) {
    return "debe ser una lista de números";
  }
  if (value.length !== dimension) return `debe tener ${dimension} números, tiene ${value.length}`;
  const infinite = value.findIndex((component) => !Number.isFinite(component));
  if (infinite >= 0) return `el número ${infinite} no es finito`; // JSON reads 1e999 as Infinity
  return value.some((component) => component !== 0) ? null : "es un vector de ceros, que no tiene dirección";
}
