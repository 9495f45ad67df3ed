/**
 * A client of the service as a user would write it from the OpenAPI document alone: the types
 * openapi-typescript generates from it (dist/openapi-client/schema.ts) and openapi-fetch. It calls
 * every operation, passing what one answer gives to the next (a created product's id to its
 * path), so `tsc -p scripts/openapi-client` proves the document's types fit together. Type-checked
 * by scripts/check-openapi-client.ts (`bun run lint:openapi`); `EveryOperation` makes an operation
 * without its call here an error.
 */
import createClient from "openapi-fetch";
import type { paths } from "../../dist/openapi-client/schema.ts";

type Method = "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace";

/** The methods a path has (openapi-typescript writes `method?: never` for the others). */
type MethodsOf<Item> = {
  [M in Method & keyof Item]-?: [NonNullable<Item[M]>] extends [never] ? never : M;
}[Method & keyof Item];

/** A call for each operation of the document. */
export type EveryOperation = { [Path in keyof paths]: { [M in MethodsOf<paths[Path]>]: () => Promise<unknown> } };

/** Every operation, called in an order that makes sense (log in, create, read, change, search, delete). */
export function everyOperation(baseUrl: string, login: { username: string; password: string }, metricsToken: string) {
  // The JSON answers (the search also streams as text/event-stream; GET /metrics is text).
  const client = createClient<paths, `${string}/json`>({ baseUrl });
  const text = createClient<paths, "text/plain">({ baseUrl });
  let token = "";
  let productId = 0;
  let jobId = 0;
  let keyId = "";
  let apiKey = "";
  let catalogue = "";
  let catalogueProductId = 0;
  const authorized = () => ({ Authorization: `Bearer ${token}` });
  const product = { name: "Cafetera espresso", description: "Cafetera de 15 bares", category: "cocina" };

  const calls = {
    "/": { get: () => client.GET("/") },
    "/health/live": { get: () => client.GET("/health/live") },
    "/health/ready": { get: () => client.GET("/health/ready") },
    "/auth/login": {
      post: async () => {
        const { data } = await client.POST("/auth/login", {
          body: login,
          bodySerializer: ({ username, password }) => new URLSearchParams({ username, password }),
        });
        if (data) token = data.access_token;
        return data?.expires_in;
      },
    },
    "/products/": {
      post: async () => {
        const { data, response } = await client.POST("/products/", {
          headers: { ...authorized(), "idempotency-key": "alta-cafetera-1" },
          body: { ...product, sku: "CAF-15" },
        });
        if (data) productId = data.id;
        return response.headers.get("Idempotent-Replayed");
      },
      get: async () => {
        const { data } = await client.GET("/products/", {
          headers: authorized(),
          params: { query: { limit: 20, order: "newest", category: ["cocina", "hogar"] } },
        });
        const next: string | null | undefined = data?.next_cursor;
        return next ? client.GET("/products/", { headers: authorized(), params: { query: { cursor: next } } }) : data;
      },
    },
    "/products/categories": {
      get: async () => {
        const { data } = await client.GET("/products/categories", { headers: authorized() });
        const counts: number[] = data?.categories.map((category) => category.products) ?? [];
        return counts;
      },
    },
    "/products/{id}": {
      get: () => client.GET("/products/{id}", { headers: authorized(), params: { path: { id: productId } } }),
      patch: () =>
        client.PATCH("/products/{id}", {
          headers: authorized(),
          params: { path: { id: productId } },
          body: { sku: null },
        }),
      put: () =>
        client.PUT("/products/{id}", { headers: authorized(), params: { path: { id: productId } }, body: product }),
      delete: () => client.DELETE("/products/{id}", { headers: authorized(), params: { path: { id: productId } } }),
    },
    "/products/search": {
      post: async () => {
        const { data, error } = await client.POST("/products/search", {
          headers: authorized(),
          body: { query: "algo para hacer café", limit: 5, category: "cocina", mode: "hybrid", alpha: 0.75 },
        });
        if (error) return error.detail;
        // No body: the 204 of a reconnect to an ended event stream (not asked for here).
        if (!data) return undefined;
        const cited: number[] = data.cited_ids;
        const first = data.results.find((result) => cited.includes(result.id));
        return first && client.GET("/products/{id}", { headers: authorized(), params: { path: { id: first.id } } });
      },
      get: async () => {
        const { data } = await client.GET("/products/search", {
          headers: authorized(),
          params: { query: { query: "cafetera", limit: 3, category: ["cocina"], mode: "semantic" } },
        });
        const scores: number[] = data?.results.map((result) => result.score) ?? [];
        return scores;
      },
    },
    "/products/synonyms": {
      put: async () => {
        const { data } = await client.PUT("/products/synonyms", {
          headers: authorized(),
          body: { synonyms: [["cafetera", "máquina de café"]] },
        });
        return data?.synonyms.length;
      },
      get: async () => {
        const { data } = await client.GET("/products/synonyms", { headers: authorized() });
        const sets: string[][] = data?.synonyms ?? [];
        return sets;
      },
    },
    "/events": {
      post: async () => {
        // A click on the first result of a search, with that search's id.
        const { data } = await client.POST("/products/search", { headers: authorized(), body: { query: "cafetera" } });
        const first = data?.results[0];
        if (!data || !first) return undefined;
        const { response } = await client.POST("/events", {
          headers: authorized(),
          body: { search_id: data.search_id, product_id: first.id, type: "click" },
        });
        return response.status;
      },
    },
    "/analytics": {
      get: async () => {
        const { data } = await client.GET("/analytics", { headers: authorized(), params: { query: { days: 7 } } });
        const rates: number[] = data?.top_queries.map((query) => query.click_through_rate) ?? [];
        return [data?.no_result_searches, rates];
      },
    },
    "/products/bulk": {
      post: async () => {
        const sent = { body: [product, { ...product, sku: "CAF-16" }] };
        const { data } = await client.POST("/products/bulk", { headers: authorized(), ...sent });
        const counts: number | undefined = data?.counts.created;
        // A job at once (202 with its Location): followed below.
        const job = await client.POST("/products/bulk", {
          headers: { ...authorized(), prefer: "respond-async" },
          ...sent,
        });
        if (job.data && "status" in job.data) jobId = job.data.id;
        return [counts, job.response.headers.get("Location")];
      },
    },
    "/jobs/{id}": {
      get: async () => {
        const { data } = await client.GET("/jobs/{id}", {
          headers: authorized(),
          params: { path: { id: jobId }, query: { limit: 100 } },
        });
        const next: string | null | undefined = data?.next_cursor;
        const pending: number | undefined = data?.counts.pending;
        return next
          ? client.GET("/jobs/{id}", {
              headers: authorized(),
              params: { path: { id: jobId }, query: { cursor: next } },
            })
          : pending;
      },
    },
    "/catalogues": {
      post: async () => {
        const { data } = await client.POST("/catalogues", { headers: authorized(), body: { name: "tienda-norte" } });
        if (data) catalogue = data.name;
        return data?.products;
      },
      get: async () => {
        const { data } = await client.GET("/catalogues", { headers: authorized() });
        const counts: number[] = data?.catalogues.map((listed) => listed.products) ?? [];
        return counts;
      },
    },
    // The same operations as /products…, inside the catalogue made above.
    "/catalogues/{catalogue}/products": {
      post: async () => {
        const { data } = await client.POST("/catalogues/{catalogue}/products", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { ...product, sku: "CAF-15" },
        });
        if (data) catalogueProductId = data.id;
        return data?.sku;
      },
      get: async () => {
        const { data } = await client.GET("/catalogues/{catalogue}/products", {
          headers: authorized(),
          params: { path: { catalogue }, query: { limit: 5 } },
        });
        const next: string | null | undefined = data?.next_cursor;
        return next;
      },
    },
    "/catalogues/{catalogue}/products/synonyms": {
      put: async () => {
        const { data } = await client.PUT("/catalogues/{catalogue}/products/synonyms", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { synonyms: [["tetera", "hervidor"]] },
        });
        return data?.synonyms.length;
      },
      get: async () => {
        const { data } = await client.GET("/catalogues/{catalogue}/products/synonyms", {
          headers: authorized(),
          params: { path: { catalogue } },
        });
        const sets: string[][] = data?.synonyms ?? [];
        return sets;
      },
    },
    "/catalogues/{catalogue}/events": {
      post: async () => {
        const { data } = await client.POST("/catalogues/{catalogue}/products/search", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { query: "tetera" },
        });
        const first = data?.results[0];
        if (!data || !first) return undefined;
        const { response } = await client.POST("/catalogues/{catalogue}/events", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { search_id: data.search_id, product_id: first.id, type: "conversion" },
        });
        return response.status;
      },
    },
    "/catalogues/{catalogue}/analytics": {
      get: async () => {
        const { data } = await client.GET("/catalogues/{catalogue}/analytics", {
          headers: authorized(),
          params: { path: { catalogue }, query: { days: 1 } },
        });
        return data?.conversions;
      },
    },
    "/catalogues/{catalogue}/products/categories": {
      get: () =>
        client.GET("/catalogues/{catalogue}/products/categories", {
          headers: authorized(),
          params: { path: { catalogue } },
        }),
    },
    "/catalogues/{catalogue}/products/{id}": {
      get: () =>
        client.GET("/catalogues/{catalogue}/products/{id}", {
          headers: authorized(),
          params: { path: { catalogue, id: catalogueProductId } },
        }),
      patch: () =>
        client.PATCH("/catalogues/{catalogue}/products/{id}", {
          headers: authorized(),
          params: { path: { catalogue, id: catalogueProductId } },
          body: { name: "Cafetera moka" },
        }),
      put: () =>
        client.PUT("/catalogues/{catalogue}/products/{id}", {
          headers: authorized(),
          params: { path: { catalogue, id: catalogueProductId } },
          body: product,
        }),
      delete: () =>
        client.DELETE("/catalogues/{catalogue}/products/{id}", {
          headers: authorized(),
          params: { path: { catalogue, id: catalogueProductId } },
        }),
    },
    "/catalogues/{catalogue}/products/search": {
      post: async () => {
        const { data } = await client.POST("/catalogues/{catalogue}/products/search", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { query: "cafetera", mode: "hybrid" },
        });
        return data?.results.map((result) => result.fused_score);
      },
      get: async () => {
        const { data } = await client.GET("/catalogues/{catalogue}/products/search", {
          headers: authorized(),
          params: { path: { catalogue }, query: { query: "cafetera" } },
        });
        return data?.recommendation;
      },
    },
    "/catalogues/{catalogue}/products/bulk": {
      post: async () => {
        const { data } = await client.POST("/catalogues/{catalogue}/products/bulk", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: [product],
        });
        return data?.counts.created;
      },
    },
    "/catalogues/{catalogue}": {
      patch: async () => {
        const { data } = await client.PATCH("/catalogues/{catalogue}", {
          headers: authorized(),
          params: { path: { catalogue } },
          body: { embedded_attributes: ["brand"] },
        });
        return data?.stale_embeddings;
      },
      delete: async () => {
        const { response } = await client.DELETE("/catalogues/{catalogue}", {
          headers: authorized(),
          params: { path: { catalogue } },
        });
        return response.status;
      },
    },
    "/keys": {
      post: async () => {
        const { data } = await client.POST("/keys", {
          headers: authorized(),
          body: { name: "Tienda: buscador", actions: ["search"], catalogues: ["default"], expires_at: null },
        });
        if (data) ({ id: keyId, key: apiKey } = data);
        // The key searches, sent as X-API-Key.
        const search = await client.POST("/products/search", {
          headers: { "X-API-Key": apiKey },
          body: { query: "cafetera" },
        });
        return search.data?.results.length;
      },
      get: async () => {
        const { data } = await client.GET("/keys", { headers: authorized() });
        const lastUsed: (string | null)[] = data?.keys.map((key) => key.last_used_at) ?? [];
        return lastUsed;
      },
    },
    "/auth/me": {
      get: async () => {
        // What the search-only key made above may do: search, in the default catalogue.
        const { data } = await client.GET("/auth/me", { headers: { Authorization: `Bearer ${apiKey}` } });
        const catalogues: string[] = data?.catalogues ?? [];
        return [data?.kind, data?.actions, catalogues, data?.filter?.category];
      },
    },
    "/keys/{id}": {
      delete: async () => {
        const { response } = await client.DELETE("/keys/{id}", {
          headers: authorized(),
          params: { path: { id: keyId } },
        });
        return response.status;
      },
    },
    "/metrics": {
      get: () => text.GET("/metrics", { headers: { Authorization: `Bearer ${metricsToken}` }, parseAs: "text" }),
    },
  } satisfies EveryOperation;
  return calls;
}
