import { describe, expect, test } from "bun:test";
import { PrometheusMetrics } from "../../../src/adapters/metrics/prometheus-metrics.ts";
import type { VectorIndexStatus } from "../../../src/ports/vector-index.ts";

async function exposition(metrics: PrometheusMetrics): Promise<string> {
  return (await metrics.render()).body;
}

describe("PrometheusMetrics", () => {
  test("provider calls by provider, kind and outcome; a chain hand-over is a fallback of the link that failed", async () => {
    const metrics = new PrometheusMetrics({ version: "1", processMetrics: false });
    const call = (provider: string, kind: string, outcome: string) =>
      metrics.observe({ event: "provider_call", provider, kind, outcome, attempts: 1, ms: 10 });
    call("openai", "embedding", "ok");
    call("openai", "embedding", "ok");
    call("openai", "generation", "retried");
    call("anthropic", "generation", "failed");
    call("google", "generation", "cancelled");
    metrics.observe({ event: "generation_failed", generator: "anthropic/claude-haiku-4-5", fallback: true });
    metrics.observe({ event: "generation_failed", generator: "local/plantilla", fallback: false });
    metrics.observe({ event: "provider_retry", provider: "openai", attempt: 1 });
    const text = await exposition(metrics);
    expect(text).toContain('sku_provider_calls_total{provider="openai",kind="embedding",outcome="ok"} 2');
    expect(text).toContain('sku_provider_calls_total{provider="openai",kind="generation",outcome="retried"} 1');
    expect(text).toContain('sku_provider_calls_total{provider="anthropic",kind="generation",outcome="failed"} 1');
    expect(text).toContain('sku_provider_calls_total{provider="google",kind="generation",outcome="cancelled"} 1');
    expect(text).toContain('sku_provider_calls_total{provider="anthropic",kind="generation",outcome="fallback"} 1');
    expect(text).not.toContain('provider="local"');
  });

  test("query cache hits by layer and misses; search stages; who wrote the recommendations", async () => {
    const metrics = new PrometheusMetrics({ version: "1", processMetrics: false });
    metrics.observe({ event: "query_cache", result: "hit", layer: "memory" });
    metrics.observe({ event: "query_cache", result: "hit", layer: "database" });
    metrics.observe({ event: "query_cache", result: "miss" });
    metrics.observe({ event: "query_cache", result: "miss" });
    metrics.observe({
      event: "search",
      results: 3,
      translateMs: 2,
      embedMs: 12,
      searchMs: 30,
      checkMs: 1,
      generateMs: 900,
      recommendedBy: "OPENAI - gpt-4.1-mini",
    });
    metrics.observe({
      event: "search",
      results: 0,
      embedMs: 2,
      searchMs: 3,
      checkMs: 0,
      generateMs: 0,
      recommendedBy: null,
    });
    const text = await exposition(metrics);
    expect(text).toContain('sku_query_cache_hits_total{layer="memory"} 1');
    expect(text).toContain('sku_query_cache_hits_total{layer="database"} 1');
    expect(text).toContain("sku_query_cache_misses_total 2");
    expect(text).toContain('sku_search_stage_duration_seconds_count{stage="embedding"} 2');
    expect(text).toContain('sku_search_stage_duration_seconds_count{stage="retrieval"} 2');
    expect(text).toContain('sku_search_stage_duration_seconds_count{stage="generation"} 1');
    expect(text).toContain('sku_search_stage_duration_seconds_count{stage="check"} 2');
    // Only the search that had a translator has a translation stage.
    expect(text).toContain('sku_search_stage_duration_seconds_count{stage="translation"} 1');
    expect(text).toContain('sku_search_stage_duration_seconds_sum{stage="translation"} 0.002');
    expect(text).toContain('sku_search_stage_duration_seconds_sum{stage="generation"} 0.9');
    expect(text).toContain('sku_search_stage_duration_seconds_bucket{le="1",stage="generation"} 1');
    expect(text).toContain('sku_search_recommendations_total{provider="openai"} 1');
    expect(text).toContain('sku_search_recommendations_total{provider="none"} 1');
  });

  test("import items by outcome", async () => {
    const metrics = new PrometheusMetrics({ version: "1", processMetrics: false });
    metrics.observe({ event: "import_items", outcome: "created", count: 40 });
    metrics.observe({ event: "import_items", outcome: "rejected", count: 2 });
    metrics.observe({ event: "import_items", outcome: "created", count: 10 });
    const text = await exposition(metrics);
    expect(text).toContain('sku_import_items_total{outcome="created"} 50');
    expect(text).toContain('sku_import_items_total{outcome="rejected"} 2');
  });

  test("label values from events are bounded: anything odd becomes 'other'", async () => {
    const metrics = new PrometheusMetrics({ version: "1", processMetrics: false });
    metrics.observe({ event: "provider_call", provider: "a query with spaces", kind: "x".repeat(40), outcome: "ok" });
    metrics.observe({ event: "request", method: "BREW", route: "/", status: 418, ms: 1 });
    metrics.observe({ event: "import_items", outcome: 'drop"table', count: 1 });
    const text = await exposition(metrics);
    expect(text).toContain('sku_provider_calls_total{provider="other",kind="other",outcome="ok"} 1');
    expect(text).toContain(
      'sku_http_request_duration_seconds_count{method="other",route="/",status="418",catalogue="none"} 1',
    );
    expect(text).toContain('sku_import_items_total{outcome="other"} 1');
  });

  test("the products gauge is counted at a scrape, reused while young, NaN when counting fails", async () => {
    let count = 5;
    let calls = 0;
    const metrics = new PrometheusMetrics({
      version: "1",
      processMetrics: false,
      productCountMaxAgeMs: 60_000,
      countProducts: async () => {
        calls++;
        return [{ catalogue: "default", products: count }];
      },
    });
    expect(await exposition(metrics)).toContain('sku_products{catalogue="default"} 5');
    count = 6;
    expect(await exposition(metrics)).toContain('sku_products{catalogue="default"} 5');
    expect(calls).toBe(1);

    const failing = new PrometheusMetrics({
      version: "1",
      processMetrics: false,
      productCountMaxAgeMs: 0,
      countProducts: async () => {
        throw new Error("database down");
      },
    });
    // prom-client writes "Nan", which Prometheus reads as NaN (its float parser ignores case).
    expect(await exposition(failing)).toMatch(/^sku_products\{catalogue="default"\} nan$/im);
  });

  test("the vector index's size by kind, and a build's progress while one runs (absent otherwise)", async () => {
    const status: VectorIndexStatus = {
      kind: "bq",
      column: "embedding_bits",
      availability: "automatic",
      present: true,
      valid: false,
      outdated: false,
      bytes: 1234,
      estimatedRows: 100_000,
      progress: { phase: "building index: loading tuples", fraction: 0.25, tuplesDone: 25_000 },
    };
    const metrics = new PrometheusMetrics({
      version: "1",
      processMetrics: false,
      vectorIndexStatus: async () => status,
    });
    let text = await exposition(metrics);
    expect(text).toMatch(/^sku_vector_index_build_progress\{kind="bq"\} 0\.25$/m);
    expect(text).toMatch(/^sku_vector_index_bytes\{kind="bq"\} 0$/m);

    Object.assign(status, { valid: true, progress: undefined });
    text = await exposition(metrics);
    expect(text).not.toMatch(/^sku_vector_index_build_progress /m);
    expect(text).toMatch(/^sku_vector_index_bytes\{kind="bq"\} 1234$/m);
  });

  test("process and runtime metrics are exported", async () => {
    const text = await exposition(new PrometheusMetrics({ version: "1" }));
    for (const name of [
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
      "process_open_fds",
      "process_start_time_seconds",
      "nodejs_eventloop_lag_seconds",
      "nodejs_heap_size_used_bytes",
    ]) {
      expect(text).toMatch(new RegExp(`^${name} `, "m"));
    }
  });
});
