import { resolve } from "node:path";
import type { Vector } from "../../domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import { systemTimers, type Timers, withinMs } from "../../ports/timers.ts";
import { LOCAL_EMBEDDING_DIMENSION, LocalModel, type LocalModelOptions } from "./local-model.ts";
import { LOCAL_EMBEDDING_MODEL } from "./local-model-files.ts";
import type { LocalModelReply, LocalModelRequest } from "./local-model-worker.ts";

/** The model's options, for both its copies, and where the worker's module is. */
export interface LocalEmbedderOptions extends LocalModelOptions {
  /** The worker's module; the compiled executable names its own copy (src/app/runtime-assets.ts). */
  workerUrl?: string | URL;
  /** How `dispose` waits for the worker to close (systemTimers unless told). */
  timers?: Timers;
}

/** How long `dispose` lets the worker close by itself before stopping it. */
const WORKER_CLOSE_MS = 5_000;

/**
 * The relevance threshold for this model (SEARCH_MIN_SCORE=auto): the cosine under which a query's
 * best product does not count as a match. Calibrated on the eval set's dev queries (bench/eval.ts,
 * SEARCH_MIN_SCORE=0): their best cosines start at 0.331 with a letter mistyped (0.292 without the
 * vocabulary lines taken from their failures, a query Apertium mistranslates), those of 40
 * gibberish queries run from 0.275 to 0.478: no threshold answers every real query and empties
 * gibberish, which is told apart by its words instead (SearchAndRecommend.readable). So it sits
 * below every real query's, with a margin for queries not seen: a paraphrase sharing no word with
 * its product ("brew hot drinks after waking" for an espresso machine) measured 0.231, so 0.25 was
 * too near; at 0.2 no dev query, typo'd or not, and no gibberish one changes side.
 */
export const OFFLINE_MODEL_MIN_SCORE = 0.2;

interface Pending {
  resolve: (vectors: Float32Array) => void;
  reject: (error: Error) => void;
}

/**
 * all-MiniLM-L6-v2 (local-model.ts) in two places. Queries are embedded on the calling thread: one
 * short text, about 4 ms, and a hop to another thread and back measured slower (the default path's
 * p95 0.6 to 5.6 ms higher in four pairs, bench/default-path.ts). Products are embedded in a worker
 * thread (local-model-worker.ts): a batch of 16 holds its thread for about 70 ms and an import's
 * chunk for hundreds, which on the thread that serves requests and runs the embedded database
 * stalled every search meanwhile. Each loads the model on its first use (`load()` loads the
 * queries' now); concurrent first calls share the load. The worker keeps the process alive only
 * while it has work; if it dies, what it was doing fails and the next call starts another.
 */
export class LocalEmbedder implements Embedder {
  readonly model = LOCAL_EMBEDDING_MODEL;
  readonly dimension = LOCAL_EMBEDDING_DIMENSION;
  private readonly modelDir: string;
  private readonly options: LocalEmbedderOptions;
  /** The queries' model, on this thread. */
  private readonly here: LocalModel;
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private workerLoading: Promise<unknown> | null = null;
  private ready = false;

  constructor(modelDir: string, options: LocalEmbedderOptions = {}) {
    this.modelDir = resolve(modelDir);
    this.options = options;
    this.here = new LocalModel(this.modelDir, options);
  }

  /** True once the queries' model is loaded (by `load` or a first query), until `dispose`. */
  get loaded(): boolean {
    return this.ready;
  }

  /** Loads the queries' model now (e.g. at startup, to fail fast); rejects with a clear message when it is missing. */
  async load(): Promise<void> {
    await this.here.load();
    this.ready = true;
  }

  /**
   * Queries here, products in the worker. `signal` aborting rejects at once with its reason; the
   * model stops before its next batch.
   */
  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (texts.length === 0) return [];
    signal?.throwIfAborted();
    const rows =
      purpose === "query"
        ? await this.here.embed(texts, async () => signal?.throwIfAborted())
        : await this.inWorker(texts, signal);
    if (purpose === "query") this.ready = true;
    return Array.from({ length: texts.length }, (_, row) =>
      Array.from(rows.subarray(row * this.dimension, (row + 1) * this.dimension)),
    );
  }

  /** Frees both copies of the model and stops the worker; a later `embed` starts them again. */
  async dispose(): Promise<void> {
    this.ready = false;
    await this.here.dispose();
    const worker = this.worker;
    if (!worker) return;
    this.forget(worker, new Error("the offline model was closed"));
    const { promise: closed, resolve } = Promise.withResolvers<void>();
    worker.addEventListener("message", (event: MessageEvent<LocalModelReply>) => {
      if ("kind" in event.data) resolve();
    });
    worker.addEventListener("close", () => resolve());
    worker.ref();
    worker.postMessage({ kind: "close" } satisfies LocalModelRequest);
    await withinMs(this.options.timers ?? systemTimers, WORKER_CLOSE_MS, closed);
    worker.terminate();
  }

  /** The worker's model (loaded the first time) embeds `texts`. */
  private async inWorker(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array> {
    if (!this.workerLoading) {
      const loading = this.ask({ kind: "load" });
      // A failed load is not kept: the next call tries again (e.g. after the model is installed).
      loading.catch(() => {
        if (this.workerLoading === loading) this.workerLoading = null;
      });
      this.workerLoading = loading;
    }
    await this.workerLoading;
    signal?.throwIfAborted(); // while the model loaded
    return this.ask({ kind: "embed", texts: [...texts] }, signal);
  }

  /** Sends a request to the worker (started if need be) and waits for its reply. */
  private ask(
    request: { kind: "load" } | { kind: "embed"; texts: readonly string[] },
    signal?: AbortSignal,
  ): Promise<Float32Array> {
    const worker = this.started();
    const id = this.nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<Float32Array>();
    const onAbort = () => {
      if (!this.pending.delete(id)) return;
      worker.postMessage({ kind: "cancel", id } satisfies LocalModelRequest);
      this.idleCheck(worker);
      reject(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    this.pending.set(id, {
      resolve: (vectors) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(vectors);
      },
      reject: (error) => {
        signal?.removeEventListener("abort", onAbort);
        reject(error);
      },
    });
    worker.ref(); // it has work: the process waits for it
    worker.postMessage({ ...request, id } satisfies LocalModelRequest);
    return promise;
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.options.workerUrl ?? new URL("./local-model-worker.ts", import.meta.url));
    worker.addEventListener("message", (event: MessageEvent<LocalModelReply>) => {
      const reply = event.data;
      if ("kind" in reply) return;
      const waiting = this.pending.get(reply.id);
      if (!waiting) return; // cancelled meanwhile
      this.pending.delete(reply.id);
      this.idleCheck(worker);
      if ("error" in reply) waiting.reject(new Error(reply.error));
      else waiting.resolve(reply.vectors);
    });
    worker.addEventListener("error", (event) => {
      this.forget(worker, new Error(`the offline model's worker failed: ${event.message}`));
      worker.terminate();
    });
    worker.addEventListener("close", () => this.forget(worker, new Error("the offline model's worker stopped")));
    worker.postMessage({
      kind: "start",
      modelDir: this.modelDir,
      batchSize: this.options.batchSize,
      onnxruntimeBinding: this.options.onnxruntimeBinding,
    } satisfies LocalModelRequest);
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** With nothing left to do, the worker no longer keeps the process alive. */
  private idleCheck(worker: Worker): void {
    if (this.pending.size === 0) worker.unref();
  }

  /** `worker` is done with: what it owed fails with `error`, and the next call starts another. */
  private forget(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.workerLoading = null;
    const owed = [...this.pending.values()];
    this.pending.clear();
    worker.unref();
    for (const waiting of owed) waiting.reject(error);
  }
}
