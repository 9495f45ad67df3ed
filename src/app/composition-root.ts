/**
 * The composition root: the one place that knows every concrete adapter and wires them into the
 * domain's use cases. A command asks it for what it needs (the database, the embedder, a use case)
 * and it makes that, and what that needs, once, on first request; nothing else. So `users add`
 * opens the database but loads no model, `import` loads the embedder and translation but no web
 * framework or language model, and only `serve` loads Elysia (http-service.ts) and the generators.
 * A provider's SDK is imported only when that provider is configured. `close()` closes what was
 * opened, newest first.
 */
import { resolve } from "node:path";
import { MemoryRateLimitCounters } from "../adapters/in-process/rate-limit-counters.ts";
import { openPglite } from "../adapters/pglite/pglite-client.ts";
import { PostgresDatabaseHealth } from "../adapters/postgres/database-health.ts";
import { SqlEmbeddingSpace } from "../adapters/postgres/embedding-space.ts";
import { PostgresProductRepository } from "../adapters/postgres/product-repository.ts";
import { PostgresQueryEmbeddingCache } from "../adapters/postgres/query-embedding-cache.ts";
import { PostgresRateLimitCounters } from "../adapters/postgres/rate-limit-counters.ts";
import { applyMigrations, missingMigrations, prepareDatabase } from "../adapters/postgres/schema.ts";
import { connectPostgres, type SqlClient } from "../adapters/postgres/sql-client.ts";
import { PostgresUserRepository } from "../adapters/postgres/user-repository.ts";
import { SqlVectorIndex, vectorSessionSettings } from "../adapters/postgres/vector-index.ts";
import { LocalEmbedder } from "../adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../adapters/providers/local-model-files.ts";
import type { ProviderClientOptions } from "../adapters/providers/provider-client.ts";
import { BunPasswordHasher } from "../adapters/security/bun-password-hasher.ts";
import { ApertiumTranslator, findApertium } from "../adapters/translation/apertium.ts";
import { RememberingTranslator } from "../adapters/translation/remembering-translator.ts";
import { TranslatingEmbedder } from "../adapters/translation/translating-embedder.ts";
import { ImportProducts } from "../domain/import-products.ts";
import { MaintainVectorIndex } from "../domain/maintain-vector-index.ts";
import { ManageUsers } from "../domain/manage-users.ts";
import { ReembedCatalogue } from "../domain/reembed-catalogue.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { RateLimitCounters } from "../ports/rate-limit-counters.ts";
import type { Translator } from "../ports/translator.ts";
import type { VectorIndex } from "../ports/vector-index.ts";
import type { Config, RemoteProvider } from "./config.ts";
import type { Logger } from "./logger.ts";
import { resolveRuntimeAssets } from "./runtime-assets.ts";

/** What tests put in place of the real thing. */
export interface Overrides {
  /** An open database client (tests: PGlite in memory); the root closes it. */
  database?: SqlClient | undefined;
  embedder?: Embedder | undefined;
  generator?: Generator | undefined;
  clock?: Clock | undefined;
  /** Tests: argon2id at a low cost, where hashing is not what they test. */
  passwordHasher?: PasswordHasher | undefined;
}

export interface RootOptions {
  /**
   * The service's own pool: its statements are bounded by DATABASE_TIMEOUT_MS and migrations run on
   * a connection of their own. The operator's commands (imports, re-embeds, index builds) run
   * theirs without a limit.
   */
  serving?: boolean;
  overrides?: Overrides;
}

export interface TranslationSetup {
  /** `embedder` behind Spanish → English translation; `embedder` itself when translation is off. */
  wrap(embedder: Embedder): Embedder;
  /** The translator for the lexical side of hybrid search (remembering recent queries); none when off. */
  translator: Translator | undefined;
  close(): Promise<void>;
}

export class CompositionRoot {
  private readonly made = new Map<string, Promise<unknown>>();
  private readonly closers: (() => Promise<void>)[] = [];
  private readonly overrides: Overrides;
  readonly clock: Clock;

  constructor(
    readonly config: Config,
    readonly log: Logger,
    private readonly options: RootOptions = {},
  ) {
    this.overrides = options.overrides ?? {};
    this.clock = this.overrides.clock ?? systemClock;
  }

  /** The embedder EMBEDDING_PROVIDER names (the offline model is loaded on its first use or `load()`). */
  embedder(): Promise<Embedder> {
    return this.once("embedder", async () => this.overrides.embedder ?? createEmbedder(this.config, this.log));
  }

  /** Spanish → English translation of the texts to embed, as QUERY_TRANSLATION says. */
  translation(): Promise<TranslationSetup> {
    return this.once("translation", async () => {
      const setup = await setUpTranslation(this.config, await this.embedder(), this.log);
      this.closers.push(() => setup.close());
      return setup;
    });
  }

  /** Every product text (create, update, import, re-embed) is embedded through this one. */
  documentEmbedder(): Promise<Embedder> {
    return this.once("documentEmbedder", async () => (await this.translation()).wrap(await this.embedder()));
  }

  /** The database (PGlite in DATA_DIR, or DATABASE_URL), opened but not migrated. */
  database(): Promise<SqlClient> {
    return this.once("database", async () => {
      const client = this.overrides.database ?? (await this.openDatabase());
      this.closers.push(() => client.close());
      return client;
    });
  }

  /** The database with every migration applied, holding embeddings of the configured embedder's space (else EmbeddingSpaceMismatch). */
  store(): Promise<SqlClient> {
    return this.once("store", async () => {
      const [client, embedder] = await Promise.all([this.database(), this.embedder()]);
      await this.migrate(client, (migrator, space) => prepareDatabase(migrator, space), embedder);
      return client;
    });
  }

  /** Whether every migration this program knows is recorded (readiness). */
  async migrationsApplied(): Promise<boolean> {
    return (await missingMigrations(await this.database())).length === 0;
  }

  async products(): Promise<PostgresProductRepository> {
    const [client, embedder] = await Promise.all([this.store(), this.embedder()]);
    return this.once(
      "products",
      async () => new PostgresProductRepository(client, embedder.dimension, this.config.vectorSearch),
    );
  }

  async users(): Promise<PostgresUserRepository> {
    const client = await this.store();
    return this.once("users", async () => new PostgresUserRepository(client));
  }

  passwordHasher(): PasswordHasher {
    return this.overrides.passwordHasher ?? new BunPasswordHasher();
  }

  async manageUsers(): Promise<ManageUsers> {
    const users = await this.users();
    return this.once("manageUsers", async () => new ManageUsers({ users, hasher: this.passwordHasher() }));
  }

  async databaseHealth(): Promise<PostgresDatabaseHealth> {
    return new PostgresDatabaseHealth(await this.database());
  }

  async queryEmbeddingCache(): Promise<PostgresQueryEmbeddingCache | undefined> {
    const { config, log } = this;
    if (config.queryCacheDays <= 0) return undefined;
    const client = await this.store();
    return this.once(
      "queryCache",
      async () =>
        new PostgresQueryEmbeddingCache(client, {
          retentionDays: config.queryCacheDays,
          maxRows: config.queryCacheMaxRows,
          log: (event) => log.warn(event),
        }),
    );
  }

  /**
   * Where the rate limits count: in the process for the embedded database (one process per data
   * directory, so the counts are exact and PGlite's single backend is spared a statement per
   * request); in the database for a server, so every replica counts together.
   */
  async rateLimitCounters(): Promise<RateLimitCounters> {
    if (this.config.databaseUrl === undefined) return new MemoryRateLimitCounters(this.clock);
    const client = await this.store();
    return new PostgresRateLimitCounters(client, { log: (event) => this.log.warn(event) });
  }

  /** The vector index of the stored embeddings (the adapter's primitives). */
  async vectorIndex(): Promise<VectorIndex> {
    const [client, embedder] = await Promise.all([this.store(), this.embedder()]);
    return this.once("vectorIndex", async () => this.openVectorIndex(client, embedder.dimension));
  }

  /** The policy that keeps the vector index fit: the service looks now and then, the commands after a load. */
  async maintainVectorIndex(): Promise<MaintainVectorIndex> {
    const index = await this.vectorIndex();
    return this.once(
      "maintainVectorIndex",
      async () => new MaintainVectorIndex({ index, policy: this.config.vectorSearch, log: (e) => this.log.warn(e) }),
    );
  }

  async importProducts(): Promise<ImportProducts> {
    const [products, embedder] = await Promise.all([this.products(), this.documentEmbedder()]);
    return new ImportProducts({ products, embedder, log: (event) => this.log.info(event) });
  }

  /**
   * Re-embedding the catalogue with the configured embedder. The database is migrated but not
   * checked against the embedder: moving it to the embedder's space is the point. (Once it has
   * switched, `store()` and what is built on it open in the new space.)
   */
  async reembedCatalogue(): Promise<ReembedCatalogue> {
    const [client, embedder, documents] = await Promise.all([
      this.database(),
      this.embedder(),
      this.documentEmbedder(),
    ]);
    await this.migrate(client, applyMigrations, embedder);
    return new ReembedCatalogue({ space: new SqlEmbeddingSpace(client), embedder: documents });
  }

  /** The ordered chain of GENERATION_PROVIDERS (a remote provider's SDK is imported only when it is named). */
  generator(): Promise<Generator> {
    return this.once("generator", async () => this.overrides.generator ?? createGenerator(this.config, this.log));
  }

  /** Closes what was opened, newest first. */
  async close(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) {
      await close().catch((error) => this.log.warn({ event: "close_failed", error }));
    }
  }

  private once<T>(name: string, make: () => Promise<T>): Promise<T> {
    let made = this.made.get(name) as Promise<T> | undefined;
    if (made === undefined) {
      made = make();
      this.made.set(name, made);
      // A failed make is made again at the next request (e.g. the database was down).
      made.catch(() => this.made.delete(name));
    }
    return made;
  }

  private async openDatabase(): Promise<SqlClient> {
    const { config } = this;
    const sessionSettings = vectorSessionSettings(config.vectorSearch);
    if (config.databaseUrl !== undefined) {
      return connectPostgres(config.databaseUrl, {
        sessionSettings,
        ...(this.options.serving ? { queryTimeoutMs: config.databaseTimeoutMs } : {}),
      });
    }
    const assets = await resolveRuntimeAssets({ pglite: true });
    return openPglite(resolve(config.dataDir), assets.pglite, sessionSettings);
  }

  /**
   * Runs `migrate` on the service's database: on a PostgreSQL server the service's migrations run on
   * a connection of their own, without its statement limit (they may rewrite whole tables).
   */
  private async migrate(
    client: SqlClient,
    migrate: (migrator: SqlClient, space: { model: string; dimension: number }) => Promise<unknown>,
    embedder: Embedder,
  ): Promise<void> {
    const space = { model: embedder.model, dimension: embedder.dimension };
    const { databaseUrl } = this.config;
    if (this.options.serving && databaseUrl !== undefined && this.overrides.database === undefined) {
      const migrator = connectPostgres(databaseUrl, { maxConnections: 1 });
      await migrate(migrator, space).finally(() => migrator.close());
    } else {
      await migrate(client, space);
    }
  }

  private openVectorIndex(client: SqlClient, dimension: number): SqlVectorIndex {
    const { databaseUrl } = this.config;
    return new SqlVectorIndex(client, dimension, {
      server: databaseUrl !== undefined,
      buildMemory: this.config.vectorIndexBuildMemory,
      // A build takes minutes at 100,000 products: on a connection of its own (its advisory lock is the
      // connection's), without the service's statement limit.
      ...(databaseUrl === undefined ? {} : { openBuilder: () => connectPostgres(databaseUrl, { maxConnections: 1 }) }),
      log: (event) => this.log.info(event),
    });
  }
}

/** The embedder EMBEDDING_PROVIDER names; `log` receives its calls and retries. */
async function createEmbedder(config: Config, log: Logger): Promise<Embedder> {
  const { embeddingProvider: provider, embeddingDimensions: dimension } = config;
  if (provider === "local") {
    const assets = await resolveRuntimeAssets({ localModel: true });
    return new LocalEmbedder(config.localModelDir ?? assets.modelDir ?? INSTALLED_MODEL_DIR);
  }
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
 * The ordered chain of GENERATION_PROVIDERS; each link has GENERATION_TIMEOUT_MS, its retries
 * included. A remote provider's adapter (and its SDK) is loaded only when the chain names it.
 */
async function createGenerator(config: Config, log: Logger): Promise<Generator> {
  const options = (provider: RemoteProvider) => ({
    ...clientOptions(config, provider, "generation", log),
    model: config.providers[provider].generationModel,
  });
  const links = await Promise.all(
    config.generationProviders.map(async (provider): Promise<Generator> => {
      switch (provider) {
        case "openai":
          return new (await import("../adapters/providers/openai.ts")).OpenAIGenerator(options(provider));
        case "anthropic":
          return new (await import("../adapters/providers/anthropic.ts")).AnthropicGenerator(options(provider));
        case "google":
          return new (await import("../adapters/providers/google.ts")).GoogleGenerator(options(provider));
        case "local":
          return new (await import("../adapters/providers/local-generator.ts")).LocalGenerator();
      }
    }),
  );
  const { GeneratorChain } = await import("../adapters/providers/generator-chain.ts");
  return new GeneratorChain(links, {
    timeoutMs: config.generationTimeoutMs,
    log: (event) => (event.event === "generation_failed" ? log.warn(event) : log.info(event)),
  });
}

/**
 * How an adapter reaches its provider. A compatible server (a base URL) may need no key: the SDKs
 * insist on one, so it gets a placeholder the server ignores. Its events name the `kind` of call
 * (for the metrics); each call's outcome is a debug line, retries and giving up are warnings.
 */
function clientOptions(
  config: Config,
  provider: RemoteProvider,
  kind: "embedding" | "generation",
  log: Logger,
): ProviderClientOptions {
  const settings = config.providers[provider];
  return {
    apiKey: settings.apiKey ?? "no-key",
    baseUrl: settings.baseUrl,
    retry: config.providerRetry,
    log: (event) => (event.event === "provider_call" ? log.debug : log.warn)({ ...event, kind }),
  };
}

/**
 * Translation of the texts to embed, as QUERY_TRANSLATION says: `auto` is on for the English-only
 * offline model when Apertium answers. Says once in the log whether it is on, and why not. Never
 * stops the service: without Apertium, texts are embedded as they are.
 */
async function setUpTranslation(config: Config, embedder: Embedder, log: Logger): Promise<TranslationSetup> {
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
    wrap: (inner) => new TranslatingEmbedder(inner, translator, { log: (event) => log.warn(event) }),
    translator: new RememberingTranslator(translator, config.queryCacheSize),
    close: () => translator.close(),
  };
}
