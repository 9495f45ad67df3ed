import type { Embedder } from "../ports/embedder.ts";
import type { Generator, Recommendation } from "../ports/generator.ts";
import type { LexicalQuery, ProductCatalogues, ProductRepository } from "../ports/product-repository.ts";
import type { SynonymStore } from "../ports/synonym-store.ts";
import type { Translation, Translator } from "../ports/translator.ts";
import { type AttributeCondition, checkedFilter } from "./attribute-filter.ts";
import { type Browsed, type BrowseRequest, browse, checkedBrowse, relevantWindow } from "./browse-results.ts";
import type { SearchFilter } from "./caller.ts";
import { checkCitations, withCheckedCitations } from "./citations.ts";
import { embedOne } from "./embed.ts";
import { InvalidInput } from "./errors.ts";
import { highlightsOf, wordsToMark } from "./highlights.ts";
import { checkAlpha, fuse, SEARCH_MODES, type SearchMode } from "./hybrid-ranking.ts";
import { normalizeCategories, publicView } from "./manage-products.ts";
import type { ScoredProduct, VersionedHit } from "./product.ts";
import type { SearchAnalytics } from "./search-analytics.ts";
import { bothCategories, narrowCategories } from "./search-filter.ts";
import { synonymsFor } from "./synonyms.ts";
import { textProblem, trimText } from "./text.ts";
import type { Vector } from "./vector.ts";

export const SEARCH_LIMIT = { default: 5, min: 1, max: 50 } as const;
export const QUERY_MAX_LENGTH = 1000;

/**
 * Said, without asking any model, when nothing in the catalogue matches the query: no product is
 * near enough (the relevance threshold, Ranking.minScore) or none is left by the filters.
 */
export const NOTHING_MATCHED = "No hemos encontrado ningún producto en el catálogo que corresponda a su búsqueda.";

/** Said instead when a model's whole text was citations of products it was not given. */
export const NOTHING_GROUNDED = "No se ha podido redactar una recomendación basada en los productos encontrados.";

/**
 * How many times a search runs at most: when a product it found changed or was deleted before its
 * results left, it runs again (a later run sees the change); on the last run such products are left out.
 */
const SEARCH_RUNS = 3;

export interface SearchRequest {
  query: string;
  limit?: number | undefined;
  /** Only products of this category, or of any of these; absent: all. */
  category?: string | readonly string[] | undefined;
  /**
   * Conditions on attributes and `category`, all to hold (attribute-filter.ts: checkedFilter);
   * absent: none. Its categories narrow `category`'s.
   */
  filter?: unknown;
  /**
   * Paging, sorting and facets (browse-results.ts): any of them makes the search answer a page of
   * its relevant results (the best RESULT_WINDOW) with their total. `offset`: results skipped
   * (offset + limit ≤ RESULT_WINDOW); `sort`: `[{"price": "asc"}]`, relevance the tie-break;
   * `facets`: attribute names (or `category`) to count values of.
   */
  offset?: number | undefined;
  sort?: unknown;
  facets?: unknown;
  /** Each result also gets its name and description with the matched words marked (highlights.ts). */
  highlight?: boolean | undefined;
  /** `semantic` (the contract's ranking) or `hybrid` (blended with the lexical match); absent: the service's default. */
  mode?: SearchMode | undefined;
  /** In hybrid mode, the weight of the semantic score, 0 to 1; absent: the service's default. */
  alpha?: number | undefined;
}

/** What a search is run with besides its request. */
export interface SearchOptions {
  /**
   * The catalogue searched: no product of another is ever among the results, and only its own
   * synonyms, vocabulary (typo repairs) and analytics are used.
   */
  catalogue: string;
  /** Aborts (with the reason to throw) when the caller stops waiting: provider requests are cancelled. */
  signal?: AbortSignal | undefined;
  /** A filter the request may narrow, never widen (a tenant token's: search-filter.ts). */
  filter?: SearchFilter | undefined;
}

/**
 * What decides relevance besides the mode: the category boost of hybrid and lexical searches
 * (hybrid-ranking.ts), and the relevance threshold under which a search answers nothing.
 */
export interface Ranking {
  /** Weight of the boost of the categories that dominate the nearest products (0: none). */
  categoryBoost: number;
  /**
   * The relevance threshold: when no product's cosine with the query reaches it (and, in hybrid
   * and lexical mode, no product matches its words), the search answers no products (and
   * NOTHING_MATCHED, without asking a model); so does a query none of whose words can be read
   * (`readable`). 0: every search answers.
   */
  minScore: number;
  /**
   * A browsing search's relevant results are those of its window scoring at least this share of
   * its best (relevantResults in browse-results.ts); 0: the whole window.
   */
  relevantShare: number;
}

/** How a search ranks when the request does not say. */
export interface SearchDefaults {
  mode: SearchMode;
  /** The weight of the semantic score in hybrid mode (hybrid-ranking.ts). */
  alpha: number;
}

export interface SearchResult {
  /** Names this search in the clicks and conversions a shop reports on its results (analytics). */
  searchId: string;
  query: string;
  recommendation: string;
  results: ScoredProduct[];
  /** The ids the recommendation cites (as `[#id]`), each among `results`, in the order first cited. */
  citedIds: number[];
  /** Only when the request paged, sorted or asked for facets: the relevant results' total and facets. */
  browsed?: BrowsedSummary;
}

/** What a browsing search tells of its relevant results besides the page (browse-results.ts). */
export type BrowsedSummary = Omit<Browsed<ScoredProduct>, "page">;

/**
 * What the search pipeline yields, in order: `results` once, then the recommendation (when
 * streamed, `delta` and `reset` as it is written), then `done`. The JSON answer is `results` and
 * `done` together; the event stream sends each as it comes.
 */
export type SearchEvent =
  | { type: "results"; searchId: string; query: string; results: ScoredProduct[]; browsed?: BrowsedSummary }
  | { type: "delta"; text: string }
  /** Every delta so far is withdrawn: the writer failed and the next one's text replaces it. */
  | { type: "reset" }
  | {
      type: "done";
      searchId: string;
      /** The whole recommendation, label included, exactly as the JSON answer would carry it. */
      recommendation: string;
      citedIds: number[];
      /**
       * Who wrote it (null when nothing matched), and when streamed the position of that writer in
       * the chain (a whole answer's generator does not say).
       */
      writer: { provider: string; model: string; position?: number } | null;
    };

export interface Deps {
  products: ProductCatalogues;
  embedder: Embedder;
  generator: Generator;
  /** Defaults: semantic ranking (the contract's); alpha as chosen on the eval set. */
  defaults?: SearchDefaults;
  /** Defaults: DEFAULT_RANKING (the category boost as measured, no relevance threshold). */
  ranking?: Ranking;
  /** Each catalogue's synonyms, added to the lexical side of hybrid and lexical searches; absent: none. */
  synonyms?: SynonymStore | undefined;
  /** Told of every answered search (its id, query, mode and how many results); absent: nothing kept. */
  analytics?: Pick<SearchAnalytics, "searched"> | undefined;
  /** Makes each search's id (default: a random UUID). */
  newSearchId?: () => string;
  /**
   * Brings a Spanish query into English, once per search: the embedder is given its English, and a
   * hybrid search matches the words of both. Absent: the query as it is. A failure is not fatal.
   */
  translator?: Translator | undefined;
  /**
   * Receives one `search` event per answered search (its mode, sizes and the milliseconds of each
   * stage: translateMs, embedMs, searchMs, checkMs, generateMs; never the query), and a
   * `translation_failed` warning when the translator could not answer.
   */
  log?: (event: Record<string, unknown>) => void;
}

interface CheckedRequest {
  query: string;
  limit: number;
  /** The categories searched; "nothing" when a fixed filter and the request's have none in common. */
  categories: readonly string[] | undefined | "nothing";
  /** The request's attribute conditions and the fixed filter's, all to hold. */
  attributes: readonly AttributeCondition[];
  /** Present when the request pages, sorts or asks for facets. */
  browse?: BrowseRequest;
  highlight: boolean;
  mode: SearchMode;
  alpha: number;
}

/**
 * The default weight of the semantic score in hybrid mode, chosen on the eval set's dev queries
 * (bench/eval.ts, offline model): with translation, nDCG@10 0.655 at 0.75 (0.656 at 0.7, 0.647 at
 * 0.8, 0.608 at 0.5; semantic alone 0.610); without, 0.354 (0.358 at 0.7; semantic 0.316).
 */
export const DEFAULT_HYBRID_ALPHA = 0.75;

/**
 * The weight of the category boost, chosen on the eval set's dev queries (bench/eval.ts, offline
 * model): see the README's search quality figures.
 */
export const DEFAULT_CATEGORY_BOOST = 0.4;

export const DEFAULT_RANKING: Ranking = { categoryBoost: DEFAULT_CATEGORY_BOOST, minScore: 0, relevantShare: 0 };

/** Hybrid candidates taken from each side, as a multiple of the limit (at least 40). */
function hybridCandidatesFor(limit: number): number {
  return Math.max(40, 4 * limit);
}

/** What the search understood of the query: its vector and, in hybrid and lexical mode, the words to match. */
interface UnderstoodQuery {
  embedding: Vector;
  lexical: LexicalQuery;
}

/** How an answer leaves: whole once everything is known (JSON), or streamed as each part is ready (events). */
type Delivery = "whole" | "streamed";

/** The consistency rule's verdict when a product changed and another run may see it as it is now. */
const RUN_AGAIN = Symbol("run again");

/**
 * SearchAndRecommend: embeds the query, ranks products by cosine similarity (within the requested
 * categories) and asks the generator for a recommendation drawn only from the products returned.
 *
 * One pipeline (`events`) serves both answers: it yields `results`, then the recommendation
 * (`delta` and `reset` when streamed), then `done`, and a failure ends it by throwing the typed
 * error. `execute` collects it into the JSON answer; `stream` is the pipeline itself.
 *
 * A product deleted or changed while the search runs is never answered with its old text or
 * vector. The rule, in `stillAnswerable`: results are checked against the catalogue just before
 * they leave, and the search runs again if one changed (at most SEARCH_RUNS runs; on the last one,
 * the changed products are left out). A whole answer's results leave with its recommendation, so
 * they are checked after it is written; a streamed answer's leave with its first event, before
 * any model is asked.
 */
export class SearchAndRecommend {
  /** How this service ranks when a request does not say (its SEARCH_MODE and HYBRID_ALPHA). */
  readonly defaults: SearchDefaults;
  private readonly ranking: Ranking;

  constructor(private readonly deps: Deps) {
    this.defaults = deps.defaults ?? { mode: "semantic", alpha: DEFAULT_HYBRID_ALPHA };
    this.ranking = deps.ranking ?? DEFAULT_RANKING;
  }

  /** `signal` aborts (with the reason to throw) when the caller stops waiting: provider requests are cancelled. */
  async execute(request: SearchRequest, options: SearchOptions): Promise<SearchResult> {
    let results: ScoredProduct[] = [];
    let browsed: BrowsedSummary | undefined;
    for await (const event of this.events(request, options, "whole")) {
      if (event.type === "results") ({ results, browsed } = event);
      if (event.type === "done") {
        return {
          searchId: event.searchId,
          query: request.query,
          recommendation: event.recommendation,
          results,
          citedIds: event.citedIds,
          ...(browsed ? { browsed } : {}),
        };
      }
    }
    throw new Error("the search pipeline ended without its done event");
  }

  /**
   * The same search, streamed: `results` as soon as retrieval is done (before any model is asked),
   * then the recommendation as it is written, citations checked on the way, then `done`. Throws
   * like `execute`; aborting `signal` cancels the model's request.
   */
  stream(request: SearchRequest, options: SearchOptions): AsyncGenerator<SearchEvent> {
    return this.events(request, options, "streamed");
  }

  /** The pipeline: check, understand the query, retrieve, check the results, write, answer (see the class). */
  private async *events(
    request: SearchRequest,
    { catalogue, signal, filter }: SearchOptions,
    delivery: Delivery,
  ): AsyncGenerator<SearchEvent> {
    const checked = checkSearchRequest(request, this.defaults, filter);
    const searchId = (this.deps.newSearchId ?? (() => crypto.randomUUID()))();
    /** Keeps the answered search for the analytics (behind the answer). */
    const answered = (results: number) =>
      this.deps.analytics?.searched({ searchId, catalogue, query: checked.query, mode: checked.mode, results });
    const nothing = (): SearchEvent => ({
      type: "done",
      searchId,
      recommendation: NOTHING_MATCHED,
      citedIds: [],
      writer: null,
    });
    if (checked.categories === "nothing") {
      // The request's categories and the fixed filter's have none in common: nothing to look at.
      this.logSearch({ mode: checked.mode, results: 0, recommendedBy: null, filteredOut: true });
      answered(0);
      const browsed = checked.browse && summaryOf(browse([], checked.browse, checked.limit));
      yield { type: "results", searchId, query: request.query, results: [], ...(browsed ? { browsed } : {}) };
      yield nothing();
      return;
    }
    const categories = checked.categories;
    const products = this.deps.products.in(catalogue);
    const timer = stopwatch();
    // The time of each stage, for the `search` event (and the metrics drawn from it).
    const stages = { translateMs: 0, embedMs: 0, searchMs: 0, checkMs: 0, generateMs: 0 };
    const translation = await this.translate(checked.query, products, signal);
    stages.translateMs = timer.lap();
    const query = await this.understand(checked, translation, catalogue, signal);
    stages.embedMs = timer.lap();
    let browsed: BrowsedSummary | undefined;
    /** A browsing search's relevance rank of each result, whatever order its page is sorted in. */
    let relevanceRank: Map<number, number> | undefined;
    // The words matched: the query's, its English and their other translations, the synonyms used.
    const toMark = checked.highlight
      ? wordsToMark([
          checked.query,
          ...(translation?.translated ? [translation.text] : []),
          ...(translation?.alternatives ?? []),
          ...query.lexical.expansions,
        ])
      : undefined;
    const results = (hits: VersionedHit[]): SearchEvent => ({
      type: "results",
      searchId,
      query: request.query,
      results: hits.map((hit) =>
        toMark ? { ...scoredView(hit), highlights: highlightsOf(hit, toMark) } : scoredView(hit),
      ),
      ...(browsed ? { browsed } : {}),
    });
    /** The consistency rule's check (see the class), timed as its own stage. */
    const check = async (hits: VersionedHit[], lastRun: boolean) => {
      timer.lap();
      const checkedHits = await this.stillAnswerable(products, hits, lastRun);
      stages.checkMs += timer.lap();
      return checkedHits;
    };
    // A query the service cannot read at all answers nothing, whatever its nearest products.
    const read = await this.readable(products, checked.query, translation, catalogue);
    stages.searchMs += timer.lap();
    for (let run = 1; ; run++) {
      const lastRun = run === SEARCH_RUNS;
      timer.lap();
      const best = async (limit: number, window: boolean) =>
        read ? await this.retrieve(products, query, { ...checked, categories, limit, window }) : [];
      // A browsing search retrieves its relevant results (from its window) and answers a page of them.
      let found = checked.browse
        ? [...(await relevantWindow((size) => best(size, true), this.ranking.relevantShare))]
        : await best(checked.limit, false);
      if (checked.browse) {
        relevanceRank = new Map(found.map((hit, rank) => [hit.id, rank]));
        const arranged = browse(found, checked.browse, checked.limit);
        browsed = summaryOf(arranged);
        found = arranged.page;
      }
      stages.searchMs += timer.lap();
      // Streamed, the results leave now, with the first event: they are checked now.
      const hits = delivery === "streamed" ? await check(found, lastRun) : found;
      if (hits === RUN_AGAIN) continue;
      if (hits.length === 0) {
        this.logSearch({ mode: checked.mode, results: 0, ...stages, recommendedBy: null });
        answered(0);
        yield results(hits);
        yield nothing();
        return;
      }
      signal?.throwIfAborted();
      // The writer is given the products most relevant first, as it expects, whatever the page's sort.
      const writing = { query: checked.query, products: mostRelevantFirst(hits, relevanceRank).map(scoredView) };

      if (delivery === "streamed") {
        yield results(hits);
        timer.lap();
        const ids = hits.map((hit) => hit.id);
        for await (const event of withCheckedCitations(this.deps.generator.stream(writing, signal), ids)) {
          if (event.type !== "done") {
            yield event;
            continue;
          }
          const label = labelOf(event.recommendation);
          stages.generateMs = timer.lap();
          this.logSearch({ mode: checked.mode, results: hits.length, ...stages, recommendedBy: label, streamed: true });
          answered(hits.length);
          const { provider, model } = event.recommendation;
          yield {
            type: "done",
            searchId,
            recommendation: `[${label}] ${event.recommendation.text || NOTHING_GROUNDED}`,
            citedIds: event.citedIds,
            writer: { provider, model, position: event.position },
          };
        }
        return;
      }

      timer.lap();
      const written = await this.deps.generator.generate(writing, signal);
      stages.generateMs += timer.lap();
      // Whole, the results leave with the recommendation: they are checked now that it is written.
      const current = await check(hits, lastRun);
      if (current === RUN_AGAIN) continue;
      const label = labelOf(written);
      this.logSearch({ mode: checked.mode, results: current.length, ...stages, recommendedBy: label });
      answered(current.length);
      // Citations of anything but the products returned are removed: the answer cites only what it shows.
      const cited = checkCitations(
        written.text,
        current.map((hit) => hit.id),
      );
      yield results(current);
      yield {
        type: "done",
        searchId,
        recommendation: `[${label}] ${cited.text || NOTHING_GROUNDED}`,
        citedIds: cited.citedIds,
        writer: { provider: written.provider, model: written.model },
      };
      return;
    }
  }

  /**
   * The query's vector and, in hybrid and lexical mode, the words to match: the embedder gets the
   * query's English (translated once, before); the lexical side the query and its English, and as
   * expansions the dictionary's other translations of its words and the catalogue's synonyms of
   * them (read while the query is embedded).
   */
  private async understand(
    checked: CheckedRequest,
    translation: Translation | undefined,
    catalogue: string,
    signal: AbortSignal | undefined,
  ): Promise<UnderstoodQuery> {
    const texts = translation?.translated ? [checked.query, translation.text] : [checked.query];
    const [embedding, sets] = await Promise.all([
      embedOne(this.deps.embedder, translation?.text ?? checked.query, "query", signal),
      checked.mode === "semantic" ? [] : (this.deps.synonyms?.get(catalogue) ?? []),
    ]);
    if (checked.mode === "semantic") return { embedding, lexical: { texts: [], expansions: [] } };
    const expansions = [...(translation?.alternatives ?? []), ...synonymsFor(texts, sets)];
    // With a translator, only the words its dictionaries do not know may be misspelt ("wear" is no typo).
    const misspellable = translation ? (translation.unknownWords ?? []) : undefined;
    return { embedding, lexical: { texts, expansions, misspellable } };
  }

  /**
   * Whether the query holds anything the service can read, when the relevance threshold is on and
   * a translator can tell: a word one of its dictionaries knows, a number, a word of the catalogue's
   * names and categories (or one like it by spelling: a misspelt brand), or a term of the
   * catalogue's synonyms. Gibberish ("sdfghj dfg", "xqzv") holds none of them; its nearest products
   * are as near as real queries' (bench/eval.ts: the best cosines of 40 gibberish queries and of the
   * 40 dev queries overlap from 0.345 to 0.478), so no cosine threshold alone tells them apart.
   * Without a translator (no dictionary to ask), every query is read.
   */
  private async readable(
    products: ProductRepository,
    query: string,
    translation: Translation | undefined,
    catalogue: string,
  ): Promise<boolean> {
    if (this.ranking.minScore <= 0 || translation === undefined) return true;
    const unknown = new Set(translation.unknownWords ?? []);
    const tokens = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    if (tokens.some((token) => /\p{N}/u.test(token) || !unknown.has(token))) return true;
    const sets = (await this.deps.synonyms?.get(catalogue)) ?? [];
    if (synonymsFor([query], sets).length > 0) return true;
    return products.knowsAnyWord([...unknown]);
  }

  /**
   * The query's English (or the query itself when the translator does not take it to be Spanish);
   * undefined without a translator or when it fails: the query is then used as it is, and a
   * `translation_failed` warning logged. A word the translator took for a misspelling but that the
   * catalogue's names hold as written is a name, not a typo ("reloj casio" is not a casino
   * watch): the query is translated again keeping it (only then: most queries repair nothing).
   */
  private async translate(
    query: string,
    products: ProductRepository,
    signal: AbortSignal | undefined,
  ): Promise<Translation | undefined> {
    const translation = await this.translateKeeping(query, [], signal);
    const typos = translation?.typoRepairs ?? [];
    const names = typos.length > 0 ? await products.catalogueWords(typos) : [];
    if (names.length === 0) return translation;
    return (await this.translateKeeping(query, names, signal)) ?? translation;
  }

  private async translateKeeping(
    query: string,
    keepWords: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<Translation | undefined> {
    const translator = this.deps.translator;
    if (!translator) return undefined;
    const started = performance.now();
    try {
      const [translation] = await translator.toEnglish([query], signal, keepWords.length > 0 ? { keepWords } : {});
      if (!translation) throw new Error("no translation for the query");
      return translation;
    } catch (error) {
      signal?.throwIfAborted();
      this.deps.log?.({
        event: "translation_failed",
        translator: translator.name,
        purpose: "query",
        texts: 1,
        ms: Math.round(performance.now() - started),
        error,
      });
      return undefined;
    }
  }

  /**
   * The `limit` best products: by cosine, or in hybrid and lexical mode by the blend of cosine,
   * lexical match and category boost (hybrid-ranking.ts). None when no product's cosine reaches
   * the relevance threshold and, in hybrid and lexical mode, no product matches the query's words.
   * `window`: they are a browsing search's relevant results (SearchQuery.window).
   */
  private async retrieve(
    products: ProductRepository,
    { embedding, lexical }: UnderstoodQuery,
    checked: CheckedRequest & { categories: readonly string[] | undefined; window: boolean },
  ): Promise<VersionedHit[]> {
    const { minScore, categoryBoost } = this.ranking;
    if (checked.mode === "semantic") {
      const hits = await products.searchByVector(embedding, checked);
      return minScore > 0 && (hits[0]?.score ?? 0) < minScore ? [] : hits;
    }
    const candidates = await products.hybridCandidates(embedding, lexical, {
      // A browsing search's window is itself a thousand: as many from each side are enough to fuse.
      candidates: checked.window ? checked.limit : hybridCandidatesFor(checked.limit),
      window: checked.window,
      categories: checked.categories,
      attributes: checked.attributes,
    });
    // Words matched are relevance too (a shop's synonym the model has never seen, a model number).
    const nearest = Math.max(0, ...candidates.map((candidate) => candidate.score));
    if (minScore > 0 && nearest < minScore && !candidates.some((candidate) => candidate.lexical > 0)) return [];
    // Lexical: ranked by the words alone; which categories dominate is still told by meaning and words together.
    const alpha = checked.mode === "lexical" ? 0 : checked.alpha;
    const best = fuse(candidates, { alpha, categoryBoost, dominanceAlpha: checked.alpha }).slice(0, checked.limit);
    const hits = best.map(({ lexical: _lexical, approximateScore: _approximate, ...hit }) => hit);
    // The answers' cosines exact, read for them alone (a browsing window's stay its scan's, as its
    // semantic search's do: SearchQuery.window). A product gone meanwhile keeps its candidate's
    // score, and the consistency check leaves it out.
    if (checked.window || !best.some((candidate) => candidate.approximateScore)) return hits;
    const exact = await products.exactScores(
      embedding,
      hits.map((hit) => hit.id),
    );
    return hits.map((hit) => ({ ...hit, score: exact.get(hit.id) ?? hit.score }));
  }

  /**
   * The consistency rule (see the class): the hits whose product still exists at the version it
   * was found as; RUN_AGAIN when one changed and this is not the last run.
   */
  private async stillAnswerable(
    products: ProductRepository,
    hits: VersionedHit[],
    lastRun: boolean,
  ): Promise<VersionedHit[] | typeof RUN_AGAIN> {
    if (hits.length === 0) return hits;
    const versions = await products.versions(hits.map((hit) => hit.id));
    const current = hits.filter((hit) => versions.get(hit.id) === hit.version);
    return current.length < hits.length && !lastRun ? RUN_AGAIN : current;
  }

  private logSearch({ translateMs, ...fields }: Record<string, unknown>): void {
    // Translation is a stage only where there is a translator.
    this.deps.log?.({ event: "search", ...fields, ...(this.deps.translator ? { translateMs } : {}) });
  }
}

/**
 * The query trimmed and checked, the limit, the category filter and the ranking checked; InvalidInput
 * naming the first field that breaks its rules. A fixed `filter` narrows the request's categories.
 */
export function checkSearchRequest(
  request: SearchRequest,
  defaults: SearchDefaults,
  filter?: SearchFilter,
): CheckedRequest {
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
  const requested = checkedFilter(request.filter);
  const asked = bothCategories(normalizeCategories(request.category), requested.categories);
  const categories = asked === "nothing" ? asked : narrowCategories(asked, filter);
  const attributes = [...requested.attributes, ...(filter?.attributes ?? [])];
  const browsing = checkedBrowse(request, limit);
  if (request.highlight !== undefined && typeof request.highlight !== "boolean") {
    throw new InvalidInput("El campo 'highlight' debe ser true o false");
  }
  const highlight = request.highlight === true;
  return { query, limit, categories, attributes, mode, alpha, highlight, ...(browsing ? { browse: browsing } : {}) };
}

function labelOf(recommendation: Pick<Recommendation, "provider" | "model">): string {
  return `${recommendation.provider} - ${recommendation.model}`;
}

function summaryOf({ page: _page, ...summary }: Browsed<ScoredProduct>): BrowsedSummary {
  return summary;
}

/** `hits` in the order of their relevance `rank` (a sorted page's); as they are without one. */
function mostRelevantFirst(
  hits: readonly VersionedHit[],
  rank: ReadonlyMap<number, number> | undefined,
): VersionedHit[] {
  if (!rank) return [...hits];
  return [...hits].sort((a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0));
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
