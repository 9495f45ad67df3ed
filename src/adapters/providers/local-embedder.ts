import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { FeatureExtractionPipeline, Tensor } from "@huggingface/transformers";
import type { Vector } from "../../domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import { LOCAL_EMBEDDING_MODEL, LOCAL_MODEL_FILES } from "./local-model-files.ts";
import { disableOnnxruntimeTelemetry } from "./onnxruntime-telemetry.ts";

export const LOCAL_EMBEDDING_DIMENSION = 384;

/**
 * Tokens kept per text (the tokenizer alone would allow 512). The model was trained on 128-token
 * texts; on the eval set 128 ranks as well as 256 or 512 (nDCG@10 0.316 / 0.311 / 0.312) and embeds
 * the catalogue 25% faster, since attention cost grows with the square of the length.
 */
const MAX_TOKENS = 128;

export interface LocalEmbedderOptions {
  /**
   * Texts per forward pass. Product texts are long (median ~80 tokens), so on 2 cores batches of 16,
   * 32 or 64 run equally fast (~50 texts/s) while bigger ones grow onnxruntime's memory arena
   * (RSS ~370 MB at 16, ~840 MB at 64): 16 is the default.
   */
  batchSize?: number;
}

interface LoadedModel {
  extractor: FeatureExtractionPipeline;
  meanPooling: (lastHiddenState: Tensor, attentionMask: Tensor) => Tensor;
}

/**
 * all-MiniLM-L6-v2 (ONNX, q4, 384 dimensions, English) run in process with onnxruntime-node.
 * Never downloads anything: the model folder must already exist (installed by `bun install`).
 * The model is loaded once, on the first `embed` or an explicit `load()`; concurrent first calls share that load.
 */
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

export class LocalEmbedder implements Embedder {
  readonly model = LOCAL_EMBEDDING_MODEL;
  readonly dimension = LOCAL_EMBEDDING_DIMENSION;
  private readonly modelDir: string;
  private readonly batchSize: number;
  private loading: Promise<LoadedModel> | null = null;
  private ready = false;

  constructor(modelDir: string, options: LocalEmbedderOptions = {}) {
    this.modelDir = resolve(modelDir);
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? 16));
  }

  /** True once the model is loaded (by `load` or a first `embed`), until `dispose`. */
  get loaded(): boolean {
    return this.ready;
  }

  /** Loads the model now (e.g. at startup, to fail fast); rejects with a clear message when it is missing. */
  async load(): Promise<void> {
    await this.pipeline();
  }

  /** Runs in this process, a few milliseconds per batch: `signal` is checked between batches. */
  async embed(texts: readonly string[], _purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (texts.length === 0) return [];
    const { extractor, meanPooling } = await this.pipeline();
    // Batches of similar length waste less work on padding: embed in length order, answer in input order.
    const order = texts.map((_, i) => i).sort((a, b) => (texts[a] as string).length - (texts[b] as string).length);
    const vectors: Vector[] = new Array(texts.length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      signal?.throwIfAborted();
      const indices = order.slice(start, start + this.batchSize);
      // What the feature-extraction pipeline does with { pooling: "mean", normalize: true }, plus the token cap.
      const inputs = extractor.tokenizer(
        indices.map((i) => texts[i] as string),
        { padding: true, truncation: true, max_length: MAX_TOKENS },
      );
      const { last_hidden_state: hidden } = (await extractor.model(inputs)) as { last_hidden_state: Tensor };
      const output = meanPooling(hidden, inputs.attention_mask as Tensor).normalize(2, -1);
      const [rows, columns] = output.dims;
      if (rows !== indices.length || columns !== this.dimension) {
        throw new Error(`${this.model} returned a [${output.dims.join(", ")}] tensor for ${indices.length} texts`);
      }
      const data = output.data as Float32Array;
      indices.forEach((textIndex, row) => {
        vectors[textIndex] = Array.from(data.subarray(row * columns, (row + 1) * columns));
      });
      for (const tensor of [output, hidden, ...Object.values(inputs)] as Tensor[]) tensor.dispose();
    }
    return vectors;
  }

  /** Frees the ONNX session; a later `embed` loads the model again. */
  async dispose(): Promise<void> {
    const loading = this.loading;
    this.loading = null;
    this.ready = false;
    if (loading) await (await loading).extractor.dispose();
  }

  private pipeline(): Promise<LoadedModel> {
    if (!this.loading) {
      const loading = this.open();
      // A failed load is not kept: the next call tries again (e.g. after the model is installed).
      loading.then(
        () => {
          if (this.loading === loading) this.ready = true;
        },
        () => {
          if (this.loading === loading) this.loading = null;
        },
      );
      this.loading = loading;
    }
    return this.loading;
  }

  private async open(): Promise<LoadedModel> {
    const missing = LOCAL_MODEL_FILES.filter((file) => !existsSync(join(this.modelDir, file)));
    if (missing.length > 0) {
      throw new Error(
        `The offline embedding model is not installed in ${this.modelDir} (missing ${missing.join(", ")}). ` +
          "Run `bun install` in the project folder: its postinstall step installs the model (scripts/install-model.ts).",
      );
    }
    disableOnnxruntimeTelemetry(); // before the first ONNX session, which would start it
    // Imported here, not at the top: the ONNX runtime (and sharp, which transformers imports eagerly)
    // is only loaded by processes that actually embed locally.
    const { env, mean_pooling, pipeline } = await import("@huggingface/transformers");
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.useFSCache = false;
    env.useBrowserCache = false;
    env.localModelPath = dirname(this.modelDir);
    const extractor = await pipeline("feature-extraction", basename(this.modelDir), {
      dtype: "q4",
      // ONNX Runtime's worker threads spin after each run by default, waiting for the next one: 7 ms
      // of a core per query here, taken from Apertium's processes and the database that come next.
      // Blocking instead (bench/default-path.ts, three pairs side by side, load 2.0 to 2.3): cache-miss
      // p95 24.2 to 27.0 ms against 31.5 to 42.9, p50 14.5 to 16.7 against 15.6 to 20.3.
      session_options: { extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } } },
    });
    return { extractor, meanPooling: mean_pooling };
  }
}
