import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { ProductRepository } from "../ports/product-repository.ts";
import { embedOne } from "./embed.ts";
import { InvalidInput } from "./errors.ts";
import type { ScoredProduct } from "./product.ts";
import { isStorableText } from "./text.ts";

export const SEARCH_LIMIT = { default: 5, min: 1, max: 50 } as const;
export const QUERY_MAX_LENGTH = 1000;

export const NOTHING_MATCHED = "No hemos encontrado ningún producto en el catálogo que corresponda a su búsqueda.";

export interface SearchRequest {
  query: string;
  limit?: number | undefined;
}

export interface SearchResult {
  query: string;
  recommendation: string;
  results: ScoredProduct[];
}

export interface Deps {
  products: ProductRepository;
  embedder: Embedder;
  generator: Generator;
}

/**
 * SearchAndRecommend: embeds the query, ranks products by cosine similarity and asks the
 * generator for a recommendation drawn only from the products returned.
 */
export class SearchAndRecommend {
  constructor(private readonly deps: Deps) {}

  async execute(request: SearchRequest): Promise<SearchResult> {
    const query = request.query.trim();
    if (query.length === 0) throw new InvalidInput("El campo 'query' no puede estar vacío");
    if (!isStorableText(query)) throw new InvalidInput("El campo 'query' contiene un carácter no admitido (U+0000)");
    if (query.length > QUERY_MAX_LENGTH) {
      throw new InvalidInput(`El campo 'query' admite como máximo ${QUERY_MAX_LENGTH} caracteres`);
    }
    const limit = request.limit ?? SEARCH_LIMIT.default;
    if (!Number.isInteger(limit) || limit < SEARCH_LIMIT.min || limit > SEARCH_LIMIT.max) {
      throw new InvalidInput(`El campo 'limit' debe ser un entero entre ${SEARCH_LIMIT.min} y ${SEARCH_LIMIT.max}`);
    }

    const embedding = await embedOne(this.deps.embedder, query, "query");
    const results = await this.deps.products.searchByVector(embedding, limit);
    if (results.length === 0) return { query: request.query, recommendation: NOTHING_MATCHED, results };

    const recommendation = await this.deps.generator.generate({ query, products: results });
    return {
      query: request.query,
      recommendation: `[${recommendation.provider} - ${recommendation.model}] ${recommendation.text}`,
      results,
    };
  }
}
