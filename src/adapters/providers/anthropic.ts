import Anthropic from "@anthropic-ai/sdk";
import type { Generator, Recommendation, RecommendationRequest } from "../../ports/generator.ts";
import { GenerationRefused, type ProviderClientOptions, sdkTimeoutMs } from "./provider-client.ts";
import { RECOMMENDATION_MAX_TOKENS, recommendationPrompt } from "./recommendation-prompt.ts";
import { resilientFetch } from "./resilient-fetch.ts";

export const ANTHROPIC_DEFAULT_GENERATION_MODEL = "claude-haiku-4-5";

/**
 * Given explicitly so that the SDK never falls back to ANTHROPIC_BASE_URL from the environment:
 * where the key is sent is decided by our config alone.
 */
const ANTHROPIC_API_URL = "https://api.anthropic.com";

export interface AnthropicGeneratorOptions extends ProviderClientOptions {
  model: string;
}

/** Recommendations from a Claude model through the Messages API (one request, no streaming). */
export class AnthropicGenerator implements Generator {
  readonly name: string;
  private readonly model: string;
  private readonly client: Anthropic;

  constructor({ apiKey, baseUrl, retry, log, model }: AnthropicGeneratorOptions) {
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
      fetch: resilientFetch({ provider: "anthropic", policy: retry, log }),
    });
  }

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    const prompt = recommendationPrompt(request);
    const message = await this.client.messages.create(
      {
        model: this.model,
        max_tokens: RECOMMENDATION_MAX_TOKENS,
        system: prompt.system,
        messages: [{ role: "user", content: prompt.user }],
      },
      { signal },
    );
    if (message.stop_reason === "refusal") {
      // Optional chaining: a compatible gateway may leave stop_details out.
      const category = message.stop_details?.category;
      throw new GenerationRefused(category ? `refusal (${category})` : "refusal");
    }
    // A malformed body may lack `content`; it is not our type's promise to keep then.
    const texts = (Array.isArray(message.content) ? message.content : []).flatMap((block) =>
      block.type === "text" && typeof block.text === "string" ? [block.text] : [],
    );
    if (texts.length === 0) {
      throw new Error(`anthropic: the answer has no text block (stop_reason ${String(message.stop_reason)})`);
    }
    return { text: texts.join("").trim(), provider: "ANTHROPIC", model: this.model };
  }
}
