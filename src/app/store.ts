/**
 * The first half of the composition root: the database (PGlite in DATA_DIR, or a PostgreSQL server)
 * with its schema ready and its repositories, the configured embedder, and translation. It is what
 * the operator's commands need (users, import, reembed, index); container.ts wires the HTTP service
 * on top. A provider's SDK is loaded only when that provider is configured, so a command loads no
 * web framework or SDK it does not use.
 */
import { resolve } from "node:path";
import { openPglite } from "../adapters/pglite/pglite-client.ts";
import { PostgresDatabaseHealth } from "../adapters/postgres/database-health.ts";
import { PostgresProductRepository } from "../adapters/postgres/product-repository.ts";
import {
  PostgresQueryEmbeddingCache,
  type PostgresQueryEmbeddingCacheOptions,
} from "../adapters/postgres/query-embedding-cache.ts";
import { prepareDatabase } from "../adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../adapters/postgres/sql-client.ts";
import { PostgresUserRepository } from "../adapters/postgres/user-repository.ts";
import { VectorIndex, vectorSessionSettings } from "../adapters/postgres/vector-index.ts";
import { LocalEmbedder } from "../adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../adapters/providers/local-model-files.ts";
import type { ProviderClientOptions } from "../adapters/providers/provider-client.ts";
import { BunPasswordHasher } from "../adapters/security/bun-password-hasher.ts";
import { ApertiumTranslator, findApertium } from "../adapters/translation/apertium.ts";
import { RememberingTranslator } from "../adapters/translation/remembering-translator.ts";
import { TranslatingEmbedder } from "../adapters/translation/translating-embedder.ts";
import { ManageUsers } from "../domain/manage-users.ts";
import type { Embedder } from "../ports/embedder.ts";
import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { Translator } from "../ports/translator.ts";
import type { Config, RemoteProvider } from "./config.ts";
import type { Logger } from "./logger.ts";
import { resolveRuntimeAssets } from "./runtime-assets.ts";

/**
 * Opens the configured database, or the embedded one in DATA_DIR. `serving`: the service's own
 * pool, whose statements are bounded by DATABASE_TIMEOUT_MS; the operator's commands (re-embedding,
 * imports) run theirs without a limit.
 */
export async function openDatabase(config: Config, serving = false): Promise<SqlClient> {
  const sessionSettings = vectorSessionSettings(config.vectorSearch);
  if (config.databaseUrl !== undefined) {
    return connectPostgres(config.databaseUrl, {
      sessionSettings,
      ...(serving ? { queryTimeoutMs: config.databaseTimeoutMs } : {}),
    });
  }
  const assets = await resolveRuntimeAssets({ pglite: true });
  return openPglite(resolve(config.dataDir), assets.pglite, sessionSettings);
}

/** The embedder EMBEDDING_PROVIDER names; `log` receives its calls and retries. */
export async function createEmbedder(config: Config, log?: Logger): Promise<Embedder> {
  const { embeddingProvider: provider, embeddingDimensions: dimension } = config;
  if (provider === "local") return createLocalEmbedder(config);
  const options = {
    ...clientOptions(config, provider, "embedding", log),
    // Both providers have a default embedding model, so config always sets one.
    model: config.providers[provider].embeddingModel as string,
    dimension,
  };
  return provider === "openai"
    ? new (await import("../adapters/providers/openai.ts")).OpenAIEmbedder(options)
    : new (await import("../adapters/providers/google.ts")).GoogleEmbedder(options);
}

/**
 * How an adapter reaches its provider. A compatible server (a base URL) may need no key: the SDKs
 * insist on one, so it gets a placeholder the server ignores. Its events name the `kind` of call
 * (for the metrics); each call's outcome is a debug line, retries and giving up are warnings.
 */
export function clientOptions(
  config: Config,
  provider: RemoteProvider,
  kind: "embedding" | "generation",
  log: Logger | undefined,
): ProviderClientOptions {
  const settings = config.providers[provider];
  return {
    apiKey: settings.apiKey ?? "no-key",
    baseUrl: settings.baseUrl,
    retry: config.providerRetry,
    log: log && ((event) => (event.event === "provider_call" ? log.debug : log.warn)({ ...event, kind })),
  };
}

async function createLocalEmbedder(config: Config): Promise<Embedder> {
  const assets = await resolveRuntimeAssets({ localModel: true });
  return new LocalEmbedder(config.localModelDir ?? assets.modelDir ?? INSTALLED_MODEL_DIR);
}

export interface TranslationSetup {
  /** `embedder` behind Spanish → English translation; `embedder` itself when translation is off. */
  wrap(embedder: Embedder): Embedder;
  /** The translator for the lexical side of hybrid search (remembering recent queries); none when off. */
  translator: Translator | undefined;
  close(): Promise<void>;
}

/**
 * Translation of the texts to embed, as QUERY_TRANSLATION says: `auto` is on for the English-only
 * offline model when Apertium answers. Says once in the log whether it is on, and why not. Never
 * stops the service: without Apertium, texts are embedded as they are.
 */
export async function setUpTranslation(config: Config, embedder: Embedder, log: Logger): Promise<TranslationSetup> {
  const off = (reason: string, warn = false, details: Record<string, unknown> = {}): TranslationSetup => {
    (warn ? log.warn : log.info)({ event: "translation", enabled: false, reason, ...details });
    return { wrap: (inner) => inner, translator: undefined, close: async () => {} };
  };
  const { mode, apertiumDir, timeoutMs } = config.translation;
  if (mode === "off") return off("QUERY_TRANSLATION=off");
  if (mode === "auto" && !(embedder instanceof LocalEmbedder)) {
    return off(`QUERY_TRANSLATION=auto translates only for the offline model, not ${embedder.model}`);
  }
  const apertium = findApertium(apertiumDir);
  if (!apertium.found) {
    return off(`${apertium.reason}; Spanish texts are embedded as they are (English-only matching)`, mode === "on");
  }
  const translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs });
  try {
    await translator.start();
  } catch (error) {
    await translator.close();
    return off("Apertium does not answer; Spanish texts are embedded as they are", true, {
      apertium: apertium.prefix,
      error,
    });
  }
  log.info({ event: "translation", enabled: true, translator: translator.name, apertium: apertium.prefix });
  return {
    wrap: (inner) =>
      new TranslatingEmbedder(inner, translator, {
        log: (event) => log.warn(event),
        queryMemory: config.queryCacheSize,
      }),
    translator: new RememberingTranslator(translator, config.queryCacheSize),
    close: () => translator.close(),
  };
}

/** The vector index of the products' embeddings of `dimension` in `client`'s database, as VECTOR_* configure it. */
export function openVectorIndex(
  config: Config,
  client: SqlClient,
  dimension: number,
  log: (event: Record<string, unknown>) => void = () => {},
): VectorIndex {
  const { databaseUrl } = config;
  return new VectorIndex(client, dimension, {
    settings: config.vectorSearch,
    server: databaseUrl !== undefined,
    buildMemory: config.vectorIndexBuildMemory,
    // A build takes minutes at 100,000 products: on a connection of its own (its advisory lock is the
    // connection's), without the service's statement limit.
    ...(databaseUrl === undefined ? {} : { openBuilder: () => connectPostgres(databaseUrl, { maxConnections: 1 }) }),
    log,
  });
}

/**
 * The database with its schema ready for the embedder's vector space, plus the repositories.
 * `database`: an open client to use (tests); `serving`: the service's own pool (see openDatabase).
 */
export async function openStore(
  config: Config,
  embedder: Embedder,
  options: {
    database?: SqlClient | undefined;
    serving?: boolean;
    log?: (event: Record<string, unknown>) => void;
    passwordHasher?: PasswordHasher | undefined;
  } = {},
) {
  const client = options.database ?? (await openDatabase(config, options.serving));
  const space = { model: embedder.model, dimension: embedder.dimension };
  try {
    if (options.serving && config.databaseUrl !== undefined && options.database === undefined) {
      // Migrations may rewrite whole tables: on a connection of their own, without the service's statement limit.
      const migrator = connectPostgres(config.databaseUrl, { maxConnections: 1 });
      await prepareDatabase(migrator, space).finally(() => migrator.close());
    } else {
      await prepareDatabase(client, space);
    }
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  const users = new PostgresUserRepository(client);
  const hasher = options.passwordHasher ?? new BunPasswordHasher();
  return {
    client,
    users,
    hasher,
    manageUsers: new ManageUsers({ users, hasher }),
    products: new PostgresProductRepository(client, embedder.dimension, config.vectorSearch),
    vectorIndex: openVectorIndex(config, client, embedder.dimension, options.log),
    health: new PostgresDatabaseHealth(client),
    queryCache: (options: PostgresQueryEmbeddingCacheOptions) => new PostgresQueryEmbeddingCache(client, options),
  };
}
