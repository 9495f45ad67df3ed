import OpenAI from "openai";
import type { Vector } from "../../domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { embedInBatches } from "./batching.ts";
import type { OpenAIEmbeddingEncoding } from "./default-models.ts";
import {
  GenerationRefused,
  type ProviderClientOptions,
  recommendationStream,
  sdkTimeoutMs,
} from "./provider-client.ts";
import { RECOMMENDATION_MAX_TOKENS, recommendationPrompt } from "./recommendation-prompt.ts";
import { resilientFetch } from "./resilient-fetch.ts";

/** The SDK's own default, given explicitly so that it never falls back to reading the environment. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/**
 * OpenAI's embeddings limits are 2,048 inputs and 300,000 tokens per request; our token count is an
 * estimate (see estimateTokens), hence the margin.
 */
const EMBEDDING_BATCH_LIMITS = { maxInputs: 2048, maxTokens: 250_000 } as const;
const DEFAULT_EMBEDDING_CONCURRENCY = 4;
/**
 * Calls (an import's chunks, one request each up to 2,048 texts) worth making at once: each waits
 * on the network for most of its time (bench/scale.ts, `--latency-ms 1000`: README "Chunks
 * embedded ahead of the write").
 */
const EMBEDDING_CALLS_AT_ONCE = 4;
/** Texts a call is given when the caller chooses (a re-embedding's batches): a quarter of a request's limit. */
const EMBEDDING_TEXTS_PER_CALL = 512;

/**
 * An OpenAI call that failed (HTTP error, connection, timeout, unreadable answer), described without
 * the API key: a server may echo the key back in its error message, so the SDK's error is not passed on.
 */
export class OpenAIRequestFailed extends Error {
  override readonly name = "OpenAIRequestFailed";
  constructor(
    message: string,
    /** The HTTP status when the server answered, e.g. 401 or 429. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * The SDK client, with every retry left to resilientFetch and nothing read from the environment
 * (the config module alone does that).
 */
function openAIClient(options: ProviderClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseUrl || OPENAI_DEFAULT_BASE_URL,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    maxRetries: 0,
    timeout: sdkTimeoutMs(options.retry),
    fetch: resilientFetch({ provider: "openai", policy: options.retry, log: options.log, timers: options.timers }),
    // Our own log events report retries and failures; the SDK stays silent even when OPENAI_LOG is set.
    logLevel: "off",
  });
}

/** Runs one SDK call; a caller's abort passes through as its reason, any other failure becomes OpenAIRequestFailed. */
async function sdkCall<T>(
  what: string,
  apiKey: string,
  signal: AbortSignal | undefined,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    const status = error instanceof OpenAI.APIError ? error.status : undefined;
    throw new OpenAIRequestFailed(withoutKey(`openai ${what} failed: ${describe(error)}`, apiKey), status);
  }
}

/** "Name: message", followed by its cause's (a connection error says little without it). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const own = `${nameOf(error)}: ${error.message}`;
  return error.cause instanceof Error ? `${own} (${nameOf(error.cause)}: ${error.cause.message})` : own;
}

/** The SDK's error classes (AuthenticationError, RateLimitError...) leave `name` as "Error". */
function nameOf(error: Error): string {
  return error.name === "Error" ? error.constructor.name || "Error" : error.name;
}

function withoutKey(text: string, apiKey: string): string {
  return apiKey ? text.replaceAll(apiKey, "[redacted]") : text;
}

/**
 * OpenAI embeddings (`POST /embeddings`), or any OpenAI-compatible server's through `baseUrl`.
 * Texts go in batches within OpenAI's request limits, `concurrency` requests at a time.
 */
export class OpenAIEmbedder implements Embedder {
  /** `openai/<model>`: identifies the vector space stored in the database. */
  readonly model: string;
  readonly dimension: number;
  readonly callsAtOnce = EMBEDDING_CALLS_AT_ONCE;
  readonly textsPerCall = EMBEDDING_TEXTS_PER_CALL;
  private readonly apiModel: string;
  private readonly apiKey: string;
  private readonly concurrency: number;
  private readonly encoding: OpenAIEmbeddingEncoding;
  private readonly client: OpenAI;

  constructor(
    options: ProviderClientOptions & {
      model: string;
      dimension: number;
      concurrency?: number;
      encoding?: OpenAIEmbeddingEncoding;
    },
  ) {
    this.apiModel = options.model;
    this.model = `openai/${options.model}`;
    this.dimension = options.dimension;
    this.apiKey = options.apiKey;
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_EMBEDDING_CONCURRENCY));
    this.encoding = options.encoding ?? "base64";
    this.client = openAIClient(options);
  }

  /** The purpose makes no difference: OpenAI embeds queries and documents alike. */
  async embed(texts: readonly string[], _purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (texts.length === 0) return [];
    return embedInBatches(texts, { ...EMBEDDING_BATCH_LIMITS, concurrency: this.concurrency }, (batch) =>
      this.embedBatch(batch, signal),
    );
  }

  private async embedBatch(batch: string[], signal: AbortSignal | undefined): Promise<Vector[]> {
    const response = await sdkCall("embeddings", this.apiKey, signal, () =>
      this.client.embeddings.create(
        {
          model: this.apiModel,
          input: batch,
          dimensions: this.dimension,
          // Given explicitly, the SDK hands the strings over as they came (decoded in inInputOrder).
          encoding_format: this.encoding,
        },
        { signal },
      ),
    );
    return inInputOrder(response, batch.length);
  }
}

/**
 * The vectors of an embeddings answer placed by their `index` (servers need not answer in order).
 * The lengths and values are checked by the use cases (embedMany); here only the shape.
 */
function inInputOrder(response: unknown, count: number): Vector[] {
  const data = (response as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new OpenAIRequestFailed("openai embeddings: the answer has no data list");
  if (data.length !== count) {
    throw new OpenAIRequestFailed(`openai embeddings: ${data.length} vectors for ${count} texts`);
  }
  const vectors = new Array<Vector | undefined>(count);
  for (const item of data as { index?: unknown; embedding?: unknown }[]) {
    const index = item?.index;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count) {
      throw new OpenAIRequestFailed(`openai embeddings: invalid index ${JSON.stringify(index)}`);
    }
    if (vectors[index] !== undefined) throw new OpenAIRequestFailed(`openai embeddings: index ${index} twice`);
    if (typeof item.embedding === "string") {
      vectors[index] = fromBase64Floats(item.embedding, index);
      continue;
    }
    if (!Array.isArray(item.embedding)) {
      throw new OpenAIRequestFailed(`openai embeddings: the embedding at index ${index} is not a list of numbers`);
    }
    vectors[index] = item.embedding as Vector;
  }
  // count items, no duplicate, all in range: every slot is filled.
  return vectors as Vector[];
}

/** An embedding sent as base64 (little-endian float32 values, as OpenAI sends them) as numbers. */
function fromBase64Floats(base64: string, index: number): Vector {
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length % 4 !== 0) {
    throw new OpenAIRequestFailed(`openai embeddings: the embedding at index ${index} is not base64 of float32 values`);
  }
  // A Float32Array must start at a multiple of 4 bytes; a small Buffer may sit anywhere in Node's pool.
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : new Uint8Array(bytes);
  const floats = new Float32Array(aligned.buffer, aligned.byteOffset, aligned.length / 4);
  const vector: Vector = new Array(floats.length);
  for (let i = 0; i < floats.length; i++) vector[i] = floats[i] as number;
  return vector;
}

/**
 * Recommendations through Chat Completions (`POST /chat/completions`), which OpenAI and every
 * OpenAI-compatible server speak: the fixed instructions as the system message, the data as the
 * only user message.
 */
export class OpenAIGenerator implements Generator {
  /** `openai/<model>`, for logs. */
  readonly name: string;
  private readonly apiModel: string;
  private readonly apiKey: string;
  private readonly client: OpenAI;

  constructor(options: ProviderClientOptions & { model: string }) {
    this.apiModel = options.model;
    this.name = `openai/${options.model}`;
    this.apiKey = options.apiKey;
    this.client = openAIClient(options);
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const completion = await sdkCall("chat completion", this.apiKey, signal, () =>
      this.client.chat.completions.create(this.body(request), { signal }),
    );
    const choice = completion?.choices?.[0];
    if (!choice) throw new OpenAIRequestFailed("openai chat completion: the answer has no choices");
    const { message, finish_reason: finishReason } = choice;
    if (typeof message?.refusal === "string" && message.refusal.trim() !== "") {
      throw new GenerationRefused(`refusal: ${message.refusal.trim().slice(0, 200)}`);
    }
    if (finishReason === "content_filter") throw new GenerationRefused("content filter");
    if (typeof message?.content !== "string") {
      throw new OpenAIRequestFailed(`openai chat completion: no text (finish_reason ${String(finishReason)})`);
    }
    return { text: message.content.trim(), provider: "OPENAI", model: this.apiModel };
  }

  /** The same request with `stream: true`: chat.completion.chunk events until `[DONE]`. */
  stream(request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    return recommendationStream(signal, { provider: "OPENAI", model: this.apiModel }, (requestSignal) =>
      this.pieces(request, requestSignal),
    );
  }

  private async *pieces(request: RecommendationRequest, signal: AbortSignal): AsyncGenerator<string> {
    try {
      const chunks = await this.client.chat.completions.create({ ...this.body(request), stream: true }, { signal });
      let finishReason: string | null = null;
      for await (const chunk of chunks) {
        // A chunk may have no choice (a usage chunk) or no delta.
        const choice = chunk?.choices?.[0];
        const refusal = choice?.delta?.refusal;
        if (typeof refusal === "string" && refusal.trim() !== "") {
          throw new GenerationRefused(`refusal: ${refusal.trim().slice(0, 200)}`);
        }
        if (choice?.finish_reason === "content_filter") throw new GenerationRefused("content filter");
        const content = choice?.delta?.content;
        if (typeof content === "string") yield content;
        finishReason = choice?.finish_reason ?? finishReason;
      }
      // The SDK ends a stream quietly when its request is aborted (a timeout included).
      if (finishReason === null) throw new Error("the stream ended before the model finished");
    } catch (error) {
      if (error instanceof GenerationRefused || signal.aborted) throw error;
      const status = error instanceof OpenAI.APIError ? error.status : undefined;
      throw new OpenAIRequestFailed(
        withoutKey(`openai chat completion stream failed: ${describe(error)}`, this.apiKey),
        status,
      );
    }
  }

  private body(request: RecommendationRequest) {
    const prompt = recommendationPrompt(request);
    return {
      model: this.apiModel,
      messages: [
        { role: "system" as const, content: prompt.system },
        { role: "user" as const, content: prompt.user },
      ],
      max_completion_tokens: RECOMMENDATION_MAX_TOKENS,
    };
  }
}
