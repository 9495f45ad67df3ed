import { describe, expect, test } from "bun:test";
import { EmptyGeneration, GenerationTimeout, GeneratorChain } from "../../../src/adapters/providers/generator-chain.ts";
import { GenerationUnavailable } from "../../../src/domain/errors.ts";
import type { Generator, Recommendation, RecommendationRequest } from "../../../src/ports/generator.ts";

const request: RecommendationRequest = {
  query: "cafetera",
  products: [{ id: 1, name: "Espresso machine", description: "d", category: "Kitchen", score: 0.7 }],
};

/** A generator that records its calls and behaves as told. */
function fake(name: string, behave: () => Promise<Recommendation>): Generator & { calls: number } {
  const generator = {
    name,
    calls: 0,
    generate: (_request: RecommendationRequest) => {
      generator.calls++;
      return behave();
    },
  };
  return generator;
}

const answer = (text: string, provider = "TEST"): Recommendation => ({ text, provider, model: "m" });
const answers = (name: string, text = `texto de ${name}`) => fake(name, async () => answer(text, name.toUpperCase()));
const fails = (name: string, message = "boom") =>
  fake(name, async () => {
    throw new Error(message);
  });
const hangs = (name: string) => fake(name, () => new Promise<Recommendation>(() => {}));

function recorder() {
  const events: Record<string, unknown>[] = [];
  return { events, log: (event: Record<string, unknown>) => events.push(event) };
}

describe("GeneratorChain", () => {
  test("answers with the first link and does not call the others", async () => {
    const first = answers("first");
    const second = answers("second");
    const chain = new GeneratorChain([first, second]);
    expect(await chain.generate(request)).toEqual(answer("texto de first", "FIRST"));
    expect(second.calls).toBe(0);
    expect(chain.name).toBe("chain(first, second)");
  });

  test("falls back, in order, on a rejection, a timeout and a blank text", async () => {
    const order: string[] = [];
    const track = (generator: Generator & { calls: number }) => ({
      name: generator.name,
      generate: (r: RecommendationRequest) => {
        order.push(generator.name);
        return generator.generate(r);
      },
    });
    const chain = new GeneratorChain(
      [
        track(fails("rejects")),
        { generator: track(hangs("slow")), timeoutMs: 20 },
        track(answers("blank", " \n\t ")),
        track(answers("local")),
      ],
      { timeoutMs: 1_000 },
    );
    const recommendation = await chain.generate(request);
    expect(recommendation.provider).toBe("LOCAL");
    expect(order).toEqual(["rejects", "slow", "blank", "local"]);
  });

  test("a synchronous throw is a failure like any other", async () => {
    const throwsNow: Generator = {
      name: "sync",
      generate: () => {
        throw new Error("not even a promise");
      },
    };
    const chain = new GeneratorChain([throwsNow, answers("local")]);
    expect((await chain.generate(request)).provider).toBe("LOCAL");
  });

  test("the default timeout applies to every link without its own", async () => {
    const started = performance.now();
    const chain = new GeneratorChain([hangs("a"), hangs("b"), answers("c")], { timeoutMs: 25 });
    expect((await chain.generate(request)).provider).toBe("C");
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("when every link fails it rejects with GenerationUnavailable carrying each cause", async () => {
    const chain = new GeneratorChain([fails("a", "quota"), { generator: hangs("b"), timeoutMs: 10 }, answers("c", "")]);
    const error = await chain.generate(request).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GenerationUnavailable);
    const cause = (error as GenerationUnavailable).cause;
    expect(cause).toBeInstanceOf(AggregateError);
    const causes = (cause as AggregateError).errors;
    expect(causes).toHaveLength(3);
    expect((causes[0] as Error).message).toBe("quota");
    expect(causes[1]).toBeInstanceOf(GenerationTimeout);
    expect(causes[2]).toBeInstanceOf(EmptyGeneration);
  });

  test("logs each failure with its reason and the answering link with its latency", async () => {
    const { events, log } = recorder();
    const chain = new GeneratorChain(
      [fails("openai", "503"), { generator: hangs("anthropic"), timeoutMs: 10 }, answers("local")],
      {
        log,
      },
    );
    await chain.generate(request);
    expect(events).toHaveLength(3);
    expect(events[0]).toMatchObject({ event: "generation_failed", generator: "openai", position: 0, reason: "error" });
    expect(events[0]?.error).toBe("Error: 503");
    expect(events[1]).toMatchObject({ event: "generation_failed", generator: "anthropic", reason: "timeout" });
    expect(events[2]).toMatchObject({
      event: "generation_answered",
      generator: "local",
      position: 2,
      provider: "LOCAL",
      model: "m",
    });
    for (const event of events) expect(event.latencyMs).toBeNumber();
    expect(events[1]?.latencyMs as number).toBeGreaterThanOrEqual(9);
  });

  test("logs a blank answer as reason empty", async () => {
    const { events, log } = recorder();
    await new GeneratorChain([answers("blank", "   "), answers("local")], { log }).generate(request);
    expect(events[0]).toMatchObject({ event: "generation_failed", generator: "blank", reason: "empty" });
  });

  test("never logs credentials an error message may echo", async () => {
    const { events, log } = recorder();
    const leaky = fails(
      "google",
      "400 for https://example.test/v1/models?key=AIzaSyA-secretsecretsecretsecret1234 with Bearer abc.def sk-proj-abcdefghijkl",
    );
    await new GeneratorChain([leaky, answers("local")], { log }).generate(request);
    const logged = JSON.stringify(events);
    expect(logged).not.toContain("AIzaSy");
    expect(logged).not.toContain("abc.def");
    expect(logged).not.toContain("sk-proj");
    expect(logged).toContain("[redacted]");
  });

  test("a link that runs out of time has its signal aborted, so its request is cancelled", async () => {
    let seen: AbortSignal | undefined;
    const slow: Generator = {
      name: "slow",
      generate: (_request, signal) => {
        seen = signal;
        return new Promise<Recommendation>(() => {});
      },
    };
    await new GeneratorChain([{ generator: slow, timeoutMs: 15 }, answers("local")]).generate(request);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(GenerationTimeout);
  });

  test("the caller's abort stops the chain: no further link is tried", async () => {
    const controller = new AbortController();
    const next = answers("next");
    const first: Generator = {
      name: "first",
      generate: (_request, signal) =>
        new Promise<Recommendation>((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason))),
    };
    setTimeout(() => controller.abort(new Error("client went away")), 10);
    await expect(new GeneratorChain([first, next]).generate(request, controller.signal)).rejects.toThrow(
      "client went away",
    );
    expect(next.calls).toBe(0);
  });

  test("needs at least one generator", () => {
    expect(() => new GeneratorChain([])).toThrow("at least one");
  });
});
