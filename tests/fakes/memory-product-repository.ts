import { type AttributeCondition, meetsConditions } from "../../src/domain/attribute-filter.ts";
import { CatalogueNotFound, DatabaseUnavailable } from "../../src/domain/errors.ts";
import { publicView } from "../../src/domain/manage-products.ts";
import type { HybridCandidate, Product, StoredProduct, VersionedHit } from "../../src/domain/product.ts";
import { type Vector, vectorProblem } from "../../src/domain/vector.ts";
import type { CatalogueRepository, CatalogueSummary } from "../../src/ports/catalogue-repository.ts";
import type {
  AddResult,
  BulkWrite,
  BulkWriteOutcome,
  EmbeddedProduct,
  ExportedProduct,
  HybridQuery,
  IdempotencyRecord,
  IdempotentAnswer,
  LexicalQuery,
  ListQuery,
  ProductCatalogues,
  ProductPage,
  ProductRepository,
  ProductUpdate,
  SearchQuery,
  UpdateResult,
} from "../../src/ports/product-repository.ts";

interface Row {
  catalogue: string;
  product: StoredProduct;
  embedding: Vector;
}

/**
 * Every catalogue's products in memory (ProductCatalogues), and the catalogues themselves
 * (CatalogueRepository: `default` exists from the start), searched by cosine similarity computed
 * here. Like the database, it rejects a zero, non-finite or (when `dimension` is given)
 * wrong-length vector, keeps ids unique across catalogues and skus unique within one, and a
 * catalogue's repository (`in`) sees nothing of another; one of a catalogue that does not exist
 * throws CatalogueNotFound. Set `down` to make every call fail with DatabaseUnavailable. Every
 * method checks and writes with no await in between, so concurrent calls behave as the database's
 * transactions do.
 */
export class MemoryProductRepository implements ProductCatalogues, CatalogueRepository {
  down = false;
  readonly rows = new Map<number, Row>();
  nextId = 1;
  readonly idempotencyKeys = new Map<string, IdempotentAnswer & { createdAt: number }>();
  private readonly catalogues = new Map<string, { createdAt: Date; embeddedAttributes: string[] }>([
    ["default", { createdAt: new Date(0), embeddedAttributes: [] }],
  ]);

  constructor(
    readonly dimension?: number,
    /** Milliseconds since the epoch, for the age of idempotency keys. */
    readonly now: () => number = Date.now,
  ) {}

  private readonly views = new Map<string, MemoryCatalogueProducts>();

  /** The catalogue's repository: the same object each time, so a test may replace one of its methods. */
  in(catalogue: string): MemoryCatalogueProducts {
    let view = this.views.get(catalogue);
    if (!view) {
      view = new MemoryCatalogueProducts(this, catalogue);
      this.views.set(catalogue, view);
    }
    return view;
  }

  /** The stored products of every catalogue, in id order (for assertions). */
  get products(): Product[] {
    return [...this.rows.values()].map((row) => publicView(row.product));
  }

  /** A product's embedding (for assertions). */
  embeddingOf(id: number): Vector | undefined {
    const row = this.rows.get(id);
    return row ? [...row.embedding] : undefined;
  }

  /** Throws CatalogueNotFound unless the catalogue exists, and DatabaseUnavailable when `down`. */
  enter(catalogue: string): void {
    this.checkUp();
    if (!this.catalogues.has(catalogue)) throw new CatalogueNotFound(catalogue);
  }

  checkUp(): void {
    if (this.down) throw new DatabaseUnavailable();
  }

  async create(name: string): Promise<boolean> {
    this.checkUp();
    if (this.catalogues.has(name)) return false;
    this.catalogues.set(name, { createdAt: new Date(this.now()), embeddedAttributes: [] });
    return true;
  }

  async list(): Promise<CatalogueSummary[]> {
    this.checkUp();
    return [...this.catalogues]
      .map(([name, { createdAt, embeddedAttributes }]) => ({
        name,
        createdAt,
        products: [...this.rows.values()].filter((row) => row.catalogue === name).length,
        embeddedAttributes: [...embeddedAttributes],
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async names(): Promise<string[]> {
    this.checkUp();
    return [...this.catalogues.keys()].sort();
  }

  async remove(name: string): Promise<boolean> {
    this.checkUp();
    if (!this.catalogues.delete(name)) return false;
    for (const [id, row] of this.rows) if (row.catalogue === name) this.rows.delete(id);
    return true;
  }

  async exists(name: string): Promise<boolean> {
    this.checkUp();
    return this.catalogues.has(name);
  }

  async setEmbeddedAttributes(name: string, keys: readonly string[]): Promise<boolean> {
    this.checkUp();
    const catalogue = this.catalogues.get(name);
    if (!catalogue) return false;
    catalogue.embeddedAttributes = [...keys];
    return true;
  }

  /** The catalogue's embedded attributes (the catalogue must exist: `enter` first). */
  embeddedAttributesOf(name: string): string[] {
    return [...(this.catalogues.get(name)?.embeddedAttributes ?? [])];
  }
}

/** One catalogue's products in a MemoryProductRepository. */
export class MemoryCatalogueProducts implements ProductRepository {
  private readonly rows: Map<number, Row>;
  private readonly idempotencyKeys: Map<string, IdempotentAnswer & { createdAt: number }>;
  private readonly dimension: number | undefined;
  private readonly now: () => number;

  constructor(
    private readonly store: MemoryProductRepository,
    readonly catalogue: string,
  ) {
    ({ idempotencyKeys: this.idempotencyKeys, dimension: this.dimension, now: this.now } = store);
    // Only this catalogue's rows are ever looked at (a view kept in step with the store's).
    this.rows = new CatalogueRows(store.rows, catalogue);
  }

  async add(row: EmbeddedProduct, idempotency?: IdempotencyRecord): Promise<AddResult> {
    this.checkUp();
    this.checkVector(row.embedding);
    if (idempotency) {
      const earlier = this.idempotentAnswer(idempotency.owner, idempotency.key, idempotency.ttlHours);
      if (earlier) return { alreadyAnswered: earlier };
    }
    if (row.product.sku !== undefined && this.idOfSku(row.product.sku) !== undefined) {
      return { skuTaken: row.product.sku };
    }
    const created = publicView(this.insert(row));
    if (idempotency) {
      this.idempotencyKeys.set(keyOf(idempotency.owner, idempotency.key), {
        fingerprint: idempotency.fingerprint,
        product: { ...created },
        createdAt: this.now(),
      });
    }
    return { created };
  }

  async findIdempotentAnswer(owner: string, key: string, ttlHours: number): Promise<IdempotentAnswer | null> {
    this.checkUp();
    return this.idempotentAnswer(owner, key, ttlHours);
  }

  async pruneIdempotencyKeys(ttlHours: number): Promise<number> {
    this.checkUp();
    let pruned = 0;
    for (const [id, record] of this.idempotencyKeys) {
      if (this.now() - record.createdAt >= ttlHours * HOUR) {
        this.idempotencyKeys.delete(id);
        pruned++;
      }
    }
    return pruned;
  }

  async get(id: number): Promise<StoredProduct | null> {
    this.checkUp();
    const row = this.rows.get(id);
    return row ? { ...row.product } : null;
  }

  async list(query: ListQuery): Promise<ProductPage> {
    this.checkUp();
    const matching = [...this.rows.values()]
      .map((row) => row.product)
      .filter((product) => passes(product, query))
      .sort((a, b) => (query.order === "newest" ? b.id - a.id : a.id - b.id));
    const after = query.after;
    const rest =
      after === undefined
        ? matching
        : matching.filter((product) => (query.order === "newest" ? product.id < after : product.id > after));
    return {
      items: rest.slice(0, query.limit).map(publicView),
      total: matching.length,
      more: rest.length > query.limit,
    };
  }

  async update(id: number, expectedVersion: number, update: ProductUpdate): Promise<UpdateResult> {
    this.checkUp();
    const row = this.rows.get(id);
    if (!row) return { missing: true };
    if (row.product.version !== expectedVersion) return { conflict: true };
    const sku = update.fields.sku;
    if (sku !== undefined) {
      const holder = this.idOfSku(sku);
      if (holder !== undefined && holder !== id) return { skuTaken: sku };
    }
    if (update.embedding) this.checkVector(update.embedding.vector);
    return { updated: { ...this.apply(row, update) } };
  }

  async remove(id: number): Promise<boolean> {
    this.checkUp();
    return this.rows.delete(id);
  }

  async categories(): Promise<{ name: string; products: number }[]> {
    this.checkUp();
    const counts = new Map<string, number>();
    for (const { product } of this.rows.values()) counts.set(product.category, (counts.get(product.category) ?? 0) + 1);
    return [...counts]
      .map(([name, products]) => ({ name, products }))
      .sort((a, b) => b.products - a.products || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async productsAfter(
    afterId: number,
    limit: number,
    { withEmbeddings }: { withEmbeddings: boolean },
  ): Promise<ExportedProduct[]> {
    this.checkUp();
    return [...this.rows.values()]
      .filter((row) => row.product.id > afterId)
      .sort((a, b) => a.product.id - b.product.id)
      .slice(0, limit)
      .map((row) => ({ ...publicView(row.product), ...(withEmbeddings ? { embedding: [...row.embedding] } : {}) }));
  }

  async storedAfter(afterId: number, limit: number): Promise<StoredProduct[]> {
    this.checkUp();
    return [...this.rows.values()]
      .filter((row) => row.product.id > afterId)
      .sort((a, b) => a.product.id - b.product.id)
      .slice(0, limit)
      .map((row) => ({ ...row.product }));
  }

  async embeddedAttributes(): Promise<string[]> {
    this.checkUp();
    return this.store.embeddedAttributesOf(this.catalogue);
  }

  async findBySkus(skus: readonly string[]): Promise<StoredProduct[]> {
    this.checkUp();
    const wanted = new Set(skus);
    return [...this.rows.values()]
      .filter((row) => row.product.sku !== undefined && wanted.has(row.product.sku))
      .map((row) => ({ ...row.product }));
  }

  async writeMany(writes: readonly BulkWrite[]): Promise<BulkWriteOutcome[]> {
    this.checkUp();
    for (const write of writes) {
      this.checkVector(write.kind === "insert" ? write.row.embedding : write.update.embedding?.vector);
    }
    return writes.map((write): BulkWriteOutcome => {
      if (write.kind === "insert") {
        const sku = write.row.product.sku;
        if (sku !== undefined && this.idOfSku(sku) !== undefined) return { raced: "skuTaken" };
        return { written: publicView(this.insert(write.row)) };
      }
      const row = this.rows.get(write.id);
      if (!row) return { raced: "missing" };
      if (row.product.version !== write.expectedVersion) return { raced: "changed" };
      const sku = write.update.fields.sku;
      const holder = sku === undefined ? undefined : this.idOfSku(sku);
      if (holder !== undefined && holder !== write.id) return { raced: "skuTaken" };
      return { written: publicView(this.apply(row, write.update)) };
    });
  }

  async searchByVector(embedding: Vector, query: SearchQuery): Promise<VersionedHit[]> {
    this.checkUp();
    return [...this.rows.values()]
      .filter((row) => passes(row.product, query))
      .map((row) => ({
        ...publicView(row.product),
        version: row.product.version,
        score: cosineSimilarity(embedding, row.embedding),
      }))
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, Math.max(0, query.limit));
  }

  async exactScores(embedding: Vector, ids: readonly number[]): Promise<Map<number, number>> {
    this.checkUp();
    const scores = new Map<number, number>();
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) scores.set(id, cosineSimilarity(embedding, row.embedding));
    }
    return scores;
  }

  /**
   * Lexical score here: how many of the texts' words (lower-cased, 4 letters or more: no stop words) the product's
   * name (weight 1), category (0.4) and description (0.2) contain. Not PostgreSQL's ranking, but
   * it orders matches the same way for the tests of the use cases.
   */
  async hybridCandidates(embedding: Vector, lexical: LexicalQuery, query: HybridQuery): Promise<HybridCandidate[]> {
    this.checkUp();
    const words = new Set([...lexical.texts, ...lexical.expansions].flatMap(wordsOf));
    // Typo tolerance as the SQL has it: a word of 4+ letters that no name or category holds also
    // stands for the one of theirs most like it by trigrams (similarity 0.4 at least).
    const vocabulary = new Set(
      [...this.rows.values()].flatMap((row) => wordsOf(`${row.product.name} ${row.product.category}`)),
    );
    for (const word of (lexical.misspellable ?? lexical.texts).flatMap(wordsOf)) {
      if (!/^\p{L}{4,}$/u.test(word) || vocabulary.has(word)) continue;
      const nearest = [...vocabulary]
        .map((known) => ({ known, similarity: trigramSimilarity(word, known) }))
        .filter(({ similarity }) => similarity >= 0.4)
        .sort((a, b) => b.similarity - a.similarity || a.known.localeCompare(b.known))[0];
      if (nearest) words.add(nearest.known);
      for (const swapped of swaps(word)) if (vocabulary.has(swapped)) words.add(swapped);
    }
    const rows = [...this.rows.values()].filter((row) => passes(row.product, query));
    const scored = rows.map((row) => {
      const { name, category, description } = row.product;
      const matches = (text: string) => wordsOf(text).filter((word) => words.has(word)).length;
      return {
        ...publicView(row.product),
        version: row.product.version,
        score: cosineSimilarity(embedding, row.embedding),
        lexical: matches(name) + 0.4 * matches(category) + 0.2 * matches(description),
      };
    });
    const byCosine = [...scored].sort((a, b) => b.score - a.score || a.id - b.id).slice(0, query.candidates);
    const byWords = scored
      .filter((candidate) => candidate.lexical > 0)
      .sort((a, b) => b.lexical - a.lexical || a.id - b.id)
      .slice(0, query.candidates);
    return [...new Map([...byCosine, ...byWords].map((candidate) => [candidate.id, candidate])).values()];
  }

  async knowsAnyWord(words: readonly string[]): Promise<boolean> {
    this.checkUp();
    const vocabulary = this.vocabulary();
    return words.some((word) =>
      vocabulary.some(
        (known) =>
          known === word ||
          (word.length >= 4 && (trigramSimilarity(word, known) >= 0.4 || swaps(word).includes(known))),
      ),
    );
  }

  async catalogueWords(words: readonly string[]): Promise<string[]> {
    this.checkUp();
    const vocabulary = new Set(this.vocabulary());
    return [...new Set(words)].filter((word) => vocabulary.has(word));
  }

  /** The words of the names and categories, lower case (as search_vocabulary holds them). */
  private vocabulary(): string[] {
    return [...this.rows.values()].flatMap(
      (row) => `${row.product.name} ${row.product.category}`.toLowerCase().match(/\p{L}{3,}/gu) ?? [],
    );
  }

  async versions(ids: readonly number[]): Promise<Map<number, number>> {
    this.checkUp();
    const versions = new Map<number, number>();
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) versions.set(id, row.product.version);
    }
    return versions;
  }

  private insert({ product, embedding, contentDigest }: EmbeddedProduct): StoredProduct {
    const stored: StoredProduct = {
      id: this.store.nextId++,
      name: product.name,
      description: product.description,
      category: product.category,
      ...(product.sku === undefined ? {} : { sku: product.sku }),
      ...(product.attributes === undefined ? {} : { attributes: product.attributes }),
      contentDigest,
      version: 1,
    };
    this.rows.set(stored.id, { catalogue: this.catalogue, product: stored, embedding: [...embedding] });
    return stored;
  }

  private apply(row: Row, { fields, embedding }: ProductUpdate): StoredProduct {
    const { sku, ...contract } = fields;
    // The fields are the whole new state: no sku or attributes there is none.
    const { sku: _dropped, attributes: _droppedToo, ...rest } = row.product;
    row.product = {
      ...rest,
      ...contract,
      ...(sku === undefined ? {} : { sku }),
      contentDigest: embedding?.contentDigest ?? row.product.contentDigest,
      version: row.product.version + 1,
    };
    if (embedding) row.embedding = [...embedding.vector];
    return row.product;
  }

  private idOfSku(sku: string): number | undefined {
    for (const [id, row] of this.rows) if (row.product.sku === sku) return id;
    return undefined;
  }

  private checkVector(vector: Vector | undefined): void {
    if (vector === undefined) return;
    const problem = vectorProblem(vector, this.dimension ?? vector.length);
    if (problem) throw new Error(`invalid embedding: ${problem}`);
  }

  private idempotentAnswer(owner: string, key: string, ttlHours: number): IdempotentAnswer | null {
    const record = this.idempotencyKeys.get(keyOf(owner, key));
    if (!record || this.now() - record.createdAt >= ttlHours * HOUR) return null;
    return { fingerprint: record.fingerprint, product: { ...record.product } };
  }

  private checkUp(): void {
    this.store.enter(this.catalogue);
  }
}

/** Whether the product is of the query's categories (if any) and meets its attribute conditions. */
function passes(
  product: Product,
  query: { categories?: readonly string[] | undefined; attributes?: readonly AttributeCondition[] | undefined },
): boolean {
  return (
    (!query.categories || query.categories.includes(product.category)) &&
    meetsConditions(product.attributes, query.attributes ?? [])
  );
}

/**
 * The rows of one catalogue, as a Map over the store's: reads see only that catalogue's rows,
 * writes go to the store with it.
 */
class CatalogueRows extends Map<number, Row> {
  constructor(
    private readonly all: Map<number, Row>,
    private readonly catalogue: string,
  ) {
    super();
  }

  override get(id: number): Row | undefined {
    const row = this.all.get(id);
    return row?.catalogue === this.catalogue ? row : undefined;
  }

  override has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  override set(id: number, row: Row): this {
    this.all.set(id, row);
    return this;
  }

  override delete(id: number): boolean {
    return this.has(id) && this.all.delete(id);
  }

  override *entries(): MapIterator<[number, Row]> {
    for (const [id, row] of this.all) if (row.catalogue === this.catalogue) yield [id, row];
  }

  override [Symbol.iterator](): MapIterator<[number, Row]> {
    return this.entries();
  }

  override *values(): MapIterator<Row> {
    for (const [, row] of this.entries()) yield row;
  }

  override *keys(): MapIterator<number> {
    for (const [id] of this.entries()) yield id;
  }
}

const HOUR = 3_600_000;

function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(/\p{L}{4,}/gu) ?? []) as string[];
}

/** The word with two neighbouring letters swapped, each way. */
function swaps(word: string): string[] {
  const letters = [...word];
  return letters.slice(1).map((_, i) => {
    const swapped = [...letters];
    [swapped[i], swapped[i + 1]] = [swapped[i + 1] as string, swapped[i] as string];
    return swapped.join("");
  });
}

/** pg_trgm's similarity: shared trigrams of the words padded with two spaces before and one after, over all their trigrams. */
function trigramSimilarity(a: string, b: string): number {
  const trigrams = (word: string) => {
    const padded = `  ${word} `;
    return new Set(Array.from({ length: padded.length - 2 }, (_, i) => padded.slice(i, i + 3)));
  };
  const [first, second] = [trigrams(a), trigrams(b)];
  const shared = [...first].filter((trigram) => second.has(trigram)).length;
  return shared / (first.size + second.size - shared);
}

function keyOf(owner: string, key: string): string {
  return `${owner}\u0000${key}`;
}

export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new Error(`different vector dimensions ${a.length} and ${b.length}`);
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return dot / Math.sqrt(normA * normB);
}
