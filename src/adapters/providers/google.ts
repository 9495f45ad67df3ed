import { FinishReason, GoogleGenAI } from "@google/genai";
import type { Vector } from "../../domain/vector.ts";
import type { Embedder, EmbeddingPurpose } from "../../ports/embedder.ts";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { embedInBatches } from "./batching.ts";
import {
  GenerationRefused,
  type ProviderClientOptions,
  recommendationStream,
  sdkTimeoutMs,
} from "./provider-client.ts";
import { RECOMMENDATION_MAX_TOKENS, recommendationPrompt } from "./recommendation-prompt.ts";
import { resilientFetch } from "./resilient-fetch.ts";

/**
 * The Gemini API's own endpoint and version, given to the SDK explicitly so that its environment
 * variables (GOOGLE_GEMINI_BASE_URL, GOOGLE_GENAI_API_VERSION, GOOGLE_GENAI_USE_VERTEXAI) cannot
 * change where our requests go: configuration is read in one place only.
 */
const GEMINI_API_BASE_URL = "https://generativelanguage.googleapis.com/";
const GEMINI_API_VERSION = "v1beta";

/** batchEmbedContents takes at most 100 requests; gemini-embedding-001 reads up to 2,048 tokens of each. */
const EMBEDDING_BATCH_LIMITS = { maxInputs: 100, maxTokens: 100 * 2_048 };
const DEFAULT_CONCURRENCY = 4;
/** Calls (an import's chunks, each in batches of 100, `concurrency` at a time) worth making at once: they wait on the network. */
const EMBEDDING_CALLS_AT_ONCE = 2;
/** Texts a call is given when the caller chooses (a re-embedding's batches): four requests of 100, sent at once. */
const EMBEDDING_TEXTS_PER_CALL = 400;

/** Finish reasons that mean the model was stopped by a filter, not that it failed. */
const REFUSAL_FINISH_REASONS: ReadonlySet<string> = new Set([
  FinishReason.SAFETY,
  FinishReason.RECITATION,
  FinishReason.BLOCKLIST,
  FinishReason.PROHIBITED_CONTENT,
  FinishReason.SPII,
  FinishReason.IMAGE_SAFETY,
]);

/**
 * A Gemini API client whose HTTP goes through resilientFetch. No `retryOptions`: the SDK then makes
 * exactly one fetch per call, so all retrying happens in resilientFetch. The key travels only in the
 * `x-goog-api-key` header (the SDK never puts it in the URL).
 */
function geminiClient(options: ProviderClientOptions): GoogleGenAI {
  return new GoogleGenAI({
    vertexai: false,
    apiKey: options.apiKey,
    apiVersion: GEMINI_API_VERSION,
    httpOptions: {
      baseUrl: options.baseUrl ?? GEMINI_API_BASE_URL,
      fetch: resilientFetch({ provider: "google", policy: options.retry, log: options.log, timers: options.timers }),
      timeout: sdkTimeoutMs(options.retry),
    },
  });
}

export interface GoogleEmbedderOptions extends ProviderClientOptions {
  /** e.g. "gemini-embedding-001". */
  model: string;
  /** Sent as outputDimensionality (gemini-embedding-001: 3072, or a smaller truncation). */
  dimension: number;
  /** Batch requests in flight at once (default 4). */
  concurrency?: number;
}

/** Embeddings from the Gemini API (batchEmbedContents), with retrieval task types for documents and queries. */
export class GoogleEmbedder implements Embedder {
  readonly model: string;
  readonly dimension: number;
  readonly callsAtOnce = EMBEDDING_CALLS_AT_ONCE;
  readonly textsPerCall = EMBEDDING_TEXTS_PER_CALL;
  private readonly modelId: string;
  private readonly concurrency: number;
  private readonly client: GoogleGenAI;

  constructor(options: GoogleEmbedderOptions) {
    this.modelId = options.model;
    this.model = `google/${options.model}`;
    this.dimension = options.dimension;
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
    this.client = geminiClient(options);
  }

  async embed(texts: readonly string[], purpose: EmbeddingPurpose, signal?: AbortSignal): Promise<Vector[]> {
    if (texts.length === 0) return [];
    const taskType = purpose === "query" ? "RETRIEVAL_QUERY" : "RETRIEVAL_DOCUMENT";
    return embedInBatches(texts, { ...EMBEDDING_BATCH_LIMITS, concurrency: this.concurrency }, async (batch) => {
      const response = await this.client.models.embedContent({
        model: this.modelId,
        contents: batch,
        config: { taskType, outputDimensionality: this.dimension, abortSignal: signal },
      });
      // The API answers batchEmbedContents in request order and gives no index to sort by.
      const embeddings = response.embeddings ?? [];
      if (embeddings.length !== batch.length) {
        throw new Error(`${this.model} returned ${embeddings.length} embeddings for ${batch.length} texts`);
      }
      return embeddings.map((embedding, i) => {
        if (!Array.isArray(embedding.values)) throw new Error(`${this.model} returned no values for text ${i}`);
        return embedding.values;
      });
    });
  }
}

export interface GoogleGeneratorOptions extends ProviderClientOptions {
  /** e.g. "gemini-2.5-flash-lite". */
  model: string;
}

/** Recommendations written by a Gemini model: fixed system instruction, the data as the one user message. */
export class GoogleGenerator implements Generator {
  readonly name: string;
  private readonly modelId: string;
  private readonly client: GoogleGenAI;

  constructor(options: GoogleGeneratorOptions) {
    this.modelId = options.model;
    this.name = `google/${options.model}`;
    this.client = geminiClient(options);
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const response = await this.client.models.generateContent(this.parameters(request, signal));

    const blockReason = response.promptFeedback?.blockReason;
    if (blockReason) throw new GenerationRefused(`the prompt was blocked (${blockReason})`);
    const candidate = response.candidates?.[0];
    if (!candidate) throw new Error(`${this.name} answered with no candidates`);
    const text = response.text?.trim() ?? "";
    if (text === "") {
      const finishReason = candidate.finishReason ?? "none";
      if (REFUSAL_FINISH_REASONS.has(finishReason)) throw new GenerationRefused(`finish reason ${finishReason}`);
      throw new Error(`${this.name} answered with no text (finish reason ${finishReason})`);
    }
    return { text, provider: "GOOGLE", model: this.modelId };
  }

  /**
   * The same request through `:streamGenerateContent?alt=sse`: each event is a partial
   * GenerateContentResponse, the last one with the finish reason. A safety finish reason fails the
   * stream even after some text (which `generate` would keep): the chain withdraws that text.
   */
  stream(request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    return recommendationStream(signal, { provider: "GOOGLE", model: this.modelId }, (requestSignal) =>
      this.pieces(request, requestSignal),
    );
  }

  private async *pieces(request: RecommendationRequest, signal: AbortSignal): AsyncGenerator<string> {
    const parameters = this.parameters(request, signal);
    const chunks = await this.client.models.generateContentStream({
      ...parameters,
      // Otherwise the SDK sends new requests to resume a broken stream from its last continuation
      // checkpoint: retries happen in resilientFetch alone, and a broken stream is the chain's to hand over.
      config: { ...parameters.config, automaticContinuation: false },
    });
    let finishReason: string | undefined;
    for await (const chunk of chunks) {
      const blockReason = chunk.promptFeedback?.blockReason;
      if (blockReason) throw new GenerationRefused(`the prompt was blocked (${blockReason})`);
      const candidate = chunk.candidates?.[0];
      finishReason = candidate?.finishReason ?? finishReason;
      if (finishReason && REFUSAL_FINISH_REASONS.has(finishReason)) {
        throw new GenerationRefused(`finish reason ${finishReason}`);
      }
      const text = chunk.text;
      if (text) yield text;
    }
    if (!finishReason) throw new Error(`${this.name}: the stream ended before the model finished`);
  }

  private parameters(request: RecommendationRequest, signal: AbortSignal | undefined) {
    const prompt = recommendationPrompt(request);
    return {
      model: this.modelId,
      contents: prompt.user,
      config: {
        systemInstruction: prompt.system,
        maxOutputTokens: RECOMMENDATION_MAX_TOKENS,
        abortSignal: signal,
      },
    };
  }
}
