import { callApp } from "./app-client.ts";
import type { PostgresCluster } from "./postgres-cluster.ts";

type App = { handle(request: Request): Promise<Response> };

export interface RestartLoad {
  workers: number;
  restarts: number;
  /** After the last restart: time allowed to heal, then the time every request is counted in. */
  healMs: number;
  observeMs: number;
}

/** Worker `id`'s request number `turn`: a create on even turns, a search on odd ones; its status. */
async function request(app: App, token: string, id: number, turn: number): Promise<number> {
  const response =
    turn % 2 === 0
      ? await callApp(app, "POST", "/products/", {
          token,
          json: { name: `Producto ${id}-${turn}`, description: "de prueba", category: "pruebas" },
        })
      : await callApp(app, "POST", "/products/search", { token, json: { query: "producto" } });
  return response.status;
}

/**
 * `workers` clients loop on create and search through the app while the server gets `restarts`
 * fast restarts 0.5 s apart (time for the load to run between them), then while `after` runs.
 * `record`, asked as each request begins, may give a function told its status and duration.
 * Resolves once every client has stopped.
 */
async function loadDuring(
  app: App,
  cluster: PostgresCluster,
  token: string,
  load: { workers: number; restarts: number },
  after: () => Promise<void>,
  record: () => ((status: number, ms: number) => void) | undefined = () => undefined,
): Promise<void> {
  let stop = false;
  const loop = async (id: number) => {
    for (let turn = 0; !stop; turn++) {
      const recorded = record();
      const started = performance.now();
      const status = await request(app, token, id, turn);
      recorded?.(status, performance.now() - started);
      if (status >= 500) await Bun.sleep(20);
    }
  };
  const running = Array.from({ length: load.workers }, (_, id) => loop(id));
  for (let restart = 0; restart < load.restarts; restart++) {
    await Bun.sleep(500);
    await cluster.restart();
  }
  await after();
  stop = true;
  await Promise.all(running);
}

/**
 * For bench/db-restart.ts, which measures time: the load through the restarts, then the status and
 * duration of every request begun in the observation window that follows the healing time.
 */
export async function loadThroughRestarts(
  app: App,
  cluster: PostgresCluster,
  token: string,
  load: RestartLoad,
): Promise<{ status: number; ms: number }[]> {
  let observing = false;
  const observed: { status: number; ms: number }[] = [];
  await loadDuring(
    app,
    cluster,
    token,
    load,
    async () => {
      await Bun.sleep(load.healMs);
      observing = true;
      await Bun.sleep(load.observeMs);
    },
    () => (observing ? (status, ms) => observed.push({ status, ms }) : undefined),
  );
  return observed;
}

/** For the test, which measures no time: the load through the restarts, until the last one is done. */
export function loadDuringRestarts(
  app: App,
  cluster: PostgresCluster,
  token: string,
  load: { workers: number; restarts: number },
): Promise<void> {
  return loadDuring(app, cluster, token, load, async () => {});
}

/** `workers` requests at once (creates and searches, as the load sends them); their statuses. */
export function requestRound(app: App, token: string, workers: number, round: number): Promise<number[]> {
  return Promise.all(Array.from({ length: workers }, (_, id) => request(app, token, id, round)));
}
