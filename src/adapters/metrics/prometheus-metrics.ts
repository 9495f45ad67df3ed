import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { systemTimers, withinMs } from "../../ports/timers.ts";
import type { VectorIndexStatus } from "../../ports/vector-index.ts";

export type MetricsEvent = Record<string, unknown>;

export interface PrometheusMetricsOptions {
  /** The service's version label, for sku_build_info. */
  version: string;
  /** Counts the products stored in each catalogue (the sku_products gauge); unset: the gauge is not exported. */
  countProducts?: () => Promise<{ catalogue: string; products: number }[]>;
  /**
   * The catalogues the `catalogue` label names (METRICS_CATALOGUES); every other is `other`, so the
   * label has a bounded number of values whatever the number of catalogues. Default: `default`.
   */
  labelledCatalogues?: readonly string[];
  /** A count younger than this is reused at the next scrape, in ms (default 60 s): counting scans the table. */
  productCountMaxAgeMs?: number;
  /** Process and runtime metrics (CPU, memory, file descriptors, event loop lag, GC); default true. */
  processMetrics?: boolean;
  /** The vector index now (read at scrapes): its size, and a build's progress. */
  vectorIndexStatus?: () => Promise<VectorIndexStatus>;
}

/** A scrape waits this long for the vector index's status (PGlite answers nothing while it builds). */
const INDEX_STATUS_WAIT_MS = 2_000;

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const STAGE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** A label value taken from an event: short lower-case words only, anything else is "other". */
const WORD = /^[a-z0-9][a-z0-9_.-]{0,31}$/;

/**
 * The service's Prometheus metrics, derived from the structured events the app already logs (the
 * logger hands every event to `observe`, whatever the log level). Labels only ever hold bounded
 * values: route patterns, methods, statuses, provider names and fixed outcomes; never a query,
 * a product's text, a username or a secret.
 *
 * The catalogue of a request (its log lines carry it) is a label too, but only the names configured
 * (`labelledCatalogues`): any other catalogue is `other`, a request outside any catalogue `none`.
 *
 * Events read (fields beyond these are ignored):
 * - `request` {method, route, status, ms, catalogue}: sku_http_request_duration_seconds
 * - `search` {translateMs, embedMs, searchMs, checkMs, generateMs, recommendedBy, mode, results}:
 *   sku_search_stage_duration_seconds, sku_search_recommendations_total, sku_searches_total
 * - `search_event_recorded` {type}: sku_search_events_total
 * - `provider_call` {provider, kind, outcome}: sku_provider_calls_total
 * - `generation_failed` {generator, fallback: true}: sku_provider_calls_total{outcome="fallback"}
 * - `query_cache` {result: "hit" | "miss", layer}: sku_query_cache_hits_total, sku_query_cache_misses_total
 * - `import_items` {outcome, count}: sku_import_items_total
 * Read at a scrape instead: sku_products (countProducts), sku_vector_index_bytes and
 * sku_vector_index_build_progress (vectorIndexStatus).
 */
export class PrometheusMetrics {
  readonly registry = new Registry();
  private readonly http: Histogram<"method" | "route" | "status" | "catalogue">;
  private readonly labelled: ReadonlySet<string>;
  private readonly stages: Histogram<"stage">;
  private readonly recommendations: Counter<"provider">;
  private readonly providerCalls: Counter<"provider" | "kind" | "outcome">;
  private readonly cacheHits: Counter<"layer">;
  private readonly cacheMisses: Counter;
  private readonly importItems: Counter<"outcome">;
  private readonly searches: Counter<"mode" | "outcome">;
  private readonly searchEvents: Counter<"type">;

  constructor(options: PrometheusMetricsOptions) {
    const registers = [this.registry];
    this.labelled = new Set(options.labelledCatalogues ?? ["default"]);
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: "sku_build_info",
      help: "Always 1; the version label names the running service's VERSION.",
      labelNames: ["version"],
      registers,
    }).set({ version: options.version }, 1);
    this.http = new Histogram({
      name: "sku_http_request_duration_seconds",
      help:
        "Time to answer HTTP requests, by method, route pattern, status and catalogue (METRICS_CATALOGUES by name, " +
        "other catalogues as other, none outside a catalogue); its _count is the number of requests.",
      labelNames: ["method", "route", "status", "catalogue"],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.stages = new Histogram({
      name: "sku_search_stage_duration_seconds",
      help:
        "Time of each stage of an answered search: translation (of a Spanish query, when on), embedding the " +
        "query (its cache included), retrieval (the search SQL), check (the results against the catalogue), generation.",
      labelNames: ["stage"],
      buckets: STAGE_BUCKETS,
      registers,
    });
    this.recommendations = new Counter({
      name: "sku_search_recommendations_total",
      help: 'Answered searches by the provider that wrote the recommendation ("none": nothing matched).',
      labelNames: ["provider"],
      registers,
    });
    this.providerCalls = new Counter({
      name: "sku_provider_calls_total",
      help:
        "Calls to model providers by provider, kind (embedding, generation) and outcome: ok, retried (answered " +
        "after retries), failed, cancelled (the request stopped waiting), fallback (a generator failed and the " +
        "next one in the chain took over).",
      labelNames: ["provider", "kind", "outcome"],
      registers,
    });
    this.cacheHits = new Counter({
      name: "sku_query_cache_hits_total",
      help: "Query embeddings found in the cache, by layer (memory, database).",
      labelNames: ["layer"],
      registers,
    });
    this.cacheMisses = new Counter({
      name: "sku_query_cache_misses_total",
      help: "Query embeddings not found in the cache (the embedder was asked).",
      registers,
    });
    this.importItems = new Counter({
      name: "sku_import_items_total",
      help: "Items of product imports, by outcome.",
      labelNames: ["outcome"],
      registers,
    });
    this.searches = new Counter({
      name: "sku_searches_total",
      help:
        'Answered searches by mode (semantic, hybrid, lexical) and outcome: "results", or "empty" when nothing in ' +
        "the catalogue matched (the relevance threshold, or the filters).",
      labelNames: ["mode", "outcome"],
      registers,
    });
    this.searchEvents = new Counter({
      name: "sku_search_events_total",
      help: "Clicks and conversions reported on search results (POST /events), by type; over sku_searches_total, the click-through rate.",
      labelNames: ["type"],
      registers,
    });
    const { vectorIndexStatus } = options;
    if (vectorIndexStatus) this.vectorIndexGauges(vectorIndexStatus);
    const { countProducts } = options;
    if (countProducts) {
      const maxAgeMs = options.productCountMaxAgeMs ?? 60_000;
      const labelOf = (catalogue: string) => this.catalogueLabel(catalogue);
      let counted: { values: Map<string, number> | null; at: number } | null = null;
      new Gauge({
        name: "sku_products",
        help:
          `Products stored, by catalogue (labelled as the request metrics are), counted at a scrape at most once ` +
          `every ${Math.round(maxAgeMs / 1000)} s; NaN when the count failed.`,
        labelNames: ["catalogue"],
        registers,
        async collect() {
          const now = performance.now();
          if (counted === null || now - counted.at >= maxAgeMs) {
            const values = await countProducts()
              .then((counts) => {
                const byLabel = new Map<string, number>();
                for (const { catalogue, products } of counts) {
                  const label = labelOf(catalogue);
                  byLabel.set(label, (byLabel.get(label) ?? 0) + products);
                }
                return byLabel;
              })
              .catch(() => null);
            counted = { values, at: now };
          }
          this.reset();
          if (counted.values === null) this.set({ catalogue: "default" }, Number.NaN);
          for (const [catalogue, products] of counted.values ?? []) this.set({ catalogue }, products);
        },
      });
    }
  }

  /**
   * sku_vector_index_bytes{kind} and sku_vector_index_build_progress, from one reading of the
   * status per scrape; a reading that fails or takes too long leaves the previous values.
   */
  private vectorIndexGauges(readStatus: () => Promise<VectorIndexStatus>): void {
    const registers = [this.registry];
    let reading: Promise<VectorIndexStatus | undefined> | undefined;
    const status = () => {
      reading ??= withinMs(
        systemTimers,
        INDEX_STATUS_WAIT_MS,
        readStatus().catch(() => undefined),
      ).finally(() => {
        reading = undefined;
      });
      return reading;
    };
    new Gauge({
      name: "sku_vector_index_bytes",
      help: "Size of the vector index on disk, by kind (bq, halfvec, vector); 0 while there is none (searches are exact).",
      labelNames: ["kind"],
      registers,
      async collect() {
        const now = await status();
        if (!now?.kind) return;
        this.reset();
        this.set({ kind: now.kind }, now.present && now.valid ? now.bytes : 0);
      },
    });
    new Gauge({
      name: "sku_vector_index_build_progress",
      help: "Share done (0 to 1) of a vector index build under way on the database server (pg_stat_progress_create_index), by the kind built; absent when none runs.",
      labelNames: ["kind"],
      registers,
      async collect() {
        const now = await status();
        if (now === undefined) return;
        this.reset();
        if (now.progress && now.kind) this.set({ kind: now.kind }, now.progress.fraction);
      },
    });
  }

  /** Updates the metrics an event stands for; any other event is ignored. */
  readonly observe = (event: MetricsEvent): void => {
    switch (event.event) {
      case "request":
        this.observeRequest(event);
        break;
      case "search":
        this.observeSearch(event);
        break;
      case "provider_call":
        this.providerCalls.inc({
          provider: word(event.provider),
          kind: word(event.kind),
          outcome: word(event.outcome),
        });
        break;
      case "generation_failed":
        if (event.fallback === true) {
          this.providerCalls.inc({ provider: providerOf(event.generator), kind: "generation", outcome: "fallback" });
        }
        break;
      case "query_cache":
        if (event.result === "hit") this.cacheHits.inc({ layer: word(event.layer) });
        else if (event.result === "miss") this.cacheMisses.inc();
        break;
      case "search_event_recorded":
        this.searchEvents.inc({ type: word(event.type) });
        break;
      case "import_items": {
        const count = typeof event.count === "number" && event.count > 0 ? event.count : 0;
        if (count > 0) this.importItems.inc({ outcome: word(event.outcome) }, count);
        break;
      }
    }
  };

  /** The exposition text and its content type, for GET /metrics. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private observeRequest(event: MetricsEvent): void {
    if (typeof event.ms !== "number") return;
    const method = typeof event.method === "string" && METHODS.has(event.method) ? event.method : "other";
    const route = typeof event.route === "string" && event.route !== "" ? event.route : "unmatched";
    const status = typeof event.status === "number" ? String(event.status) : "other";
    const catalogue = typeof event.catalogue === "string" ? this.catalogueLabel(event.catalogue) : "none";
    this.http.observe({ method, route, status, catalogue }, event.ms / 1000);
  }

  /** A catalogue as a label value: its name when METRICS_CATALOGUES lists it, else `other`. */
  private catalogueLabel(catalogue: string): string {
    return this.labelled.has(catalogue) ? catalogue : "other";
  }

  private observeSearch(event: MetricsEvent): void {
    const seconds = (value: unknown) => (typeof value === "number" ? value / 1000 : undefined);
    const stages: Record<string, unknown> = {
      translation: event.translateMs,
      embedding: event.embedMs,
      retrieval: event.searchMs,
      check: event.checkMs,
    };
    if (event.recommendedBy) stages.generation = event.generateMs;
    for (const [stage, ms] of Object.entries(stages)) {
      const value = seconds(ms);
      if (value !== undefined) this.stages.observe({ stage }, value);
    }
    const provider =
      typeof event.recommendedBy === "string" ? word(event.recommendedBy.split(" - ")[0]?.toLowerCase()) : "none";
    this.recommendations.inc({ provider });
    if (typeof event.results === "number") {
      this.searches.inc({ mode: word(event.mode), outcome: event.results > 0 ? "results" : "empty" });
    }
  }
}

function word(value: unknown): string {
  return typeof value === "string" && WORD.test(value) ? value : "other";
}

/** "openai/gpt-4.1-mini" → "openai": a generator's name starts with its provider. */
function providerOf(generator: unknown): string {
  return typeof generator === "string" ? word(generator.split("/")[0]?.toLowerCase()) : "other";
}
