import { afterAll, describe, expect, test } from "bun:test";
import { metricsApp } from "../../../../src/adapters/http/metrics/metrics-routes.ts";
import { PrometheusMetrics } from "../../../../src/adapters/metrics/prometheus-metrics.ts";
import { callApp } from "../../../support/app-client.ts";
import { createHarness, PASSWORD, USERNAME } from "../harness.ts";

const TOKEN = "token-de-metricas-0123456789";
const PRODUCT = { name: "Cafetera secreta", description: "Espresso con espumador", category: "cocina" };
const scrape = { headers: { authorization: `Bearer ${TOKEN}` } };

describe("GET /metrics on the app", () => {
  test("is not there unless configured", async () => {
    const h = await createHarness();
    expect((await h.call("GET", "/metrics")).status).toBe(404);
  });

  test("with METRICS_TOKEN it asks for that bearer token", async () => {
    const h = await createHarness({ metricsToken: TOKEN });
    for (const authorization of [undefined, "Bearer otro-token-0123456789", `Basic ${btoa(`x:${TOKEN}`)}`, TOKEN]) {
      const response = await h.call("GET", "/metrics", authorization ? { headers: { authorization } } : {});
      expect(response.status).toBe(401);
      expect(response.json.detail).toContain("METRICS_TOKEN");
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
    }
    const response = await h.call("GET", "/metrics", scrape);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  test("counts requests by method, route pattern and status, the search stages, and products stored", async () => {
    const h = await createHarness({ metricsToken: TOKEN });
    await h.call("POST", "/auth/login", { form: { username: USERNAME, password: PASSWORD } });
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    await h.call("POST", "/products/search", { token: h.token, json: { query: "consulta privadísima" } });
    await h.call("GET", "/productos/12345");
    const { text } = await h.call("GET", "/metrics", scrape);

    const count = (labels: string) => `sku_http_request_duration_seconds_count{${labels}} 1`;
    expect(text).toContain(count('method="POST",route="/products/search",status="200",catalogue="default"'));
    expect(text).toContain(count('method="POST",route="/products/",status="201",catalogue="default"'));
    expect(text).toContain(count('method="POST",route="/auth/login",status="200",catalogue="none"'));
    expect(text).toContain(count('method="GET",route="unmatched",status="404",catalogue="none"'));
    expect(text).toMatch(
      /sku_http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/products\/search"/,
    );
    for (const stage of ["embedding", "retrieval", "generation"]) {
      expect(text).toContain(`sku_search_stage_duration_seconds_count{stage="${stage}"} 1`);
    }
    expect(text).toContain('sku_search_recommendations_total{provider="fake"} 1');
    expect(text).toContain('sku_products{catalogue="default"} 1');
    expect(text).toContain('sku_build_info{version="1.0.0"} 1');

    await h.call("POST", "/products/bulk", { token: h.token, json: [PRODUCT, { name: "incompleto" }] });
    const afterImport = (await h.call("GET", "/metrics", scrape)).text;
    expect(afterImport).toContain('sku_import_items_total{outcome="created"} 1');
    expect(afterImport).toContain('sku_import_items_total{outcome="failed"} 1');

    // Never a query, a product's text, a username, a path with an id, or a secret.
    for (const secret of ["privadísima", "consulta", "Cafetera secreta", USERNAME, "12345", TOKEN, h.token]) {
      expect(text).not.toContain(secret);
    }
  });

  test("counts searches by mode and whether they found anything, and the clicks and conversions on them", async () => {
    const h = await createHarness({
      metricsToken: TOKEN,
      ranking: { categoryBoost: 0.4, minScore: 0.3, relevantShare: 0 },
    });
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    const found = await h.call("POST", "/products/search", { token: h.token, json: { query: "cafetera espresso" } });
    await h.call("POST", "/products/search", {
      token: h.token,
      json: { query: "consulta privadísima", mode: "hybrid" },
    });
    for (const type of ["click", "click", "conversion"]) {
      const event = { search_id: found.json.search_id, product_id: found.json.results[0].id, type };
      expect((await h.call("POST", "/events", { token: h.token, json: event })).status).toBe(202);
    }
    const { text } = await h.call("GET", "/metrics", scrape);
    expect(text).toContain('sku_searches_total{mode="semantic",outcome="results"} 1');
    expect(text).toContain('sku_searches_total{mode="hybrid",outcome="empty"} 1');
    expect(text).toContain('sku_search_events_total{type="click"} 2');
    expect(text).toContain('sku_search_events_total{type="conversion"} 1');
    for (const secret of ["privadísima", "consulta", "cafetera espresso", found.json.search_id]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe("the catalogue label", () => {
  test("names the catalogues METRICS_CATALOGUES lists; every other is `other`, however many there are", async () => {
    const h = await createHarness({ metricsToken: TOKEN });
    for (const name of ["tienda-norte", "tienda-sur", "tienda-este"]) {
      expect((await h.call("POST", "/catalogues", { token: h.token, json: { name } })).status).toBe(201);
      await h.call("POST", `/catalogues/${name}/products/`, { token: h.token, json: PRODUCT });
    }
    await h.call("POST", "/products/", { token: h.token, json: PRODUCT });
    const { text } = await h.call("GET", "/metrics", scrape);
    const route = "/catalogues/:catalogue/products";
    expect(text).toContain(
      `sku_http_request_duration_seconds_count{method="POST",route="${route}",status="201",catalogue="other"} 3`,
    );
    expect(text).toContain('sku_products{catalogue="default"} 1');
    expect(text).toContain('sku_products{catalogue="other"} 3');
    // No catalogue's name but the listed one is ever a label value.
    expect(text).not.toContain("tienda-");
    // Its log lines carry the catalogue all the same.
    expect(h.logs.filter((line) => line.event === "request" && line.catalogue === "tienda-sur")).toHaveLength(1);
  });
});

describe("GET /metrics on a port of its own (METRICS_PORT)", () => {
  const metrics = new PrometheusMetrics({ version: "2.0.0", processMetrics: false });

  test("serves the metrics and nothing else, with the token when one is set", async () => {
    const open = metricsApp({ metrics });
    const response = await callApp(open, "GET", "/metrics");
    expect(response.status).toBe(200);
    expect(response.text).toContain('sku_build_info{version="2.0.0"} 1');
    expect(await callApp(open, "GET", "/")).toMatchObject({ status: 404, json: { detail: "No encontrado" } });

    const guarded = metricsApp({ metrics, token: TOKEN });
    expect((await callApp(guarded, "GET", "/metrics")).status).toBe(401);
    expect((await callApp(guarded, "GET", "/metrics", scrape)).status).toBe(200);
  });

  const listening = metricsApp({ metrics }).listen({ hostname: "127.0.0.1", port: 0 });
  afterAll(() => listening.stop());

  test("answers a scraper over the network", async () => {
    const response = await fetch(`http://127.0.0.1:${listening.server?.port}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("sku_build_info");
  });
});
