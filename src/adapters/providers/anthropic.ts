import Anthropic from "@anthropic-ai/sdk";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import {
  GenerationRefused,
  type ProviderClientOptions,
  recommendationStream,
  sdkTimeoutMs,
} from "./provider-client.ts";
import { RECOMMENDATION_MAX_TOKENS, recommendationPrompt } from "./recommendation-prompt.ts";
import { resilientFetch } from "./resilient-fetch.ts";

/**
 * Given explicitly so that the SDK never falls back to ANTHROPIC_BASE_URL from the environment:
 * where the key is sent is decided by our config alone.
 */
const ANTHROPIC_API_URL = "https://api.anthropic.com";

export interface AnthropicGeneratorOptions extends ProviderClientOptions {
  model: string;
}

/** Recommendations from a Claude model through the Messages API, in one answer or streamed. */
export class AnthropicGenerator implements Generator {
  readonly name: string;
  private readonly model: string;
  private readonly client: Anthropic;

  constructor({ apiKey, baseUrl, retry, log, timers, model }: AnthropicGeneratorOptions) {
    this.model = model;
    this.name = `anthropic/${model}`;
    this.client = new Anthropic({
      // Passing the key here also keeps the SDK from looking for other credentials (environment,
      // profiles on disk).
      apiKey,
      // The installed SDK sends `apiKey` as `Authorization: Bearer`; the Messages API documents
      // `x-api-key`, so the key goes there and only there.
      defaultHeaders: { "x-api-key": apiKey, Authorization: null },
      baseURL: baseUrl ?? ANTHROPIC_API_URL,
      // Every retry happens in resilientFetch, with the real status and Retry-After in hand.
      maxRetries: 0,
      timeout: sdkTimeoutMs(retry),
      fetch: resilientFetch({ provider: "anthropic", policy: retry, log, timers }),
    });
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const message = await this.client.messages.create(this.body(request), { signal });
    if (message.stop_reason === "refusal") throw refused(message.stop_details);
    // A malformed body may lack `content`; it is not our type's promise to keep then.
    const texts = (Array.isArray(message.content) ? message.content : []).flatMap((block) =>
      block.type === "text" && typeof block.text === "string" ? [block.text] : [],
    );
    if (texts.length === 0) {
      throw new Error(`anthropic: the answer has no text block (stop_reason ${String(message.stop_reason)})`);
    }
    return { text: texts.join("").trim(), provider: "ANTHROPIC", model: this.model };
  }

  /**
   * The same request with `stream: true`: message_start, then content_block_start / _delta / _stop
   * for each block, message_delta with the stop reason, message_stop (`ping` and `error` events
   * may come in between; the SDK throws on `error`).
   */
  stream(request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    return recommendationStream(signal, { provider: "ANTHROPIC", model: this.model }, (requestSignal) =>
      this.pieces(request, requestSignal),
    );
  }

  private async *pieces(request: RecommendationRequest, signal: AbortSignal): AsyncGenerator<string> {
    const events = await this.client.messages.create({ ...this.body(request), stream: true }, { signal });
    let stopped = false;
    for await (const event of events) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
        yield event.delta.text;
      } else if (event.type === "message_delta" && event.delta.stop_reason === "refusal") {
        throw refused(event.delta.stop_details);
      } else if (event.type === "message_stop") {
        stopped = true;
      }
    }
    // The SDK ends a stream quietly when its request is aborted (a timeout included).
    if (!stopped) throw new Error("anthropic: the stream ended before message_stop");
  }

  private body(request: RecommendationRequest) {
    const prompt = recommendationPrompt(request);
    return {
      model: this.model,
      max_tokens: RECOMMENDATION_MAX_TOKENS,
      system: prompt.system,
      messages: [{ role: "user" as const, content: prompt.user }],
    };
  }
}

/** stop_reason "refusal", with its category when the API gives one (a compatible gateway may not). */
function refused(details: { category?: string | null } | null | undefined): GenerationRefused {
  const category = details?.category;
  return new GenerationRefused(category ? `refusal (${category})` : "refusal");
}
