import { callApp } from "./app-client.ts";
import type { PostgresCluster } from "./postgres-cluster.ts";

export interface RestartLoad {
  workers: number;
  restarts: number;
  /** After the last restart: time allowed to heal, then the time every request is counted in. */
  healMs: number;
  observeMs: number;
}

/**
 * `workers` clients loop on create and search through the app while the server gets `restarts`
 * fast restarts 0.5 s apart; returns the status and duration of every request begun in the
 * observation window that follows the healing time.
 */
export async function loadThroughRestarts(
  app: { handle(request: Request): Promise<Response> },
  cluster: PostgresCluster,
  token: string,
  load: RestartLoad,
): Promise<{ status: number; ms: number }[]> {
  let observing = false;
  let stop = false;
  const observed: { status: number; ms: number }[] = [];
  const loop = async (id: number) => {
    for (let i = 0; !stop; i++) {
      const started = performance.now();
      const counted = observing;
      const response =
        i % 2 === 0
          ? await callApp(app, "POST", "/products/", {
              token,
              json: { name: `Producto ${id}-${i}`, description: "de prueba", category: "pruebas" },
            })
          : await callApp(app, "POST", "/products/search", { token, json: { query: "producto" } });
      if (counted) observed.push({ status: response.status, ms: performance.now() - started });
      if (response.status >= 500) await Bun.sleep(20);
    }
  };
  const running = Array.from({ length: load.workers }, (_, id) => loop(id));
  for (let restart = 0; restart < load.restarts; restart++) {
    await Bun.sleep(500);
    await cluster.restart();
  }
  await Bun.sleep(load.healMs);
  observing = true;
  await Bun.sleep(load.observeMs);
  stop = true;
  await Promise.all(running);
  return observed;
}
