/** `serve` (the default command): the HTTP service, until SIGINT or SIGTERM. */

import { serveAdminSocket } from "../admin/admin-channel.ts";
import type { Config } from "../config.ts";
import { secretsOf } from "../config.ts";
import { createLogger } from "../logger.ts";
import { EXIT, type RegisterCommand } from "./command.ts";

/**
 * How often the service looks at the vector index (domain/maintain-vector-index.ts): it is built at
 * a look that finds no product written since the previous one, so a bulk load finishes before its
 * build starts.
 */
const VECTOR_INDEX_CHECK_MS = 30_000;

export const registerServe: RegisterCommand = (program, run) => {
  program
    .command("serve")
    .description("start the HTTP service (the default command)")
    .action(() => run(serve));
};

export async function serve(config: Config): Promise<number> {
  const started = performance.now();
  const log = createLogger(config.logLevel, secretsOf(config), { buffered: true });
  // The HTTP service's modules (Elysia, the generators) are loaded by this command only.
  const { createHttpService } = await import("../http-service.ts");
  const service = await createHttpService(config, log);
  let server: ReturnType<typeof service.app.listen>;
  let metricsServer: ReturnType<NonNullable<typeof service.metricsApp>["listen"]> | undefined;
  try {
    // Bun's own body limit stays at its default (far above MAX_BODY_BYTES): the app answers 413 as
    // {"detail"} itself, from Content-Length and while reading the body.
    server = service.app.listen({
      hostname: config.host,
      port: config.port,
      // Elysia defaults to SO_REUSEPORT: a second instance would share the port silently instead of failing.
      reusePort: false,
    });
    metricsServer = service.metricsApp?.listen({ hostname: config.host, port: config.metrics.port, reusePort: false });
  } catch (error) {
    await service.app.stop();
    await service.close();
    throw error;
  }

  // The operator's commands reach the embedded database through the service while it holds it.
  let stopAdminSocket: (() => void) | undefined;
  try {
    if (config.databaseUrl === undefined) stopAdminSocket = serveAdminSocket(config, service.root, log);
  } catch (error) {
    await service.app.stop();
    await metricsServer?.stop();
    await service.close();
    throw error;
  }
  const maintainIndex = await service.root.maintainVectorIndex();
  const importJobs = await service.root.importJobs();
  let indexTimer: ReturnType<typeof setInterval> | undefined;
  /** Ends the import job worker (domain/import-jobs.ts), which releases the job under way. */
  const stopJobs = new AbortController();
  let jobWorker: Promise<void> | undefined;
  const stopped = Promise.withResolvers<number>();
  let stopping = false;
  const shutdown = async (reason: string, code: number = EXIT.ok) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: "stopping", reason });
    clearInterval(indexTimer);
    await service.app.stop();
    await metricsServer?.stop();
    stopAdminSocket?.();
    stopJobs.abort();
    await jobWorker;
    await maintainIndex.settled();
    await service.close();
    stopped.resolve(code);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));

  const listeningMs = Math.round(performance.now() - started);
  // Listening already: /health/live answers, /health/ready says 503 until the model is loaded.
  try {
    await service.warmUp();
  } catch (error) {
    log.error({ event: "warm_up_failed", error });
    await shutdown("the embedder could not be loaded", EXIT.failed);
    return stopped.promise;
  }
  // Import jobs: those of this process and of others (a restart, a crash) go on from their first item
  // not stored (the worker looks for them only while the database takes writes).
  jobWorker = importJobs.run(stopJobs.signal);
  // Upkeep only where writes go: none while DATABASE_URL reaches only standbys (a read-only start,
  // a failover under way), nor once a reembed elsewhere moved the catalogue to another model; of
  // several instances, the one holding the upkeep lease looks.
  const look = async () => {
    if ((await service.root.writable()) && (await service.root.inEmbeddingSpace())) await maintainIndex.check();
  };
  void look();
  indexTimer = setInterval(() => void look(), VECTOR_INDEX_CHECK_MS);
  indexTimer.unref();
  log.info({
    event: "started",
    url: `http://${config.host}:${server.server?.port ?? config.port}`,
    metrics: metricsServer
      ? `http://${config.host}:${metricsServer.server?.port}/metrics`
      : config.metrics.token
        ? "/metrics (bearer token)"
        : "off",
    database: config.databaseUrl === undefined ? "pglite" : "postgresql",
    reads: config.databaseReadUrl === undefined ? "database" : "DATABASE_READ_URL",
    readOnly: await service.root.readOnlyStart(),
    embedder: service.embedder.model,
    version: config.version,
    // Where the start went: listening after `listeningMs` (its parts in startupMs), ready (model loaded) now.
    startupMs: { ...service.startupMs, listening: listeningMs, ready: Math.round(performance.now() - started) },
  });
  return stopped.promise;
}
