import { GenerationUnavailable } from "../../src/domain/errors.ts";
import type { Generator, Recommendation, RecommendationRequest } from "../../src/ports/generator.ts";

/** Recommends the first product it is given; `fail` makes it behave like a chain with no provider left. */
export class FakeGenerator implements Generator {
  readonly name = "fake";
  fail = false;
  readonly requests: RecommendationRequest[] = [];

  async generate(request: RecommendationRequest): Promise<Recommendation> {
    this.requests.push(request);
    if (this.fail) throw new GenerationUnavailable();
    const names = request.products.map((product) => product.name).join(", ");
    return { text: `Para "${request.query}" le recomiendo: ${names}`, provider: "FAKE", model: "fake-1" };
  }
}
