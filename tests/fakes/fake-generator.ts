import { GenerationUnavailable } from "../../src/domain/errors.ts";
import type { Generator, Recommendation, RecommendationRequest } from "../../src/ports/generator.ts";
import { abortableSleep } from "./fake-embedder.ts";

/** Recommends the first product it is given; `fail` makes it behave like a chain with no provider left. */
export class FakeGenerator implements Generator {
  readonly name = "fake";
  fail = false;
  /** Milliseconds each call takes, like a slow model (an abort ends the wait). */
  delayMs = 0;
  readonly requests: RecommendationRequest[] = [];

  async generate(request: RecommendationRequest, signal?: AbortSignal): Promise<Recommendation> {
    this.requests.push(request);
    if (this.delayMs > 0) await abortableSleep(this.delayMs, signal);
    if (this.fail) throw new GenerationUnavailable();
    const names = request.products.map((product) => product.name).join(", ");
    return { text: `Para "${request.query}" le recomiendo: ${names}`, provider: "FAKE", model: "fake-1" };
  }
}
