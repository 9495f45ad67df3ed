import { EmbeddingSpaceChanged } from "../../domain/errors.ts";
import type { Embedder } from "../../ports/embedder.ts";
import type { EmbeddingSpace } from "../../ports/embedding-space.ts";
import type { SqlClient } from "./sql-client.ts";

export interface EmbeddingSpaceWatchOptions {
  /** Time between two looks, in ms (default 2000). */
  lookEveryMs?: number;
  /** `embedding_space_changed` {stored, configured} once, when the catalogue is found in another space. */
  log?: (event: Record<string, unknown>) => void;
}

/** pgvector's error for vectors of two dimensions (a query of the old model against the new column). */
const DATA_EXCEPTION = "22000";

/**
 * Whether the catalogue is still in the space of this process's embedder, for a service that runs
 * beside others on one database: a `reembed` run elsewhere (another instance's host, the CLI)
 * switches the stored space (`embedding_space`), and this process cannot switch models itself.
 * It looks every `lookEveryMs` (one row, where reads go: bench/replicas.ts measured it), and hears
 * of it at once from a product write the database refused (product-repository.ts checks every write
 * in the same statement, so no vector of the old space is stored meanwhile) or from a search that
 * failed on the new column's dimension. From then on, until the process is restarted with the new
 * model, every embedding it would make fails with EmbeddingSpaceChanged (503): searches and product
 * writes are refused, and readiness says why.
 */
export class EmbeddingSpaceWatch {
  private storedSpace: EmbeddingSpace | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private looking: Promise<void> | undefined;

  constructor(
    private readonly reads: SqlClient,
    readonly configured: EmbeddingSpace,
    private readonly options: EmbeddingSpaceWatchOptions = {},
  ) {}

  /** The space the catalogue was found in, when it is not this process's; undefined while it is. */
  get changedTo(): EmbeddingSpace | undefined {
    return this.storedSpace;
  }

  /** Reads the stored space once (a failure to read it changes nothing: the next look tries again). */
  look(): Promise<void> {
    this.looking ??= this.reads
      .query<EmbeddingSpace>("SELECT model, dimension FROM embedding_space")
      .then(([row]) => {
        if (row) this.found({ model: row.model, dimension: Number(row.dimension) });
      })
      .catch(() => {})
      .finally(() => {
        this.looking = undefined;
      });
    return this.looking;
  }

  /** What the catalogue's space was found to be (a look, or a refused write): noted once it differs, for good. */
  found(stored: EmbeddingSpace): void {
    if (this.storedSpace !== undefined) return;
    if (stored.model === this.configured.model && stored.dimension === this.configured.dimension) return;
    this.storedSpace = stored;
    this.options.log?.({
      event: "embedding_space_changed",
      stored,
      configured: this.configured,
      message:
        `the catalogue's embeddings are now of model "${stored.model}" (${stored.dimension} dimensions), but this ` +
        `process embeds with "${this.configured.model}" (${this.configured.dimension}): searches and product writes ` +
        "answer 503 until it is restarted with the new model",
    });
  }

  /** Throws EmbeddingSpaceChanged once the catalogue is in another space. */
  check(): void {
    if (this.storedSpace) throw new EmbeddingSpaceChanged(this.storedSpace, this.configured);
  }

  /** `embedder`, failing with EmbeddingSpaceChanged instead of embedding once the catalogue is in another space. */
  guard(embedder: Embedder): Embedder {
    return {
      get model() {
        return embedder.model;
      },
      get dimension() {
        return embedder.dimension;
      },
      get callsAtOnce() {
        return embedder.callsAtOnce;
      },
      get textsPerCall() {
        return embedder.textsPerCall;
      },
      embed: (texts, purpose, signal) => {
        try {
          this.check();
        } catch (error) {
          return Promise.reject(error);
        }
        return embedder.embed(texts, purpose, signal);
      },
    };
  }

  /**
   * `reads`, whose statements failing on a vector's dimension (a search with a query of the old
   * model, before the next look) make the watch look at once: then they fail with
   * EmbeddingSpaceChanged (503) rather than as an internal error.
   */
  guardReads(reads: SqlClient): SqlClient {
    const explained = async (error: unknown): Promise<never> => {
      if ((error as { code?: unknown } | null)?.code === DATA_EXCEPTION) {
        await this.look();
        this.check();
      }
      throw error;
    };
    return {
      query: (text: string, params?: readonly unknown[]) => reads.query(text, params).catch(explained),
      transaction: <R>(fn: (tx: SqlClient) => Promise<R>) => reads.transaction(fn).catch(explained),
      copyIn: (table: string, columns: readonly string[], data: Uint8Array) => reads.copyIn(table, columns, data),
      close: () => reads.close(),
    } as SqlClient;
  }

  /** Looks every lookEveryMs until close(). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.look(), this.options.lookEveryMs ?? 2000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.looking;
  }
}
