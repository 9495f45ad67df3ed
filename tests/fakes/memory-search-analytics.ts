import type {
  AnalyticsReport,
  QueryFigures,
  SearchAnalyticsStore,
  SearchEventRecord,
  SearchRecord,
} from "../../src/ports/search-analytics.ts";

/** Search analytics in memory, stored at once, reported as the SQL store reports them (search-analytics-store.ts). */
export class MemorySearchAnalytics implements SearchAnalyticsStore {
  readonly searches: SearchRecord[] = [];
  readonly events: SearchEventRecord[] = [];

  recordSearch(record: SearchRecord): void {
    this.searches.push(record);
  }

  recordEvent(record: SearchEventRecord): void {
    this.events.push(record);
  }

  async report(catalogue: string, since: Date, limit: number): Promise<AnalyticsReport> {
    const recent = this.searches.filter((search) => search.catalogue === catalogue && search.at >= since);
    const byQuery = new Map<string, QueryFigures>();
    for (const search of recent) {
      const figures = byQuery.get(search.query) ?? {
        query: search.query,
        searches: 0,
        noResults: 0,
        clickedSearches: 0,
        clicks: 0,
        conversions: 0,
      };
      const events = this.events.filter(
        (event) => event.searchId === search.searchId && event.catalogue === search.catalogue,
      );
      const clicks = events.filter((event) => event.type === "click").length;
      figures.searches++;
      if (search.results === 0) figures.noResults++;
      if (clicks > 0) figures.clickedSearches++;
      figures.clicks += clicks;
      figures.conversions += events.length - clicks;
      byQuery.set(search.query, figures);
    }
    const all = [...byQuery.values()];
    const sum = (pick: (figures: QueryFigures) => number) => all.reduce((total, figures) => total + pick(figures), 0);
    return {
      searches: sum((figures) => figures.searches),
      noResultSearches: sum((figures) => figures.noResults),
      clickedSearches: sum((figures) => figures.clickedSearches),
      clicks: sum((figures) => figures.clicks),
      conversions: sum((figures) => figures.conversions),
      topQueries: [...all].sort((a, b) => b.searches - a.searches || a.query.localeCompare(b.query)).slice(0, limit),
      noResultQueries: all
        .filter((figures) => figures.noResults > 0)
        .sort((a, b) => b.noResults - a.noResults || a.query.localeCompare(b.query))
        .slice(0, limit),
    };
  }
}
