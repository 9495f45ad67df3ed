import type { Clock } from "../ports/clock.ts";
import {
  type AnalyticsReport,
  SEARCH_EVENT_TYPES,
  type SearchAnalyticsStore,
  type SearchEventType,
} from "../ports/search-analytics.ts";
import { InvalidInput } from "./errors.ts";
import type { SearchMode } from "./hybrid-ranking.ts";

/** Queries listed in each list of a report. */
export const REPORT_QUERIES = 50;

/** A search id as the service makes them (a UUID), in lower case. */
const SEARCH_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const DAY_MS = 86_400_000;

export interface SearchAnalyticsDeps {
  store: SearchAnalyticsStore;
  clock: Clock;
  /** Days searches and events are kept (and the longest report); 0: nothing is kept. */
  retentionDays: number;
  /** Receives `search_event_recorded` {type} per click or conversion kept (the metrics count them; nothing else is in it). */
  log?: (event: Record<string, unknown>) => void;
}

/** A shop's report: the figures of every query over the last `days` days. */
export interface SearchAnalyticsReport extends AnalyticsReport {
  days: number;
  since: Date;
}

const NOTHING: AnalyticsReport = {
  searches: 0,
  noResultSearches: 0,
  clickedSearches: 0,
  clicks: 0,
  conversions: 0,
  topQueries: [],
  noResultQueries: [],
};

/**
 * SearchAnalytics: what shoppers search and what they do with the answers, so a shop finds the
 * searches that fail it (those that answer nothing, those whose answers nobody clicks). It keeps
 * what the shop's requests carry and nothing about who made them: the query, how it ranked, how
 * many products it answered, and the clicks and conversions the shop reports on them, for
 * `retentionDays`.
 */
export class SearchAnalytics {
  constructor(private readonly deps: SearchAnalyticsDeps) {}

  get enabled(): boolean {
    return this.deps.retentionDays > 0;
  }

  /** Keeps an answered search (behind the answer: the store writes it later). */
  searched(search: { searchId: string; catalogue: string; query: string; mode: SearchMode; results: number }): void {
    if (!this.enabled) return;
    this.deps.store.recordSearch({
      ...search,
      query: search.query.toLowerCase().replace(/\s+/gu, " ").trim(),
      at: new Date(this.deps.clock.now()),
    });
  }

  /**
   * Keeps a shopper's click or conversion on a product of a search's answer in `catalogue`.
   * InvalidInput when the search id is not one the service makes, the product id not a product id,
   * or the type unknown. An event of a search that is not (or no longer) kept, or that was made in
   * another catalogue, counts for nothing in the reports.
   */
  event(input: { catalogue: string; searchId: string; productId: number; type: string }): void {
    const searchId = input.searchId.toLowerCase();
    if (!SEARCH_ID.test(searchId)) {
      throw new InvalidInput("El campo 'search_id' debe ser el search_id de una respuesta de búsqueda");
    }
    if (!Number.isSafeInteger(input.productId) || input.productId < 1) {
      throw new InvalidInput("El campo 'product_id' debe ser el id de un producto");
    }
    if (!(SEARCH_EVENT_TYPES as readonly string[]).includes(input.type)) {
      throw new InvalidInput(`El campo 'type' debe ser uno de: ${SEARCH_EVENT_TYPES.join(", ")}`);
    }
    if (!this.enabled) return;
    const type = input.type as SearchEventType;
    this.deps.store.recordEvent({
      catalogue: input.catalogue,
      searchId,
      productId: input.productId,
      type,
      at: new Date(this.deps.clock.now()),
    });
    this.deps.log?.({ event: "search_event_recorded", type });
  }

  /** The catalogue's report over the last `days` days (1 to the retention). */
  async report(catalogue: string, days: number): Promise<SearchAnalyticsReport> {
    const longest = Math.max(1, this.deps.retentionDays);
    if (!Number.isInteger(days) || days < 1 || days > longest) {
      throw new InvalidInput(`El parámetro 'days' debe ser un entero entre 1 y ${longest}`);
    }
    const since = new Date(this.deps.clock.now() - days * DAY_MS);
    const report = this.enabled ? await this.deps.store.report(catalogue, since, REPORT_QUERIES) : NOTHING;
    return { days, since, ...report };
  }
}
