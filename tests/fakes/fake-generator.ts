import { GenerationUnavailable } from "../../src/domain/errors.ts";
import type { GenerationEvent, Generator, Recommendation, RecommendationRequest } from "../../src/ports/generator.ts";
import { abortableSleep } from "./fake-embedder.ts";

/**
 * Recommends the first product it is given; `fail` makes it behave like a chain with no provider
 * left, and `write` replaces its text (e.g. one that cites a product that was not retrieved).
 * `stream` sends the same text in pieces of `pieceLength` characters, so that markers are cut.
 */
export class FakeGenerator implements Generator {
  readonly name = "fake";
  fail = false;
  /** Milliseconds each call takes, like a slow model (an abort ends the wait). */
  delayMs = 0;
  write?: (request: RecommendationRequest) => string;
  pieceLength = 3;
  readonly requests: RecommendationRequest[] = [];

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    this.requests.push(request);
    if (this.delayMs > 0) await abortableSleep(this.delayMs, signal);
    if (this.fail) throw new GenerationUnavailable();
    const names = request.products.map((product) => product.name).join(", ");
    const text = this.write?.(request) ?? `Para "${request.query}" le recomiendo: ${names}`;
    return { text, provider: "FAKE", model: "fake-1" };
  }

  async *stream(request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    const recommendation = await this.generate(request, signal);
    for (let i = 0; i < recommendation.text.length; i += this.pieceLength) {
      yield { type: "delta", text: recommendation.text.slice(i, i + this.pieceLength) };
    }
    yield { type: "done", recommendation: { ...recommendation, text: recommendation.text.trim() }, position: 0 };
  }
}
