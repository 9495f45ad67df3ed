import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { ProductRepository } from "../ports/product-repository.ts";
import { checkCitations } from "./citations.ts";
import { embedOne } from "./embed.ts";
import { InvalidInput } from "./errors.ts";
import type { ScoredProduct } from "./product.ts";
import { textProblem, trimText } from "./text.ts";

export const SEARCH_LIMIT = { default: 5, min: 1, max: 50 } as const;
export const QUERY_MAX_LENGTH = 1000;

export const NOTHING_MATCHED = "No hemos encontrado ningún producto en el catálogo que corresponda a su búsqueda.";

/** Said instead when a model's whole text was citations of products it was not given. */
export const NOTHING_GROUNDED = "No se ha podido redactar una recomendación basada en los productos encontrados.";

export interface SearchRequest {
  query: string;
  limit?: number | undefined;
}

export interface SearchResult {
  query: string;
  recommendation: string;
  results: ScoredProduct[];
  /** The ids the recommendation cites (as `[#id]`), each among `results`, in the order first cited. */
  citedIds: number[];
}

export interface Deps {
  products: ProductRepository;
  embedder: Embedder;
  generator: Generator;
  /** Receives one `search` event per answered search: sizes and the time of each step, never the query. */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * SearchAndRecommend: embeds the query, ranks products by cosine similarity and asks the
 * generator for a recommendation drawn only from the products returned.
 */
export class SearchAndRecommend {
  constructor(private readonly deps: Deps) {}

  /** `signal` aborts (with the reason to throw) when the caller stops waiting: provider requests are cancelled. */
  async execute(request: SearchRequest, signal?: AbortSignal): Promise<SearchResult> {
    const query = trimText(request.query);
    const problem = textProblem(query, { maxLength: QUERY_MAX_LENGTH });
    if (problem) throw new InvalidInput(`El campo 'query' ${problem}`);
    const limit = request.limit ?? SEARCH_LIMIT.default;
    if (!Number.isInteger(limit) || limit < SEARCH_LIMIT.min || limit > SEARCH_LIMIT.max) {
      throw new InvalidInput(`El campo 'limit' debe ser un entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`);
    }

    const timer = stopwatch();
    const embedding = await embedOne(this.deps.embedder, query, "query", signal);
    const embedMs = timer.lap();
    const results = await this.deps.products.searchByVector(embedding, limit);
    const searchMs = timer.lap();
    if (results.length === 0) {
      this.deps.log?.({ event: "search", results: 0, embedMs, searchMs, generateMs: 0, recommendedBy: null });
      return { query: request.query, recommendation: NOTHING_MATCHED, results, citedIds: [] };
    }

    signal?.throwIfAborted();
    const recommendation = await this.deps.generator.generate({ query, products: results }, signal);
    const label = `${recommendation.provider} - ${recommendation.model}`;
    this.deps.log?.({
      event: "search",
      results: results.length,
      embedMs,
      searchMs,
      generateMs: timer.lap(),
      recommendedBy: label,
    });
    // Citations of anything but the products returned are removed: the answer cites only what it shows.
    const checked = checkCitations(
      recommendation.text,
      results.map((product) => product.id),
    );
    return {
      query: request.query,
      recommendation: `[${label}] ${checked.text || NOTHING_GROUNDED}`,
      results,
      citedIds: checked.citedIds,
    };
  }
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
