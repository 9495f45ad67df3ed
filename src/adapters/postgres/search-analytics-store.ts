import { WriteBehindSchedule } from "../../lib/write-behind.ts";
import type {
  AnalyticsReport,
  QueryFigures,
  SearchAnalyticsStore,
  SearchEventRecord,
  SearchRecord,
} from "../../ports/search-analytics.ts";
import { poolsOf, type ReadWriteClients } from "./read-write-clients.ts";
import type { SqlClient } from "./sql-client.ts";

export interface PostgresSearchAnalyticsOptions {
  /** Searches and events older than this are deleted, in the background. */
  retentionDays: number;
  /** How long a record waits for others to be stored with it, in ms (default 200). */
  flushDelayMs?: number;
  /** Most records stored by one statement (default 500); that many waiting are stored at once. */
  maxBatch?: number;
  /** Most records waiting to be stored (default 10,000); past it new ones are dropped (the database is not keeping up). */
  maxPending?: number;
  /** One prune in the background every this many searches stored (default 1,000). */
  pruneEvery?: number;
  /** Receives `analytics_failed` when storing or pruning fails (no answer ever sees it). */
  log?: (event: Record<string, unknown>) => void;
  /** False while the database takes no writes (a standby, a primary lost): then nothing is queued. */
  writable?: () => boolean;
}

interface FiguresRow {
  query: string;
  searches: number | string;
  no_results: number | string;
  clicked: number | string;
  clicks: number | string;
  conversions: number | string;
}

/**
 * Search analytics in the `searches` and `search_events` tables, written behind the answers as the
 * query cache writes its entries (query-embedding-cache.ts): a record is only queued, and queued
 * records are stored together, one statement per table and batch, `flushDelayMs` after the first
 * of them or as soon as `maxBatch` wait. A failed store is logged and its records dropped: they are
 * statistics. Records older than `retentionDays` are deleted after the process's first store and
 * then every `pruneEvery` searches stored, never on an answer's path.
 */
export class PostgresSearchAnalytics implements SearchAnalyticsStore {
  private searches: SearchRecord[] = [];
  private events: SearchEventRecord[] = [];
  private readonly schedule: WriteBehindSchedule;
  private dropped = 0;
  private stored = 0;
  private pruning: Promise<number> | null = null;
  private readonly reads: SqlClient;
  private readonly writes: SqlClient;

  constructor(
    db: SqlClient | ReadWriteClients,
    private readonly options: PostgresSearchAnalyticsOptions,
  ) {
    ({ reads: this.reads, writes: this.writes } = poolsOf(db));
    this.schedule = new WriteBehindSchedule(() => this.storePending(), options.flushDelayMs ?? 200);
  }

  recordSearch(record: SearchRecord): void {
    if (!this.accepts()) return;
    this.searches.push(record);
    this.schedule.queued(this.waiting >= this.maxBatch);
  }

  recordEvent(record: SearchEventRecord): void {
    if (!this.accepts()) return;
    this.events.push(record);
    this.schedule.queued(this.waiting >= this.maxBatch);
  }

  /** Stores what is queued now; resolves when it is stored (or dropped). */
  flush(): Promise<void> {
    return this.schedule.flush();
  }

  /** Stores what is queued and waits for a background prune: before closing the database. */
  async close(): Promise<void> {
    await this.flush();
    await this.pruning;
  }

  /** Deletes the searches and events older than the retention; returns how many. */
  async prune(): Promise<number> {
    const [searches, events] = await Promise.all(
      [
        "DELETE FROM searches WHERE searched_at < now() - make_interval(days => $1)",
        "DELETE FROM search_events WHERE happened_at < now() - make_interval(days => $1)",
      ].map((sql) => this.writes.query(`${sql} RETURNING 1`, [this.options.retentionDays])),
    );
    return (searches?.length ?? 0) + (events?.length ?? 0);
  }

  async report(catalogue: string, since: Date, limit: number): Promise<AnalyticsReport> {
    // Each query's searches since `since` (grouped as recorded: lower case, spaces collapsed), with
    // the clicks and conversions of those searches reported in the same catalogue (another
    // catalogue's credential may send a search id of this one: its events count for nothing here).
    const perQuery = `
      WITH recent AS (
        SELECT search_id, query, results FROM searches WHERE catalogue = $1 AND searched_at >= $2
      ),
      acted AS (
        SELECT e.search_id, count(*) FILTER (WHERE e.type = 'click') AS clicks,
               count(*) FILTER (WHERE e.type = 'conversion') AS conversions
        FROM search_events e JOIN recent USING (search_id) WHERE e.catalogue = $1 GROUP BY e.search_id
      )
      SELECT recent.query, count(*) AS searches, count(*) FILTER (WHERE recent.results = 0) AS no_results,
             count(*) FILTER (WHERE acted.clicks > 0) AS clicked,
             coalesce(sum(acted.clicks), 0) AS clicks, coalesce(sum(acted.conversions), 0) AS conversions
      FROM recent LEFT JOIN acted USING (search_id) GROUP BY recent.query`;
    const [totals, top, failing] = await Promise.all([
      this.reads.query<Omit<FiguresRow, "query">>(
        `SELECT coalesce(sum(searches), 0) AS searches, coalesce(sum(no_results), 0) AS no_results,
                coalesce(sum(clicked), 0) AS clicked, coalesce(sum(clicks), 0) AS clicks,
                coalesce(sum(conversions), 0) AS conversions
         FROM (${perQuery}) AS q`,
        [catalogue, since],
      ),
      this.reads.query<FiguresRow>(`${perQuery} ORDER BY count(*) DESC, recent.query LIMIT $3`, [
        catalogue,
        since,
        limit,
      ]),
      this.reads.query<FiguresRow>(
        `SELECT * FROM (${perQuery}) AS q WHERE no_results > 0 ORDER BY no_results DESC, query LIMIT $3`,
        [catalogue, since, limit],
      ),
    ]);
    const total = totals[0];
    return {
      searches: Number(total?.searches ?? 0),
      noResultSearches: Number(total?.no_results ?? 0),
      clickedSearches: Number(total?.clicked ?? 0),
      clicks: Number(total?.clicks ?? 0),
      conversions: Number(total?.conversions ?? 0),
      topQueries: top.map(figuresOf),
      noResultQueries: failing.map(figuresOf),
    };
  }

  /** Whether a record may be queued: the database takes writes and the queue is not full. */
  private accepts(): boolean {
    if (this.options.writable?.() === false) return false;
    if (this.waiting >= (this.options.maxPending ?? 10_000)) {
      this.dropped++;
      return false;
    }
    return true;
  }

  private get waiting(): number {
    return this.searches.length + this.events.length;
  }

  private get maxBatch(): number {
    return this.options.maxBatch ?? 500;
  }

  private async storePending(): Promise<void> {
    if (this.dropped > 0) {
      this.options.log?.({
        event: "analytics_failed",
        operation: "record",
        dropped: this.dropped,
        error: "queue full",
      });
      this.dropped = 0;
    }
    while (this.searches.length > 0 || this.events.length > 0) {
      const searches = this.searches.splice(0, this.maxBatch);
      const events = this.events.splice(0, this.maxBatch);
      try {
        await this.insert(searches, events);
        this.countStored(searches.length);
      } catch (error) {
        this.options.log?.({
          event: "analytics_failed",
          operation: "record",
          searches: searches.length,
          events: events.length,
          error,
        });
      }
    }
  }

  private async insert(searches: readonly SearchRecord[], events: readonly SearchEventRecord[]): Promise<void> {
    await this.writes.transaction(async (tx) => {
      if (searches.length > 0) {
        await tx.query(
          `INSERT INTO searches (search_id, catalogue, query, mode, results, searched_at)
           SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[])
           ON CONFLICT (search_id) DO NOTHING`,
          [
            searches.map((search) => search.searchId),
            searches.map((search) => search.catalogue),
            searches.map((search) => search.query),
            searches.map((search) => search.mode),
            searches.map((search) => search.results),
            searches.map((search) => search.at.toISOString()),
          ],
        );
      }
      if (events.length > 0) {
        await tx.query(
          `INSERT INTO search_events (catalogue, search_id, product_id, type, happened_at)
           SELECT * FROM unnest($1::text[], $2::uuid[], $3::bigint[], $4::text[], $5::timestamptz[])`,
          [
            events.map((event) => event.catalogue),
            events.map((event) => event.searchId),
            events.map((event) => event.productId),
            events.map((event) => event.type),
            events.map((event) => event.at.toISOString()),
          ],
        );
      }
    });
  }

  /** Prunes after the first store of the process and then every `pruneEvery` searches stored. */
  private countStored(count: number): void {
    const every = this.options.pruneEvery ?? 1_000;
    const before = this.stored === 0 ? -1 : Math.floor(this.stored / every);
    this.stored += count;
    if (Math.floor(this.stored / every) > before && this.pruning === null) {
      this.pruning = this.prune()
        .catch((error) => {
          this.options.log?.({ event: "analytics_failed", operation: "prune", error });
          return 0;
        })
        .finally(() => {
          this.pruning = null;
        });
    }
  }
}

function figuresOf(row: FiguresRow): QueryFigures {
  return {
    query: row.query,
    searches: Number(row.searches),
    noResults: Number(row.no_results),
    clickedSearches: Number(row.clicked),
    clicks: Number(row.clicks),
    conversions: Number(row.conversions),
  };
}
