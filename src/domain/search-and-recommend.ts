import type { Embedder } from "../ports/embedder.ts";
import type { Generator, Recommendation } from "../ports/generator.ts";
import type { ProductRepository } from "../ports/product-repository.ts";
import type { Translator } from "../ports/translator.ts";
import { checkCitations, withCheckedCitations } from "./citations.ts";
import { embedOne } from "./embed.ts";
import { InvalidInput } from "./errors.ts";
import { checkAlpha, fuse, SEARCH_MODES, type SearchMode } from "./hybrid-ranking.ts";
import { normalizeCategories, publicView } from "./manage-products.ts";
import type { ScoredProduct, VersionedHit } from "./product.ts";
import { textProblem, trimText } from "./text.ts";
import type { Vector } from "./vector.ts";

export const SEARCH_LIMIT = { default: 5, min: 1, max: 50 } as const;
export const QUERY_MAX_LENGTH = 1000;

export const NOTHING_MATCHED = "No hemos encontrado ningún producto en el catálogo que corresponda a su búsqueda.";

/** Said instead when a model's whole text was citations of products it was not given. */
export const NOTHING_GROUNDED = "No se ha podido redactar una recomendación basada en los productos encontrados.";

/**
 * How many times a search is run again when a product it found changed or was deleted before the
 * answer left (a later run sees the change); past that, such products are left out.
 */
const CONSISTENT_ATTEMPTS = 3;

export interface SearchRequest {
  query: string;
  limit?: number | undefined;
  /** Only products of this category, or of any of these; absent: all. */
  category?: string | readonly string[] | undefined;
  /** `semantic` (the contract's ranking) or `hybrid` (blended with the lexical match); absent: the service's default. */
  mode?: SearchMode | undefined;
  /** In hybrid mode, the weight of the semantic score, 0 to 1; absent: the service's default. */
  alpha?: number | undefined;
}

/** How a search ranks when the request does not say. */
export interface SearchDefaults {
  mode: SearchMode;
  /** The weight of the semantic score in hybrid mode (hybrid-ranking.ts). */
  alpha: number;
}

export interface SearchResult {
  query: string;
  recommendation: string;
  results: ScoredProduct[];
  /** The ids the recommendation cites (as `[#id]`), each among `results`, in the order first cited. */
  citedIds: number[];
}

/** What a streamed search sends, in order: `results` once, then the recommendation as it is written. */
export type SearchEvent =
  | { type: "results"; query: string; results: ScoredProduct[] }
  | { type: "delta"; text: string }
  /** Every delta so far is withdrawn: the writer failed and the next one's text replaces it. */
  | { type: "reset" }
  | {
      type: "done";
      /** The whole recommendation, label included, exactly as the JSON answer would carry it. */
      recommendation: string;
      citedIds: number[];
      /** Who wrote it, and the position of that writer in the chain (null when nothing matched). */
      writer: { provider: string; model: string; position: number } | null;
    };

export interface Deps {
  products: ProductRepository;
  embedder: Embedder;
  generator: Generator;
  /** Defaults: semantic ranking (the contract's); alpha as chosen on the eval set. */
  defaults?: SearchDefaults;
  /**
   * Brings the query into the catalogue's language for the lexical side of hybrid searches (both
   * the query and its translation are matched); absent: the query alone. A failure is not fatal.
   */
  translator?: Translator | undefined;
  /** Receives one `search` event per answered search: sizes and the time of each step, never the query. */
  log?: (event: Record<string, unknown>) => void;
}

interface CheckedRequest {
  query: string;
  limit: number;
  categories: string[] | undefined;
  mode: SearchMode;
  alpha: number;
}

/**
 * The default weight of the semantic score in hybrid mode, chosen on the eval set's dev queries
 * (bench/eval.ts, offline model): with translation, nDCG@10 0.655 at 0.75 (0.656 at 0.7, 0.647 at
 * 0.8, 0.608 at 0.5; semantic alone 0.610); without, 0.354 (0.358 at 0.7; semantic 0.316).
 */
export const DEFAULT_HYBRID_ALPHA = 0.75;

/** Hybrid candidates taken from each side, as a multiple of the limit (at least 40). */
function hybridCandidatesFor(limit: number): number {
  return Math.max(40, 4 * limit);
}

/**
 * SearchAndRecommend: embeds the query, ranks products by cosine similarity (within the requested
 * categories) and asks the generator for a recommendation drawn only from the products returned.
 * A product deleted or changed while the search runs is never answered with its old text or
 * vector: the results are checked against the catalogue just before they are answered.
 */
export class SearchAndRecommend {
  /** How this service ranks when a request does not say (its SEARCH_MODE and HYBRID_ALPHA). */
  readonly defaults: SearchDefaults;

  constructor(private readonly deps: Deps) {
    this.defaults = deps.defaults ?? { mode: "semantic", alpha: DEFAULT_HYBRID_ALPHA };
  }

  /** `signal` aborts (with the reason to throw) when the caller stops waiting: provider requests are cancelled. */
  async execute(request: SearchRequest, signal?: AbortSignal): Promise<SearchResult> {
    const checked = checkSearchRequest(request, this.defaults);
    const timer = stopwatch();
    const embedding = await embedOne(this.deps.embedder, checked.query, "query", signal);
    const lexicalTexts = checked.mode === "hybrid" ? await this.lexicalTexts(checked.query, signal) : [];
    const embedMs = timer.lap();
    for (let attempt = 1; ; attempt++) {
      const hits = await this.retrieve(embedding, lexicalTexts, checked);
      const searchMs = timer.lap();
      if (hits.length === 0) {
        this.logSearch({ results: 0, embedMs, searchMs, generateMs: 0, recommendedBy: null });
        return { query: request.query, recommendation: NOTHING_MATCHED, results: [], citedIds: [] };
      }
      signal?.throwIfAborted();
      const written = await this.deps.generator.generate(
        { query: checked.query, products: hits.map(scoredView) },
        signal,
      );
      const generateMs = timer.lap();
      const current = await this.stillCurrent(hits);
      if (current.length < hits.length && attempt < CONSISTENT_ATTEMPTS) continue;
      const label = labelOf(written);
      this.logSearch({ results: current.length, embedMs, searchMs, generateMs, recommendedBy: label });
      // Citations of anything but the products returned are removed: the answer cites only what it shows.
      const cited = checkCitations(
        written.text,
        current.map((hit) => hit.id),
      );
      return {
        query: request.query,
        recommendation: `[${label}] ${cited.text || NOTHING_GROUNDED}`,
        results: current.map(scoredView),
        citedIds: cited.citedIds,
      };
    }
  }

  /**
   * The same search, streamed: `results` as soon as retrieval is done (before any model is asked),
   * then the recommendation as it is written, citations checked on the way, then `done`. Throws
   * like `execute`; aborting `signal` cancels the model's request.
   */
  async *stream(request: SearchRequest, signal?: AbortSignal): AsyncGenerator<SearchEvent> {
    const checked = checkSearchRequest(request, this.defaults);
    const timer = stopwatch();
    const embedding = await embedOne(this.deps.embedder, checked.query, "query", signal);
    const lexicalTexts = checked.mode === "hybrid" ? await this.lexicalTexts(checked.query, signal) : [];
    const embedMs = timer.lap();
    let hits: VersionedHit[] = [];
    for (let attempt = 1; attempt <= CONSISTENT_ATTEMPTS; attempt++) {
      const found = await this.retrieve(embedding, lexicalTexts, checked);
      hits = await this.stillCurrent(found);
      if (hits.length === found.length) break;
    }
    const searchMs = timer.lap();
    yield { type: "results", query: request.query, results: hits.map(scoredView) };
    if (hits.length === 0) {
      this.logSearch({ results: 0, embedMs, searchMs, generateMs: 0, recommendedBy: null });
      yield { type: "done", recommendation: NOTHING_MATCHED, citedIds: [], writer: null };
      return;
    }
    signal?.throwIfAborted();
    const events = this.deps.generator.stream({ query: checked.query, products: hits.map(scoredView) }, signal);
    for await (const event of withCheckedCitations(
      events,
      hits.map((hit) => hit.id),
    )) {
      if (event.type !== "done") {
        yield event;
        continue;
      }
      const label = labelOf(event.recommendation);
      this.logSearch({
        results: hits.length,
        embedMs,
        searchMs,
        generateMs: timer.lap(),
        recommendedBy: label,
        streamed: true,
      });
      yield {
        type: "done",
        recommendation: `[${label}] ${event.recommendation.text || NOTHING_GROUNDED}`,
        citedIds: event.citedIds,
        writer: {
          provider: event.recommendation.provider,
          model: event.recommendation.model,
          position: event.position,
        },
      };
    }
  }

  /** The `limit` best products: by cosine, or in hybrid mode by the blend of cosine and lexical match. */
  private async retrieve(embedding: Vector, lexicalTexts: string[], checked: CheckedRequest): Promise<VersionedHit[]> {
    if (checked.mode === "semantic") return this.deps.products.searchByVector(embedding, checked);
    const candidates = await this.deps.products.hybridCandidates(embedding, lexicalTexts, {
      candidates: hybridCandidatesFor(checked.limit),
      categories: checked.categories,
    });
    return fuse(candidates, checked.alpha)
      .slice(0, checked.limit)
      .map(({ lexical: _lexical, ...hit }) => hit);
  }

  /** The query, and its English when the translator takes it to be Spanish: the words lexical search matches. */
  private async lexicalTexts(query: string, signal: AbortSignal | undefined): Promise<string[]> {
    const translator = this.deps.translator;
    if (!translator) return [query];
    try {
      const [translation] = await translator.toEnglish([query], signal);
      return translation?.translated ? [query, translation.text] : [query];
    } catch {
      // Without the translation the query's own words still match (the embedder logged the failure).
      signal?.throwIfAborted();
      return [query];
    }
  }

  /** The hits whose product still exists at the version it was found as. */
  private async stillCurrent(hits: VersionedHit[]): Promise<VersionedHit[]> {
    if (hits.length === 0) return hits;
    const versions = await this.deps.products.versions(hits.map((hit) => hit.id));
    return hits.filter((hit) => versions.get(hit.id) === hit.version);
  }

  private logSearch(fields: Record<string, unknown>): void {
    this.deps.log?.({ event: "search", ...fields });
  }
}

/**
 * The query trimmed and checked, the limit, the category filter and the ranking checked; InvalidInput
 * naming the first field that breaks its rules.
 */
export function checkSearchRequest(request: SearchRequest, defaults: SearchDefaults): CheckedRequest {
  const query = trimText(request.query);
  const problem = textProblem(query, { maxLength: QUERY_MAX_LENGTH });
  if (problem) throw new InvalidInput(`El campo 'query' ${problem}`);
  const limit = request.limit ?? SEARCH_LIMIT.default;
  if (!Number.isInteger(limit) || limit < SEARCH_LIMIT.min || limit > SEARCH_LIMIT.max) {
    throw new InvalidInput(`El campo 'limit' debe ser un entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`);
  }
  const mode = request.mode ?? defaults.mode;
  if (!(SEARCH_MODES as readonly string[]).includes(mode)) {
    throw new InvalidInput(`El campo 'mode' debe ser uno de: ${SEARCH_MODES.join(", ")}`);
  }
  if (request.alpha !== undefined && mode !== "hybrid") {
    throw new InvalidInput('El campo \'alpha\' solo se usa con "mode": "hybrid"');
  }
  const alpha = request.alpha ?? defaults.alpha;
  checkAlpha(alpha);
  return { query, limit, categories: normalizeCategories(request.category), mode, alpha };
}

function labelOf(recommendation: Pick<Recommendation, "provider" | "model">): string {
  return `${recommendation.provider} - ${recommendation.model}`;
}

function scoredView(hit: VersionedHit): ScoredProduct {
  const view: ScoredProduct = { ...publicView(hit), score: hit.score };
  if (hit.fusedScore !== undefined) view.fusedScore = hit.fusedScore;
  return view;
}

/** Milliseconds since the previous lap (or the start), to one decimal. */
function stopwatch() {
  let last = performance.now();
  return {
    lap(): number {
      const now = performance.now();
      const elapsed = Math.round((now - last) * 10) / 10;
      last = now;
      return elapsed;
    },
  };
}
