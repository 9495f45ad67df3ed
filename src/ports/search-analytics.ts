import type { SearchMode } from "../domain/hybrid-ranking.ts";

/** What a shopper did with a search's result: opened it, or bought it. */
export const SEARCH_EVENT_TYPES = ["click", "conversion"] as const;
export type SearchEventType = (typeof SEARCH_EVENT_TYPES)[number];

/** One answered search as the analytics keep it: nothing about who searched. */
export interface SearchRecord {
  searchId: string;
  catalogue: string;
  /** The query as the shop sent it, in lower case with its spaces collapsed (how queries are grouped). */
  query: string;
  mode: SearchMode;
  /** How many products it answered (0: nothing matched). */
  results: number;
  at: Date;
}

/** A click or conversion on a product a search answered. */
export interface SearchEventRecord {
  /** The catalogue it was reported in: it counts only for a search of that catalogue. */
  catalogue: string;
  searchId: string;
  productId: number;
  type: SearchEventType;
  at: Date;
}

/** One query's figures over a period. */
export interface QueryFigures {
  query: string;
  searches: number;
  /** Searches of it that answered no product. */
  noResults: number;
  /** Searches of it with at least one click (the click-through rate is this over searches). */
  clickedSearches: number;
  clicks: number;
  conversions: number;
}

export interface AnalyticsReport {
  searches: number;
  noResultSearches: number;
  clickedSearches: number;
  clicks: number;
  conversions: number;
  /** The most searched queries, most first (then by query). */
  topQueries: QueryFigures[];
  /** The most searched queries that answered nothing, most first. */
  noResultQueries: QueryFigures[];
}

/**
 * Where searches and their clicks are kept. Recording never holds up an answer: the adapter keeps
 * them and stores them behind, in batches (a record not yet stored when the process dies is lost:
 * they are statistics).
 */
export interface SearchAnalyticsStore {
  recordSearch(record: SearchRecord): void;
  recordEvent(record: SearchEventRecord): void;
  /** The catalogue's figures over the searches since `since` (and the events of those searches); `limit` queries per list. */
  report(catalogue: string, since: Date, limit: number): Promise<AnalyticsReport>;
}
