/**
 * all-MiniLM-L6-v2 (ONNX, q4, 384 dimensions, English) run with onnxruntime-node on the thread that
 * calls it. ONNX Runtime's `run` holds that thread for the whole forward pass (about 4 ms for a
 * query, 70 ms for a batch of 16 products), so the service runs this in a worker thread of its own
 * (local-model-worker.ts, driven by LocalEmbedder), never on the thread that serves requests.
 * Never downloads anything: the model folder must already exist (installed by `bun install`).
 */
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { FeatureExtractionPipeline, Tensor } from "@huggingface/transformers";
import { LOCAL_MODEL_FILES, ONNXRUNTIME_BINDING_GLOBAL } from "./local-model-files.ts";
import { disableOnnxruntimeTelemetry } from "./onnxruntime-telemetry.ts";

export const LOCAL_EMBEDDING_DIMENSION = 384;

/**
 * Tokens kept per text (the tokenizer alone would allow 512). The model was trained on 128-token
 * texts; on the eval set 128 ranks as well as 256 or 512 (nDCG@10 0.316 / 0.311 / 0.312) and embeds
 * the catalogue 25% faster, since attention cost grows with the square of the length.
 */
const MAX_TOKENS = 128;

/**
 * Texts per forward pass. Product texts are long (median ~80 tokens), so on 2 cores batches of 16,
 * 32 or 64 run equally fast (~50 texts/s) while bigger ones grow onnxruntime's memory arena
 * (RSS ~370 MB at 16, ~840 MB at 64): 16 is the default.
 */
const DEFAULT_BATCH_SIZE = 16;

export interface LocalModelOptions {
  /** Texts per forward pass (DEFAULT_BATCH_SIZE). */
  batchSize?: number;
  /**
   * Where the compiled executable's onnxruntime addon is (src/app/runtime-assets.ts); unset from
   * source. Set as this thread's ONNXRUNTIME_BINDING_GLOBAL before the runtime is loaded.
   */
  onnxruntimeBinding?: string;
}

/**
 * Each text's sentence vector from the model's token vectors (`hidden`, rows × tokens × width):
 * the mean of the tokens its attention mask keeps, scaled to unit length. The same float32 values,
 * bit for bit, as transformers' `mean_pooling` then `normalize(2, -1)` (the feature-extraction
 * pipeline's { pooling: "mean", normalize: true }): the mean summed in doubles, the norm's squares
 * added in float32 as its reduction does. Theirs converts a mask value (a BigInt64Array's, a new
 * BigInt each read) for every dimension of every token: 8.4 ms for a batch of 16 products of 64
 * tokens and 0.13 ms for a query, against 0.40 and 0.008 ms here (measured side by side, stop 40).
 */
export function meanPooledUnitVectors(
  hidden: Float32Array,
  [rows, tokens, width]: readonly [number, number, number],
  mask: ArrayLike<bigint | number>,
): Float32Array {
  const vectors = new Float32Array(rows * width);
  const kept = new Float64Array(tokens);
  for (let row = 0; row < rows; row++) {
    let count = 0;
    for (let token = 0; token < tokens; token++) {
      kept[token] = Number(mask[row * tokens + token]);
      count += kept[token] as number;
    }
    const first = row * tokens * width;
    const out = vectors.subarray(row * width, (row + 1) * width);
    for (let k = 0; k < width; k++) {
      let sum = 0;
      for (let token = 0; token < tokens; token++) {
        sum += (hidden[first + token * width + k] as number) * (kept[token] as number);
      }
      out[k] = sum / count;
    }
    let squares = 0;
    for (const value of out) squares = Math.fround(squares + value ** 2);
    const norm = Math.fround(squares ** 0.5);
    for (let k = 0; k < width; k++) out[k] = (out[k] as number) / norm;
  }
  return vectors;
}

export class LocalModel {
  private readonly modelDir: string;
  private readonly batchSize: number;
  private readonly onnxruntimeBinding: string | undefined;
  private loading: Promise<FeatureExtractionPipeline> | null = null;

  constructor(modelDir: string, options: LocalModelOptions = {}) {
    this.modelDir = resolve(modelDir);
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? DEFAULT_BATCH_SIZE));
    this.onnxruntimeBinding = options.onnxruntimeBinding;
  }

  /** Loads the model (once; concurrent calls share the load); rejects with a clear message when it is missing. */
  async load(): Promise<void> {
    await this.pipeline();
  }

  /**
   * The texts' unit vectors, row after row (texts.length × 384), in input order. `betweenBatches`
   * runs before each forward pass: it may throw to stop the work (the caller no longer wants it).
   */
  async embed(texts: readonly string[], betweenBatches?: () => Promise<void>): Promise<Float32Array<ArrayBuffer>> {
    const vectors = new Float32Array(texts.length * LOCAL_EMBEDDING_DIMENSION);
    if (texts.length === 0) return vectors;
    const extractor = await this.pipeline();
    // Batches of similar length waste less work on padding: embed in length order, answer in input order.
    const order = texts.map((_, i) => i).sort((a, b) => (texts[a] as string).length - (texts[b] as string).length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      await betweenBatches?.();
      const indices = order.slice(start, start + this.batchSize);
      // What the feature-extraction pipeline does with { pooling: "mean", normalize: true }, plus the
      // token cap; the pooling is meanPooledUnitVectors'.
      const inputs = extractor.tokenizer(
        indices.map((i) => texts[i] as string),
        { padding: true, truncation: true, max_length: MAX_TOKENS },
      );
      const { last_hidden_state: hidden } = (await extractor.model(inputs)) as { last_hidden_state: Tensor };
      const [rows, tokens, columns] = hidden.dims;
      if (rows !== indices.length || columns !== LOCAL_EMBEDDING_DIMENSION || tokens === undefined) {
        throw new Error(`the offline model returned a [${hidden.dims.join(", ")}] tensor for ${indices.length} texts`);
      }
      const mask = (inputs.attention_mask as Tensor).data as BigInt64Array;
      const data = meanPooledUnitVectors(hidden.data as Float32Array, [rows, tokens, columns], mask);
      indices.forEach((textIndex, row) => {
        vectors.set(data.subarray(row * columns, (row + 1) * columns), textIndex * LOCAL_EMBEDDING_DIMENSION);
      });
      for (const tensor of [hidden, ...Object.values(inputs)] as Tensor[]) tensor.dispose();
    }
    return vectors;
  }

  /** Frees the ONNX session; a later call loads the model again. */
  async dispose(): Promise<void> {
    const loading = this.loading;
    this.loading = null;
    if (loading) await (await loading.catch(() => null))?.dispose();
  }

  private pipeline(): Promise<FeatureExtractionPipeline> {
    if (!this.loading) {
      const loading = this.open();
      // A failed load is not kept: the next call tries again (e.g. after the model is installed).
      loading.catch(() => {
        if (this.loading === loading) this.loading = null;
      });
      this.loading = loading;
    }
    return this.loading;
  }

  private async open(): Promise<FeatureExtractionPipeline> {
    const missing = LOCAL_MODEL_FILES.filter((file) => !existsSync(join(this.modelDir, file)));
    if (missing.length > 0) {
      throw new Error(
        `The offline embedding model is not installed in ${this.modelDir} (missing ${missing.join(", ")}). ` +
          "Run `bun install` in the project folder: its postinstall step installs the model (scripts/install-model.ts).",
      );
    }
    disableOnnxruntimeTelemetry(); // before the first ONNX session, which would start it
    if (this.onnxruntimeBinding !== undefined) {
      (globalThis as Record<string, unknown>)[ONNXRUNTIME_BINDING_GLOBAL] = this.onnxruntimeBinding;
    }
    // Imported here, not at the top: the ONNX runtime (and sharp, which transformers imports eagerly)
    // is only loaded by processes that actually embed locally.
    const { env, pipeline } = await import("@huggingface/transformers");
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.useFSCache = false;
    env.useBrowserCache = false;
    env.localModelPath = dirname(this.modelDir);
    return pipeline("feature-extraction", basename(this.modelDir), {
      dtype: "q4",
      // ONNX Runtime's worker threads spin after each run by default, waiting for the next one: 7 ms
      // of a core per query here, taken from Apertium's processes and the database that come next.
      // Blocking instead (bench/default-path.ts, three pairs side by side, load 2.0 to 2.3): cache-miss
      // p95 24.2 to 27.0 ms against 31.5 to 42.9, p50 14.5 to 16.7 against 15.6 to 20.3.
      session_options: { extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } } },
    });
  }
}
