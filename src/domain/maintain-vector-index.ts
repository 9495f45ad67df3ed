import type { UpkeepLease } from "../ports/upkeep-lease.ts";
import type { VectorIndex, VectorIndexes } from "../ports/vector-index.ts";

export const VECTOR_INDEX_MODES = ["auto", "off"] as const;
export type VectorIndexMode = (typeof VECTOR_INDEX_MODES)[number];

/** When the service may build the index by itself (VECTOR_INDEX, VECTOR_INDEX_MIN_ROWS). */
export interface VectorIndexPolicy {
  /** `auto`: built once the catalogue reaches minRows and writes pause; `off`: only when the operator asks. */
  mode: VectorIndexMode;
  /** Products from which the index pays for what it costs every write. */
  minRows: number;
}

/** What one look at the index decided. */
export type IndexDecision =
  /** It was built (or an invalid one built again) by this call. */
  | "built"
  /** VECTOR_INDEX=off, or no index can exist here, or it is built only on the operator's demand. */
  | "not-automatic"
  /** There is a valid index of the wanted kind: every write keeps it up to date. */
  | "ready"
  /** The catalogue is under minRows: an exact scan is fast enough and writes stay fast. */
  | "too-small"
  /** Products were written since the last look: a load is under way, build once it pauses. */
  | "writes-under-way"
  /** Another process (or an earlier call) is building it, or another instance holds the upkeep lease. */
  | "busy"
  /** The database failed; the next look tries again. */
  | "failed";

export interface Deps {
  index: VectorIndex;
  policy: VectorIndexPolicy;
  /**
   * Held for the whole look, so that of several instances on one database only one looks (and
   * builds) at a time, and never while a re-embed runs; absent: this process is the only one.
   */
  lease?: UpkeepLease | undefined;
  /** `vector_index_failed` {error} when a look fails. */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * MaintainVectorIndex: the one policy that keeps the vector index fit, run by the service (a look
 * every VECTOR_INDEX_CHECK interval, `check`) and by the operator's commands after a large load
 * (`afterLoad`, at the end of an import or a re-embed).
 *
 * An index may slow every write (an HNSW graph on half-precision vectors took 186 products/s against
 * 1,856 without it, at 100,000 × 3072; the default IVFFlat on their bits costs writes little), and a
 * small catalogue is scanned fast enough. So in `auto` mode it is built once the catalogue has
 * minRows products and no product was written since the previous look: after a large load, not
 * during it. A command that has just finished a load knows it is over and builds at once. Once
 * built, the index is kept up to date by every write. It is built again, at a look as quiet, when
 * the adapter says it is `outdated` (another kind than VECTOR_INDEX_KIND now asks for, or an IVFFlat
 * index whose lists no longer fit a catalogue that has doubled or halved): the build makes the new
 * one beside the old, then drops the old, so searches keep an index throughout. An invalid one (a
 * concurrent build that failed) is built again at the next look.
 */
export class MaintainVectorIndex {
  private lastWriteCount: number | undefined;
  /** The look under way: one at a time (a build takes minutes; a second look meanwhile is "busy"). */
  private looking: Promise<IndexDecision> | undefined;

  constructor(private readonly deps: Deps) {}

  /** One periodic look: builds when due and the catalogue was quiet since the previous look. */
  check(): Promise<IndexDecision> {
    return this.decide({ loadFinished: false });
  }

  /** After a large load that has ended (an import, a re-embed): builds when due, without waiting for a quiet look. */
  afterLoad(): Promise<IndexDecision> {
    return this.decide({ loadFinished: true });
  }

  /** Waits for the look under way, a build included (the service's shutdown). */
  async settled(): Promise<void> {
    await this.looking;
  }

  private decide(options: { loadFinished: boolean }): Promise<IndexDecision> {
    if (this.looking) return Promise.resolve("busy");
    this.looking = this.look(options).finally(() => {
      this.looking = undefined;
    });
    return this.looking;
  }

  private async look(options: { loadFinished: boolean }): Promise<IndexDecision> {
    const { lease } = this.deps;
    try {
      if (lease && !(await lease.acquire())) return "busy";
    } catch (error) {
      this.deps.log?.({ event: "vector_index_failed", error });
      return "failed";
    }
    try {
      return await this.lookHolding(options);
    } finally {
      await lease?.release().catch((error: unknown) => this.deps.log?.({ event: "upkeep_lease_failed", error }));
    }
  }

  private async lookHolding({ loadFinished }: { loadFinished: boolean }): Promise<IndexDecision> {
    const { index, policy } = this.deps;
    try {
      const writes = await index.writeCount();
      const quiet = loadFinished || writes === this.lastWriteCount;
      this.lastWriteCount = writes;
      const status = await index.status();
      if (policy.mode === "off" || status.availability !== "automatic") return "not-automatic";
      if (status.present && status.valid && !status.outdated) return "ready";
      if (!quiet) return "writes-under-way";
      if (!(await index.hasAtLeast(policy.minRows))) return "too-small";
      return (await index.build()) ? "built" : "busy";
    } catch (error) {
      this.deps.log?.({ event: "vector_index_failed", error });
      return "failed";
    }
  }
}

export interface CatalogueDeps {
  indexes: VectorIndexes;
  policy: VectorIndexPolicy;
  /** Held for a whole look at every catalogue (see Deps.lease). */
  lease?: UpkeepLease | undefined;
  log?: (event: Record<string, unknown>) => void;
}

/**
 * The index policy of every catalogue: each catalogue's products have an index of their own, kept
 * by a MaintainVectorIndex of its own (built when that catalogue reaches minRows and its writes
 * pause), so one catalogue's load never delays another's build, and a small catalogue stays an exact
 * scan of its own products (bench/catalogues.ts). One look takes the upkeep lease once for all of them.
 */
export class MaintainCatalogueIndexes {
  private readonly each = new Map<string, { index: VectorIndex; policy: MaintainVectorIndex }>();
  private looking: Promise<unknown> | undefined;

  constructor(private readonly deps: CatalogueDeps) {}

  /** One periodic look at every catalogue's index: what was decided for each. */
  check(): Promise<Map<string, IndexDecision>> {
    return this.holding(async () => {
      const decisions = new Map<string, IndexDecision>();
      const names = await this.deps.indexes.catalogues();
      for (const name of this.each.keys()) if (!names.includes(name)) this.each.delete(name);
      for (const name of names) {
        const policy = await this.policyOf(name);
        if (policy) decisions.set(name, await policy.check());
      }
      return decisions;
    }, new Map<string, IndexDecision>());
  }

  /** After a large load into `catalogue` that has ended (an import): builds its index when due. */
  afterLoad(catalogue: string): Promise<IndexDecision> {
    return this.holding(async () => (await this.policyOf(catalogue))?.afterLoad() ?? "not-automatic", "busy");
  }

  /** Waits for the look under way, a build included (the service's shutdown). */
  async settled(): Promise<void> {
    await this.looking;
  }

  /** `look` holding the upkeep lease ("busy" / `busy` when another instance holds it or a look runs here). */
  private async holding<T>(look: () => Promise<T>, busy: T): Promise<T> {
    if (this.looking) return busy;
    const { lease } = this.deps;
    const run = (async () => {
      try {
        if (lease && !(await lease.acquire())) return busy;
      } catch (error) {
        this.deps.log?.({ event: "vector_index_failed", error });
        return busy;
      }
      try {
        return await look();
      } catch (error) {
        this.deps.log?.({ event: "vector_index_failed", error });
        return busy;
      } finally {
        await lease?.release().catch((error: unknown) => this.deps.log?.({ event: "upkeep_lease_failed", error }));
      }
    })();
    this.looking = run.finally(() => {
      this.looking = undefined;
    });
    return run;
  }

  /** The policy of the catalogue's index (a new one when the catalogue was made again), or none. */
  private async policyOf(catalogue: string): Promise<MaintainVectorIndex | undefined> {
    const index = await this.deps.indexes.of(catalogue);
    if (!index) {
      this.each.delete(catalogue);
      return undefined;
    }
    const known = this.each.get(catalogue);
    if (known?.index === index) return known.policy;
    const policy = new MaintainVectorIndex({ index, policy: this.deps.policy, log: this.deps.log });
    this.each.set(catalogue, { index, policy });
    return policy;
  }
}
