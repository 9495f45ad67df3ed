/**
 * The whole service (config → composition root → HTTP app) on real PostgreSQL clusters, driven in
 * process, for the replica and failover tests: a fake embedder, a low-cost hasher, nothing logged.
 */

import { rmSync } from "node:fs";
import { loadConfig } from "../../src/app/config.ts";
import { createHttpService, type HttpService } from "../../src/app/http-service.ts";
import type { Logger } from "../../src/app/logger.ts";
import type { Embedder } from "../../src/ports/embedder.ts";
import { FakeEmbedder } from "../fakes/fake-embedder.ts";
import { type CallOptions, callApp } from "./app-client.ts";
import { lowCostHasher } from "./password-hasher.ts";
import { makeTempDir } from "./temp-dirs.ts";

export const ADMIN = { username: "admin", password: "una-contraseña-larga" };

/** `postgres://postgres@h1:p1,h2:p2/DB?target_session_attrs=ATTRS` */
export function multiHost(hosts: readonly { port: number }[], attrs: string, database = "postgres"): string {
  return `postgres://postgres@${hosts.map(({ port }) => `127.0.0.1:${port}`).join(",")}/${database}?target_session_attrs=${attrs}`;
}

export interface ReplicaService {
  service: HttpService;
  call(method: string, path: string, init?: CallOptions): ReturnType<typeof callApp>;
  login(username?: string, password?: string): Promise<string>;
  /** Events logged at warn and above (the service's own, e.g. read_only_start, database_primary). */
  events: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The settings every test service starts with (a fake embedder's world: no index, no query cache), and `env`. */
export function serviceConfig(env: Record<string, string>) {
  return loadConfig({
    DATA_DIR: makeTempDir("replica-service"),
    JWT_SECRET: "s".repeat(40),
    ADMIN_PASSWORD: ADMIN.password,
    SEARCH_RATE_LIMIT: "1000000",
    WRITE_RATE_LIMIT: "1000000",
    VECTOR_INDEX: "off",
    QUERY_CACHE_DAYS: "0",
    ...env,
  });
}

/** `embedder`: a FakeEmbedder of 32 dimensions unless given (another model makes another embedding space). */
export async function startService(
  env: Record<string, string>,
  { embedder = new FakeEmbedder(32) }: { embedder?: Embedder } = {},
): Promise<ReplicaService> {
  const config = serviceConfig(env);
  const events: Record<string, unknown>[] = [];
  const keep = (event: Record<string, unknown>) => void events.push(event);
  const quiet: Logger = { debug: () => {}, info: () => {}, warn: keep, error: keep };
  const removeDataDir = () => rmSync(config.dataDir, { recursive: true, force: true });
  const service = await createHttpService(config, quiet, { embedder, passwordHasher: lowCostHasher() }).catch(
    (error: unknown) => {
      removeDataDir();
      throw error;
    },
  );
  const call = (method: string, path: string, init: CallOptions = {}) => callApp(service.app, method, path, init);
  return {
    service,
    call,
    events,
    async login(username = ADMIN.username, password = ADMIN.password) {
      const response = await call("POST", "/auth/login", { form: { username, password } });
      if (response.status !== 200) throw new Error(`login failed: ${response.status} ${response.text}`);
      return response.json.access_token as string;
    },
    async close() {
      await service.close();
      removeDataDir();
    },
  };
}

/** A product body whose words the fake embedder and the search share. */
export function product(name: string) {
  return { name, description: `${name} de prueba`, category: "pruebas" };
}
