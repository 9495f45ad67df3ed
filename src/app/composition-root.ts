/**
 * The composition root: the one place that knows every concrete adapter and wires them into the
 * domain's use cases. A command asks it for what it needs (the database, the embedder, a use case)
 * and it makes that, and what that needs, once, on first request; nothing else. So `users add`
 * opens the database but loads no model, `import` loads the embedder and translation but no web
 * framework or language model, and only `serve` loads Elysia (http-service.ts) and the generators.
 * A provider's SDK is imported only when that provider is configured. `close()` closes what was
 * opened, newest first.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { MemoryRateLimitCounters } from "../adapters/in-process/rate-limit-counters.ts";
import { openPglite } from "../adapters/pglite/pglite-client.ts";
import { PostgresApiKeyRepository } from "../adapters/postgres/api-key-repository.ts";
import { PostgresCatalogueRepository } from "../adapters/postgres/catalogue-repository.ts";
import { PostgresDatabaseHealth } from "../adapters/postgres/database-health.ts";
import { SqlEmbeddingSpace } from "../adapters/postgres/embedding-space.ts";
import { EmbeddingSpaceWatch } from "../adapters/postgres/embedding-space-watch.ts";
import { PostgresImportJobRepository } from "../adapters/postgres/import-job-repository.ts";
import { PrimaryWatch } from "../adapters/postgres/primary-watch.ts";
import { PostgresProducts, type SpaceOfWrites } from "../adapters/postgres/product-repository.ts";
import { PostgresQueryEmbeddingCache } from "../adapters/postgres/query-embedding-cache.ts";
import { PostgresRateLimitCounters } from "../adapters/postgres/rate-limit-counters.ts";
import {
  type ConsistencyRequest,
  type ReadWriteClients,
  readYourWrites,
} from "../adapters/postgres/read-write-clients.ts";
import {
  applyMigrations,
  checkSchema,
  indexedNumberAttributes,
  missingMigrations,
  prepareDatabase,
} from "../adapters/postgres/schema.ts";
import { PostgresSearchAnalytics } from "../adapters/postgres/search-analytics-store.ts";
import { connectPostgres, type PostgresOptions, type SqlClient } from "../adapters/postgres/sql-client.ts";
import { PostgresSynonymStore } from "../adapters/postgres/synonym-store.ts";
import { SqlUpkeepLease } from "../adapters/postgres/upkeep-lease.ts";
import { PostgresUserRepository } from "../adapters/postgres/user-repository.ts";
import {
  IndexesInUse,
  indexTarget,
  SqlVectorIndexes,
  vectorSessionSettings,
} from "../adapters/postgres/vector-index.ts";
import { LocalEmbedder } from "../adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../adapters/providers/local-model-files.ts";
import type { ProviderClientOptions } from "../adapters/providers/provider-client.ts";
import { BunPasswordHasher } from "../adapters/security/bun-password-hasher.ts";
import { HmacApiKeys } from "../adapters/security/hmac-api-keys.ts";
import { ApertiumTranslator, findApertium } from "../adapters/translation/apertium.ts";
import { RememberingTranslator } from "../adapters/translation/remembering-translator.ts";
import { TranslatingEmbedder } from "../adapters/translation/translating-embedder.ts";
import { ManageApiKeys } from "../domain/api-keys.ts";
import { countStale, EmbedStaleProducts } from "../domain/embed-stale-products.ts";
import { ExportCatalogue } from "../domain/export-catalogue.ts";
import { ImportJobs } from "../domain/import-jobs.ts";
import { ImportProducts } from "../domain/import-products.ts";
import { MaintainCatalogueIndexes } from "../domain/maintain-vector-index.ts";
import { ManageCatalogues } from "../domain/manage-catalogues.ts";
import { ManageUsers } from "../domain/manage-users.ts";
import { ReembedCatalogue } from "../domain/reembed-catalogue.ts";
import { ManageSynonyms } from "../domain/synonyms.ts";
import { type Clock, systemClock } from "../ports/clock.ts";
import type { Embedder } from "../ports/embedder.ts";
import type { Generator } from "../ports/generator.ts";
import type { PasswordHasher } from "../ports/password-hasher.ts";
import type { RateLimitCounters } from "../ports/rate-limit-counters.ts";
import { systemTimers, type Timers } from "../ports/timers.ts";
import type { Translator } from "../ports/translator.ts";
import type { UpkeepLease } from "../ports/upkeep-lease.ts";
import type { VectorIndexStatus } from "../ports/vector-index.ts";
import type { Config, RemoteProvider } from "./config.ts";
import type { Logger } from "./logger.ts";
import { resolveRuntimeAssets } from "./runtime-assets.ts";
import { jwtSecretFor } from "./secrets.ts";

/**
 * How often the service looks for embedded-database tables to vacuum (vacuumWhereChanged: PGlite has
 * no autovacuum). A vacuum holds the one backend: about 0.15 to 0.25 s for the products of the eval
 * catalogue (12,430), so only tables that changed enough are vacuumed, as autovacuum would.
 */
const EMBEDDED_VACUUM_EVERY_MS = 60_000;
/** What tests put in place of the real thing. */
export interface Overrides {
  /** An open database client (tests: PGlite in memory); the root closes it. */
  database?: SqlClient | undefined;
  embedder?: Embedder | undefined;
  generator?: Generator | undefined;
  clock?: Clock | undefined;
  /** Tests: argon2id at a low cost, where hashing is not what they test. */
  passwordHasher?: PasswordHasher | undefined;
  /** Tests: the clock, waits and time limits of the providers, the generator chain and translation. */
  timers?: Timers | undefined;
}

export interface RootOptions {
  /**
   * The service's own pool: its statements are bounded by DATABASE_TIMEOUT_MS and migrations run on
   * a connection of their own. The operator's commands (imports, re-embeds, index builds) run
   * theirs without a limit.
   */
  serving?: boolean;
  overrides?: Overrides;
  /**
   * The HTTP request being served now (who for, the X-Read-After it sent, where its writes commit),
   * for read-your-writes; unset: none (a command).
   */
  request?: () => ConsistencyRequest | undefined;
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
    return this.once(
      "embedder",
      async () => this.overrides.embedder ?? createEmbedder(this.config, this.log, this.overrides.timers),
    );
  }

  /** Spanish → English translation of the texts to embed, as QUERY_TRANSLATION says. */
  translation(): Promise<TranslationSetup> {
    return this.once("translation", async () => {
      const setup = await setUpTranslation(this.config, await this.embedder(), this.log, this.overrides.timers);
      this.closers.push(() => setup.close());
      return setup;
    });
  }

  /**
   * Every product text (create, update, import, re-embed) is embedded through this one; for the
   * service, only while the catalogue is in its space (spaceWatch).
   */
  documentEmbedder(): Promise<Embedder> {
    return this.once("documentEmbedder", async () => {
      const [translation, embedder, watch] = await Promise.all([
        this.translation(),
        this.embedder(),
        this.spaceWatch(),
      ]);
      const documents = translation.wrap(embedder);
      return watch ? watch.guard(documents) : documents;
    });
  }

  /**
   * The service's watch over the catalogue's embedding space on a PostgreSQL server, started: a
   * `reembed` run elsewhere moves it to another model, which this process cannot follow. None for
   * the embedded database (one process), the operator's commands, or a database a test hands over.
   */
  spaceWatch(): Promise<EmbeddingSpaceWatch | undefined> {
    return this.once("spaceWatch", async () => {
      if (this.config.databaseUrl === undefined || !this.options.serving || this.overrides.database !== undefined) {
        return undefined;
      }
      const [, embedder, reads] = await Promise.all([this.store(), this.embedder(), this.readDatabase()]);
      const watch = new EmbeddingSpaceWatch(
        reads,
        { model: embedder.model, dimension: embedder.dimension },
        { log: (event) => this.log.error(event) },
      );
      this.closers.push(() => watch.close());
      watch.start();
      return watch;
    });
  }

  /** Whether the catalogue is still in this process's embedding space (false once a reembed elsewhere moved it). */
  async inEmbeddingSpace(): Promise<boolean> {
    return (await this.spaceWatch())?.changedTo === undefined;
  }

  /** The database (PGlite in DATA_DIR, or DATABASE_URL: the primary's pool), opened but not migrated. */
  database(): Promise<SqlClient> {
    return this.once("database", async () => {
      const client = this.overrides.database ?? (await this.openDatabase());
      this.closers.push(() => client.close());
      return client;
    });
  }

  /**
   * The service's watch over DATABASE_URL's hosts (which one is the primary, if any), started; none
   * for the embedded database, the operator's commands, or a database a test hands over.
   */
  primaryWatch(): Promise<PrimaryWatch | undefined> {
    return this.once("primaryWatch", async () => {
      const url = this.config.databaseUrl;
      if (url === undefined || !this.options.serving || this.overrides.database !== undefined) return undefined;
      const watch = new PrimaryWatch(url, {
        transactionPooler: this.config.databaseTransactionPooler,
        log: (event) => (event.state === "writable" ? this.log.info : this.log.warn)(event),
      });
      this.closers.push(() => watch.close());
      await watch.probe();
      watch.start();
      return watch;
    });
  }

  /** Whether the database takes writes now (false while DATABASE_URL reaches only standbys). */
  async writable(): Promise<boolean> {
    const watch = await this.primaryWatch();
    return watch === undefined || watch.state === "writable";
  }

  /**
   * True when the service starts on a database that takes no writes (DATABASE_URL reaches only hot
   * standbys): nothing is migrated, writes answer 503 until a primary appears, no upkeep runs. The
   * operator's commands write: for them a missing primary is an error.
   */
  readOnlyStart(): Promise<boolean> {
    return this.once("readOnlyStart", async () => {
      const url = this.config.databaseUrl;
      if (url === undefined || this.overrides.database !== undefined) return false;
      if (this.options.serving) return !(await this.writable());
      // Asked once, so as patient as a statement: a primary slow to answer (a busy machine) is not a missing one.
      const probe = new PrimaryWatch(url, {
        transactionPooler: this.config.databaseTransactionPooler,
        probeTimeoutMs: this.config.databaseTimeoutMs,
      });
      const state = await probe.probe().finally(() => probe.close());
      if (state !== "writable") {
        throw new Error(
          `DATABASE_URL reaches no primary (${state === "read-only" ? "every host that answers is a hot standby" : "no host answers"}): ` +
            "this command writes, so run it against the primary",
        );
      }
      return false;
    });
  }

  /** Where reads go: DATABASE_READ_URL's pool, else the database's own (any host of it, on a read-only start). */
  readDatabase(): Promise<SqlClient> {
    return this.once("readDatabase", async () => {
      const { databaseReadUrl, databaseUrl } = this.config;
      let url = databaseReadUrl;
      if (url === undefined) {
        if (databaseUrl === undefined || !(await this.readOnlyStart())) return this.database();
        // Told target_session_attrs=primary, a pool would wait for a primary forever.
        url = anyHost(databaseUrl);
      }
      const client = connectPostgres(url, this.postgresOptions());
      this.closers.push(() => client.close());
      return client;
    });
  }

  /**
   * The repositories' pools: reads (with read-your-writes when they are standbys) and the guarded
   * writes. The service on a server learns each write's commit position (X-Read-After), reads
   * what a request asks to see, and its reads failing on a vector's dimension say why (spaceWatch).
   */
  pools(): Promise<ReadWriteClients> {
    return this.once("pools", async () => {
      const [primary, watch, reads, spaceWatch] = await Promise.all([
        this.database(),
        this.primaryWatch(),
        this.readDatabase(),
        this.spaceWatch(),
      ]);
      const writes = watch ? watch.guard(primary) : primary;
      const { request } = this.options;
      // The embedded database has one process and no standby: nothing to wait for.
      if (this.config.databaseUrl === undefined || request === undefined) {
        return { reads: primary, writes, wrote: async () => {} };
      }
      const pools = readYourWrites(reads, writes, {
        request,
        standbys: reads !== primary,
        primaryLost: () => watch?.primaryLost ?? false,
        waitMs: this.config.readYourWritesWaitMs,
        log: (event) => this.log.debug(event),
      });
      return spaceWatch ? { ...pools, reads: spaceWatch.guardReads(pools.reads) } : pools;
    });
  }

  /**
   * The database with every migration applied, holding embeddings of the configured embedder's
   * space (else EmbeddingSpaceMismatch). On a read-only start nothing is migrated: the schema is
   * checked instead (SchemaBehind when it is older than this program needs).
   */
  store(): Promise<SqlClient> {
    return this.once("store", async () => {
      const [client, embedder] = await Promise.all([this.database(), this.embedder()]);
      if (await this.readOnlyStart()) {
        await checkSchema(await this.readDatabase(), { model: embedder.model, dimension: embedder.dimension });
        this.log.warn({
          event: "read_only_start",
          message:
            "DATABASE_URL reaches only hot standbys: searches and reads are served, writes answer 503 until a primary answers; no migration, no upkeep",
        });
      } else {
        const numberIndexes = this.config.vectorSearch.indexedNumberAttributes;
        await this.migrate(client, (migrator, space) => prepareDatabase(migrator, space, { numberIndexes }), embedder);
      }
      return client;
    });
  }

  /** Whether every migration this program knows is recorded (readiness; read where reads go). */
  async migrationsApplied(): Promise<boolean> {
    return (await missingMigrations(await this.readDatabase())).length === 0;
  }

  /** Every catalogue's products (each statement names its catalogue: product-repository.ts). */
  async products(): Promise<PostgresProducts> {
    const [, embedder, pools, space, indexesInUse] = await Promise.all([
      this.store(),
      this.embedder(),
      this.pools(),
      this.spaceOfWrites(),
      this.indexesInUse(),
    ]);
    return this.once("products", async () => {
      // Only those the database holds: a range on a number without its index is estimated by sampling.
      const indexed = await indexedNumberAttributes(
        pools.reads,
        this.config.vectorSearch.indexedNumberAttributes ?? [],
      );
      const search = { ...this.config.vectorSearch, indexedNumberAttributes: indexed };
      return new PostgresProducts(pools, embedder.dimension, search, space, { indexesInUse });
    });
  }

  /**
   * Which vector index each catalogue's searches use, read where they run (the read pool): one per
   * process, told at once of this process's builds and drops.
   */
  private async indexesInUse(): Promise<IndexesInUse> {
    const [, embedder, { reads }] = await Promise.all([this.store(), this.embedder(), this.pools()]);
    return this.once(
      "indexesInUse",
      async () =>
        new IndexesInUse(reads, embedder.dimension, indexTarget(embedder.dimension, this.config.vectorIndexKind)),
    );
  }

  async catalogues(): Promise<PostgresCatalogueRepository> {
    const [, pools] = await Promise.all([this.store(), this.pools()]);
    return this.once("catalogues", async () => new PostgresCatalogueRepository(pools));
  }

  async manageCatalogues(): Promise<ManageCatalogues> {
    const catalogues = await this.catalogues();
    return this.once(
      "manageCatalogues",
      async () =>
        new ManageCatalogues({
          catalogues,
          // Opened only when a setting changes (adding, listing or removing needs no product
          // repository), and counting needs no embedder (nor the translation it would start).
          staleProducts: { count: async (name) => countStale((await this.products()).in(name)) },
          clock: this.clock,
        }),
    );
  }

  /** Embedding again the products of a catalogue whose embedding is not of their current text (`reembed --catalogue`). */
  async embedStaleProducts(): Promise<EmbedStaleProducts> {
    const [products, embedder] = await Promise.all([this.products(), this.documentEmbedder()]);
    return this.once("embedStaleProducts", async () => new EmbedStaleProducts({ products, embedder }));
  }

  /**
   * The space the products written by this process are in (its embedder's): every product write
   * stores only while the catalogue is in it, and the service's watch hears when it is not.
   */
  private async spaceOfWrites(): Promise<SpaceOfWrites> {
    const [embedder, watch] = await Promise.all([this.embedder(), this.spaceWatch()]);
    return {
      model: embedder.model,
      dimension: embedder.dimension,
      changed: (stored) => watch?.found(stored),
    };
  }

  async users(): Promise<PostgresUserRepository> {
    const [, pools] = await Promise.all([this.store(), this.pools()]);
    return this.once("users", async () => new PostgresUserRepository(pools));
  }

  /** The tokens' signing secret: JWT_SECRET, or the one generated into DATA_DIR. API keys are derived from it. */
  jwtSecret(): string {
    return jwtSecretFor(this.config.jwtSecret, this.config.dataDir);
  }

  /** API keys' secrets, derived from the JWT secret (rotating it ends every key). */
  apiKeySecrets(): HmacApiKeys {
    return new HmacApiKeys(this.jwtSecret());
  }

  async apiKeys(): Promise<PostgresApiKeyRepository> {
    const [, pools] = await Promise.all([this.store(), this.pools()]);
    return this.once("apiKeys", async () => new PostgresApiKeyRepository(pools));
  }

  async manageApiKeys(): Promise<ManageApiKeys> {
    const keys = await this.apiKeys();
    return this.once(
      "manageApiKeys",
      async () => new ManageApiKeys({ keys, secrets: this.apiKeySecrets(), clock: this.clock }),
    );
  }

  passwordHasher(): PasswordHasher {
    return this.overrides.passwordHasher ?? new BunPasswordHasher();
  }

  async manageUsers(): Promise<ManageUsers> {
    const users = await this.users();
    return this.once("manageUsers", async () => new ManageUsers({ users, hasher: this.passwordHasher() }));
  }

  /** Each catalogue's synonyms (remembered for 2 s between reads: every hybrid or lexical search asks). */
  async synonymStore(): Promise<PostgresSynonymStore> {
    const [, pools] = await Promise.all([this.store(), this.pools()]);
    return this.once("synonymStore", async () => new PostgresSynonymStore(pools));
  }

  /** Reading and replacing each catalogue's synonyms. */
  async manageSynonyms(): Promise<ManageSynonyms> {
    return new ManageSynonyms(await this.synonymStore());
  }

  /**
   * Where search analytics are kept, written behind the answers; closed (what is queued stored)
   * before the database.
   */
  async searchAnalyticsStore(): Promise<PostgresSearchAnalytics> {
    const [, pools, watch] = await Promise.all([this.store(), this.pools(), this.primaryWatch()]);
    return this.once("searchAnalyticsStore", async () => {
      const store = new PostgresSearchAnalytics(pools, {
        retentionDays: Math.max(1, this.config.analyticsRetentionDays),
        log: (event) => this.log.warn(event),
        writable: () => watch === undefined || watch.state === "writable",
      });
      this.closers.push(() => store.close());
      return store;
    });
  }

  /** A round trip where reads go: the service answers as long as it can search. */
  async databaseHealth(): Promise<PostgresDatabaseHealth> {
    return new PostgresDatabaseHealth(await this.readDatabase());
  }

  async queryEmbeddingCache(): Promise<PostgresQueryEmbeddingCache | undefined> {
    const { config, log } = this;
    if (config.queryCacheDays <= 0) return undefined;
    const [, pools, watch] = await Promise.all([this.store(), this.pools(), this.primaryWatch()]);
    return this.once("queryCache", async () => {
      const cache = new PostgresQueryEmbeddingCache(pools, {
        retentionDays: config.queryCacheDays,
        maxRows: config.queryCacheMaxRows,
        log: (event) => log.warn(event),
        writable: () => watch === undefined || watch.state === "writable",
      });
      // Closed before the database (closers run newest first): what is queued is stored.
      this.closers.push(() => cache.close());
      return cache;
    });
  }

  /**
   * Where the rate limits count: in the process for the embedded database (one process per data
   * directory, so the counts are exact and PGlite's single backend is spared a statement per
   * request); in the database for a server, so every replica counts together.
   */
  async rateLimitCounters(): Promise<{ counters: RateLimitCounters; fallback?: RateLimitCounters }> {
    const inProcess = new MemoryRateLimitCounters(this.clock);
    if (this.config.databaseUrl === undefined) return { counters: inProcess };
    const [, { writes }] = await Promise.all([this.store(), this.pools()]);
    // While the primary takes no writes, each instance counts in its own memory: never unlimited.
    return {
      counters: new PostgresRateLimitCounters(writes, { log: (event) => this.log.warn(event) }),
      fallback: inProcess,
    };
  }

  /** Every catalogue's vector index (the adapter's primitives), on the primary. */
  async vectorIndexes(): Promise<SqlVectorIndexes> {
    const [, embedder, { writes }, inUse] = await Promise.all([
      this.store(),
      this.embedder(),
      this.pools(),
      this.indexesInUse(),
    ]);
    return this.once("vectorIndexes", async () => this.openVectorIndexes(writes, embedder.dimension, inUse));
  }

  /**
   * Every catalogue's vector index as one status, for the metrics (sku_vector_index_bytes and the
   * build progress): the bytes of the valid ones summed, the build under way in any of them.
   */
  async vectorIndexesStatus(): Promise<VectorIndexStatus> {
    const indexes = await this.vectorIndexes();
    const statuses: VectorIndexStatus[] = [];
    for (const catalogue of await indexes.catalogues()) {
      const status = await (await indexes.of(catalogue))?.status();
      if (status) statuses.push(status);
    }
    const [first] = statuses;
    if (!first) throw new Error("no catalogue: not even the default one");
    const built = statuses.filter((status) => status.present && status.valid);
    return {
      ...first,
      present: built.length > 0,
      valid: built.length > 0,
      outdated: statuses.some((status) => status.outdated),
      bytes: built.reduce((sum, status) => sum + status.bytes, 0),
      estimatedRows: statuses.reduce((sum, status) => sum + status.estimatedRows, 0),
      progress: statuses.find((status) => status.progress)?.progress,
    };
  }

  /**
   * The lease that lets one process at a time, of every instance on the database, build the vector
   * index or re-embed (on a PostgreSQL server; the embedded database has one process).
   */
  async upkeepLease(): Promise<UpkeepLease | undefined> {
    if (this.config.databaseUrl === undefined) return undefined;
    const [, { writes }] = await Promise.all([this.store(), this.pools()]);
    return this.once("upkeepLease", async () => this.leaseOn(writes));
  }

  /** A new upkeep lease on `client`, held in the name of this process. */
  private leaseOn(client: SqlClient): SqlUpkeepLease {
    return new SqlUpkeepLease(client, { holder: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}` });
  }

  /** The policy that keeps each catalogue's vector index fit: the service looks now and then, the commands after a load. */
  async maintainVectorIndex(): Promise<MaintainCatalogueIndexes> {
    const [indexes, lease] = await Promise.all([this.vectorIndexes(), this.upkeepLease()]);
    return this.once(
      "maintainVectorIndex",
      async () =>
        new MaintainCatalogueIndexes({
          indexes,
          lease,
          policy: this.config.vectorSearch,
          log: (e) => this.log.warn(e),
        }),
    );
  }

  async importProducts(): Promise<ImportProducts> {
    const [products, embedder] = await Promise.all([this.products(), this.documentEmbedder()]);
    return new ImportProducts({ products, embedder, log: (event) => this.log.info(event) });
  }

  /**
   * Bulk imports as jobs, on the primary (their reads too: a job is read by whoever just wrote it).
   * `stop()` (at close, before the database is closed) ends the work under way in this process, each
   * job released for the next claim.
   */
  async importJobs(): Promise<ImportJobs> {
    const [, embedder, pools, importProducts, space] = await Promise.all([
      this.store(),
      this.embedder(),
      this.pools(),
      this.importProducts(),
      this.spaceOfWrites(),
    ]);
    return this.once("importJobs", async () => {
      const { vectorSearch, jobRetentionHours } = this.config;
      const jobs = new ImportJobs({
        jobs: new PostgresImportJobRepository(
          pools,
          (tx) => new PostgresProducts(tx, embedder.dimension, vectorSearch, space, { insideTransaction: true }),
        ),
        importProducts,
        clock: this.clock,
        timers: this.overrides.timers ?? systemTimers,
        settings: { retentionMs: jobRetentionHours * 3_600_000 },
        // Not while the catalogue is in another embedding space: a restarted instance takes the jobs.
        writable: async () => (await this.writable()) && (await this.inEmbeddingSpace()),
        log: (event) =>
          (event.event === "import_job_failed"
            ? this.log.error
            : IMPORT_JOB_WARNINGS.has(String(event.event))
              ? this.log.warn
              : this.log.info)(event),
      });
      this.closers.push(() => jobs.stop());
      return jobs;
    });
  }

  /**
   * Exporting a catalogue. The database is migrated but not checked against the embedder: an
   * export states the space its embeddings are in, as the database records it, so a catalogue can
   * be exported before (or after) the embedder changes. The embedder is made (for the migrations
   * of a new database) but never loaded.
   */
  async exportCatalogue(catalogue: string): Promise<ExportCatalogue> {
    const [client, embedder] = await Promise.all([this.database(), this.embedder()]);
    await this.migrate(client, applyMigrations, embedder);
    const space = new SqlEmbeddingSpace(client);
    const { dimension } = await space.current();
    return new ExportCatalogue({
      products: new PostgresProducts(client, dimension, this.config.vectorSearch).in(catalogue),
      space: () => space.current(),
      clock: this.clock,
    });
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
    // Not upkeepLease(): it opens the store, which refuses a catalogue of another space than the
    // embedder's, the very thing a reembed changes (on a server every reembed to a new model failed).
    const lease = this.config.databaseUrl === undefined ? undefined : this.leaseOn(client);
    return new ReembedCatalogue({ space: new SqlEmbeddingSpace(client), embedder: documents, lease });
  }

  /** The ordered chain of GENERATION_PROVIDERS (a remote provider's SDK is imported only when it is named). */
  generator(): Promise<Generator> {
    return this.once(
      "generator",
      async () => this.overrides.generator ?? createGenerator(this.config, this.log, this.overrides.timers),
    );
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
    if (config.databaseUrl !== undefined) return connectPostgres(config.databaseUrl, this.postgresOptions());
    const assets = await resolveRuntimeAssets({ pglite: true });
    return openPglite(
      resolve(config.dataDir),
      assets.pglite,
      vectorSessionSettings(config.vectorSearch),
      this.options.serving ? { vacuumEveryMs: EMBEDDED_VACUUM_EVERY_MS } : {},
    );
  }

  /** A PostgreSQL pool's options: the search settings, and the service's statement limit. */
  private postgresOptions(): PostgresOptions {
    const { config } = this;
    return {
      sessionSettings: vectorSessionSettings(config.vectorSearch),
      transactionPooler: config.databaseTransactionPooler,
      ...(this.options.serving ? { queryTimeoutMs: config.databaseTimeoutMs } : {}),
    };
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
      const migrator = connectPostgres(databaseUrl, {
        maxConnections: 1,
        transactionPooler: this.config.databaseTransactionPooler,
      });
      await migrate(migrator, space).finally(() => migrator.close());
    } else {
      await migrate(client, space);
    }
  }

  private openVectorIndexes(client: SqlClient, dimension: number, inUse: IndexesInUse): SqlVectorIndexes {
    const { databaseUrl, vectorIndexKind, vectorIndexBuildMemory, vectorIndexBuildWorkers } = this.config;
    return new SqlVectorIndexes(client, dimension, {
      server: databaseUrl !== undefined,
      kind: vectorIndexKind,
      inUse,
      // Behind a transaction pooler a session's advisory lock stays on whichever server connection
      // took it: the upkeep lease alone keeps builds one at a time there.
      advisoryLock: !this.config.databaseTransactionPooler,
      buildMemory: vectorIndexBuildMemory,
      buildWorkers: vectorIndexBuildWorkers,
      // A build takes minutes at 1,000,000 products: on a connection of its own (its advisory lock is the
      // connection's), without the service's statement limit.
      ...(databaseUrl === undefined
        ? {}
        : {
            openBuilder: (onNotice) =>
              connectPostgres(databaseUrl, {
                maxConnections: 1,
                transactionPooler: this.config.databaseTransactionPooler,
                onNotice,
              }),
          }),
      log: (event) => (event.event === "vector_index_build_spilled" ? this.log.warn : this.log.info)(event),
    });
  }
}

/** `url` (a multi-host one too) with target_session_attrs=prefer-standby: it takes whichever host answers. */
function anyHost(url: string): string {
  const [base = url, query = ""] = url.split("?", 2);
  const params = new URLSearchParams(query);
  params.set("target_session_attrs", "prefer-standby");
  return `${base}?${params}`;
}
/** The import jobs' events that say something went wrong but the job goes on (or is resumed). */
const IMPORT_JOB_WARNINGS = new Set([
  "import_job_interrupted",
  "import_job_lease_lost",
  "import_job_worker_failed",
  "import_jobs_prune_failed",
]);

/** The embedder EMBEDDING_PROVIDER names; `log` receives its calls and retries; `timers` (tests) time them. */
async function createEmbedder(config: Config, log: Logger, timers: Timers | undefined): Promise<Embedder> {
  const { embeddingProvider: provider, embeddingDimensions: dimension } = config;
  if (provider === "local") {
    const assets = await resolveRuntimeAssets({ localModel: true });
    const { localModel } = assets;
    return new LocalEmbedder(config.localModelDir ?? localModel?.modelDir ?? INSTALLED_MODEL_DIR, {
      workerUrl: localModel?.workerUrl,
      onnxruntimeBinding: localModel?.onnxruntimeBinding,
    });
  }
  const options = {
    ...clientOptions(config, provider, "embedding", log, timers),
    // Both providers have a default embedding model, so config always sets one.
    model: config.providers[provider].embeddingModel as string,
    dimension,
  };
  return provider === "openai"
    ? new (await import("../adapters/providers/openai.ts")).OpenAIEmbedder({
        ...options,
        encoding: config.openaiEmbeddingEncoding,
      })
    : new (await import("../adapters/providers/google.ts")).GoogleEmbedder(options);
}

/**
 * The ordered chain of GENERATION_PROVIDERS; each link has GENERATION_TIMEOUT_MS, its retries
 * included. A remote provider's adapter (and its SDK) is loaded only when the chain names it.
 */
async function createGenerator(config: Config, log: Logger, timers: Timers | undefined): Promise<Generator> {
  const options = (provider: RemoteProvider) => ({
    ...clientOptions(config, provider, "generation", log, timers),
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
    timers,
  });
}

/**
 * How an adapter reaches its provider. A compatible server (a base URL) may need no key: the SDKs
 * insist on one, so it gets a placeholder the server ignores. Its events name the `kind` of call
 * (for the metrics); each call's outcome is a debug line, retries and giving up are warnings.
 * `timers` (tests) time its retries; the real ones by default.
 */
function clientOptions(
  config: Config,
  provider: RemoteProvider,
  kind: "embedding" | "generation",
  log: Logger,
  timers: Timers | undefined,
): ProviderClientOptions {
  const settings = config.providers[provider];
  return {
    apiKey: settings.apiKey ?? "no-key",
    baseUrl: settings.baseUrl,
    retry: config.providerRetry,
    log: (event) => (event.event === "provider_call" ? log.debug : log.warn)({ ...event, kind }),
    timers,
  };
}

/**
 * Translation of the texts to embed, as QUERY_TRANSLATION says: `auto` is on for the English-only
 * offline model when Apertium answers. Says once in the log whether it is on, and why not. Never
 * stops the service: without Apertium, texts are embedded as they are. `timers` (tests) time its
 * calls; the real ones by default.
 */
async function setUpTranslation(
  config: Config,
  embedder: Embedder,
  log: Logger,
  timers: Timers | undefined,
): Promise<TranslationSetup> {
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
  const translator = new ApertiumTranslator(apertium.pipelines, { timeoutMs, timers });
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
