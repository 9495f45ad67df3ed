/**
 * The servers bench/http.ts compares, in one process (started by it; not run by hand):
 *
 * - the service, as `serve` wires it (createHttpService: Elysia, auth, rate limits, the query
 *   cache, logging at LOG_LEVEL to stdout, metrics when configured), configured from the
 *   environment bench/http.ts gives it, with a fake embedder;
 * - a bare `Bun.serve` handler that parses the body and calls the service's own search use case
 *   (the same instance: the same SQL, pool, query cache, analytics, fake embedder and local
 *   generator) and answers the same JSON: no auth, no validation, no log, no framework. What the
 *   service costs beyond it is its HTTP layer;
 * - the same handler as the one route of a plain Elysia app (no schema, no hook, no plugin): what
 *   the framework itself costs, the floor of any service written on it;
 * - `search_only`: a bare handler whose use case has only the products, the embedder and the
 *   generator: the search's own statements, none of the query cache's or the analytics' (what the
 *   service does per search beyond the search itself, seen by comparing the two bare handlers).
 *
 * It tells its parent the four ports over IPC and answers `{cpu: true}` with this process's CPU time.
 */

import { Elysia } from "elysia";
import { scoredView } from "../src/adapters/http/search/search-schemas.ts";
import { loadConfig, secretsOf } from "../src/app/config.ts";
import { createHttpService } from "../src/app/http-service.ts";
import { createLogger } from "../src/app/logger.ts";
import { SearchAndRecommend, type SearchRequest } from "../src/domain/search-and-recommend.ts";
import type { Vector } from "../src/domain/vector.ts";
import type { Embedder } from "../src/ports/embedder.ts";
import { loadCatalogue, SyntheticSpace, seedOf } from "./vectors.ts";

export const FAKE_MODEL = "bench-http-fake";

/** Query vectors near the catalogue's clusters, picked by a hash of the text: computing one is not what is measured. */
export class BankEmbedder implements Embedder {
  readonly model = FAKE_MODEL;
  private readonly bank: number[][];

  constructor(readonly dimension: number) {
    const space = new SyntheticSpace(loadCatalogue(), dimension);
    this.bank = Array.from({ length: 256 }, (_, i) => space.query(i));
  }

  async embed(texts: readonly string[]): Promise<Vector[]> {
    // A copy each time, as a provider's answer is a new array.
    return texts.map((text) => [...(this.bank[seedOf(text) % this.bank.length] as number[])]);
  }
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dimension = Number(process.env.BENCH_DIMENSION);
  const embedder = new BankEmbedder(dimension);
  // As `serve` makes it.
  const log = createLogger(config.logLevel, secretsOf(config), { buffered: true });
  const service = await createHttpService(config, log, { embedder });
  const server = service.app.listen({ hostname: "127.0.0.1", port: 0, reusePort: false });

  const view = async (search: SearchAndRecommend, request: SearchRequest) => {
    const { query, recommendation, results, citedIds } = await search.execute(request, { catalogue: "default" });
    return { query, recommendation, results: results.map(scoredView), cited_ids: citedIds };
  };
  const bareServer = (answer: (request: SearchRequest) => Promise<unknown>) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        try {
          return Response.json(await answer((await request.json()) as SearchRequest));
        } catch (error) {
          return Response.json({ detail: String(error) }, { status: 500 });
        }
      },
    });
  // The bare handler: the service's own use case (the same instance, so the same statements).
  const answer = (request: SearchRequest) => view(service.search, request);
  const bare = bareServer(answer);
  // The search alone: a use case with nothing but what the search itself reads.
  const searchOnly = new SearchAndRecommend({
    products: await service.root.products(),
    embedder,
    generator: await service.root.generator(),
    defaults: { mode: config.searchMode, alpha: config.hybridAlpha },
  });
  const searchOnlyServer = bareServer((request) => view(searchOnly, request));
  // Elysia parses the JSON body by its content type, as it does for the service's routes.
  const framework = new Elysia()
    .post("/products/search", ({ body }) => answer(body as SearchRequest))
    .listen({ hostname: "127.0.0.1", port: 0, reusePort: false });

  process.on("message", (message: { cpu?: boolean; stop?: boolean }) => {
    if (message.cpu) {
      const usage = process.cpuUsage();
      process.send?.({ cpuMs: (usage.user + usage.system) / 1000 });
    }
    if (message.stop) {
      void (async () => {
        await bare.stop(true);
        await searchOnlyServer.stop(true);
        await framework.stop();
        await service.app.stop();
        await service.close();
        process.exit(0);
      })();
    }
  });
  process.send?.({
    servicePort: server.server?.port,
    barePort: bare.port,
    elysiaPort: framework.server?.port,
    searchOnlyPort: searchOnlyServer.port,
  });
}

if (import.meta.main) await main();
