import { beforeEach, describe, expect, test } from "bun:test";
import {
  type ChainLink,
  EmptyGeneration,
  GenerationTimeout,
  GeneratorChain,
  type GeneratorChainOptions,
} from "../../../src/adapters/providers/generator-chain.ts";
import { GenerationUnavailable } from "../../../src/domain/errors.ts";
import type {
  GenerationEvent,
  Generator,
  Recommendation,
  RecommendationRequest,
} from "../../../src/ports/generator.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";
import { drain, shape, shownText } from "../../support/streams.ts";

/**
 * The chains' time limits and the links' pauses run on fake timers: a limit runs out when a test
 * lets it (`timers.elapse`), never because the machine is slow, and no test waits in real time.
 */
let timers: FakeTimers;
beforeEach(() => {
  timers = new FakeTimers();
});
const chainOf = (links: readonly (Generator | ChainLink)[], options: GeneratorChainOptions = {}) =>
  new GeneratorChain(links, { timers, ...options });

const request: RecommendationRequest = {
  query: "cafetera",
  products: [{ id: 1, name: "Espresso machine", description: "d", category: "Kitchen", score: 0.7 }],
};

/** The stream of a generator that writes its whole text at once: one delta, then done. */
async function* inOnePiece(answer: Promise<Recommendation>): AsyncGenerator<GenerationEvent> {
  const recommendation = await answer;
  yield { type: "delta", text: recommendation.text };
  yield { type: "done", recommendation, position: 0 };
}

/** A generator that records its calls and behaves as told (streamed, in one piece). */
function fake(name: string, behave: () => Promise<Recommendation>): Generator & { calls: number } {
  const generator = {
    name,
    calls: 0,
    generate: (_request: RecommendationRequest) => {
      generator.calls++;
      return behave();
    },
    stream: (request: RecommendationRequest) => inOnePiece(generator.generate(request)),
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
    const chain = chainOf([first, second]);
    expect(await chain.generate(request)).toEqual(answer("texto de first", "FIRST"));
    expect(second.calls).toBe(0);
    expect(chain.name).toBe("chain(first, second)");
  });

  test("falls back, in order, on a rejection, a timeout and a blank text", async () => {
    const order: string[] = [];
    const track = (generator: Generator & { calls: number }): Generator => ({
      name: generator.name,
      generate: (r: RecommendationRequest) => {
        order.push(generator.name);
        return generator.generate(r);
      },
      stream: generator.stream,
    });
    const chain = chainOf(
      [
        track(fails("rejects")),
        { generator: track(hangs("slow")), timeoutMs: 20 },
        track(answers("blank", " \n\t ")),
        track(answers("local")),
      ],
      { timeoutMs: 1_000 },
    );
    const answered = chain.generate(request);
    await timers.elapse(20);
    const recommendation = await answered;
    expect(recommendation.provider).toBe("LOCAL");
    expect(order).toEqual(["rejects", "slow", "blank", "local"]);
  });

  test("a synchronous throw is a failure like any other", async () => {
    const throwsNow: Generator = {
      name: "sync",
      generate: () => {
        throw new Error("not even a promise");
      },
      stream: () => {
        throw new Error("not even an iterable");
      },
    };
    const chain = chainOf([throwsNow, answers("local")]);
    expect((await chain.generate(request)).provider).toBe("LOCAL");
  });

  test("the default timeout applies to every link without its own", async () => {
    const chain = chainOf([hangs("a"), hangs("b"), answers("c")], { timeoutMs: 25 });
    const answered = chain.generate(request);
    await timers.elapse(25);
    await timers.elapse(25);
    expect((await answered).provider).toBe("C");
    expect(timers.now()).toBe(50);
  });

  test("when every link fails it rejects with GenerationUnavailable carrying each cause", async () => {
    const chain = chainOf([fails("a", "quota"), { generator: hangs("b"), timeoutMs: 10 }, answers("c", "")]);
    const failed = chain.generate(request).then(
      () => null,
      (e: unknown) => e,
    );
    await timers.elapse(10);
    const error = await failed;
    expect(error).toBeInstanceOf(GenerationUnavailable);
    const cause = (error as GenerationUnavailable).cause;
    expect(cause).toBeInstanceOf(AggregateError);
    const causes = (cause as AggregateError).errors;
    expect(causes).toHaveLength(3);
    expect((causes[0] as Error).message).toBe("quota");
    expect(causes[1]).toBeInstanceOf(GenerationTimeout);
    expect(causes[2]).toBeInstanceOf(EmptyGeneration);
  });

  test("a failure says whether a next link takes over (fallback); the last link's does not", async () => {
    const { events, log } = recorder();
    await chainOf([fails("a", "quota"), fails("b", "down")], { log })
      .generate(request)
      .catch(() => {});
    expect(events.map(({ generator, fallback }) => [generator, fallback])).toEqual([
      ["a", true],
      ["b", false],
    ]);
  });

  test("logs each failure with its reason and the answering link with its latency", async () => {
    const { events, log } = recorder();
    const chain = chainOf(
      [fails("openai", "503"), { generator: hangs("anthropic"), timeoutMs: 10 }, answers("local")],
      {
        log,
      },
    );
    const answered = chain.generate(request);
    await timers.elapse(10);
    await answered;
    expect(events).toHaveLength(3);
    expect(events[0]).toMatchObject({
      event: "generation_failed",
      generator: "openai",
      position: 0,
      reason: "error",
      fallback: true,
    });
    expect(events[0]?.error).toBe("Error: 503");
    expect(events[1]).toMatchObject({ event: "generation_failed", generator: "anthropic", reason: "timeout" });
    expect(events[2]).toMatchObject({
      event: "generation_answered",
      generator: "local",
      position: 2,
      provider: "LOCAL",
      model: "m",
    });
    expect(events.map((event) => event.latencyMs)).toEqual([0, 10, 0]);
  });

  test("logs a blank answer as reason empty", async () => {
    const { events, log } = recorder();
    await chainOf([answers("blank", "   "), answers("local")], { log }).generate(request);
    expect(events[0]).toMatchObject({ event: "generation_failed", generator: "blank", reason: "empty" });
  });

  test("never logs credentials an error message may echo", async () => {
    const { events, log } = recorder();
    const leaky = fails(
      "google",
      "400 for https://example.test/v1/models?key=AIzaSyA-secretsecretsecretsecret1234 with Bearer abc.def sk-proj-abcdefghijkl",
    );
    await chainOf([leaky, answers("local")], { log }).generate(request);
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
      stream: () => inOnePiece(new Promise<Recommendation>(() => {})),
    };
    const answered = chainOf([{ generator: slow, timeoutMs: 15 }, answers("local")]).generate(request);
    await timers.elapse(15);
    await answered;
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(GenerationTimeout);
  });

  test("the caller's abort stops the chain: no further link is tried", async () => {
    const controller = new AbortController();
    const next = answers("next");
    const called = Promise.withResolvers<void>();
    const first: Generator = {
      name: "first",
      generate: (_request, signal) => {
        called.resolve();
        return new Promise<Recommendation>((_, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason)),
        );
      },
      stream: (request, signal) => inOnePiece(first.generate(request, signal)),
    };
    const answered = chainOf([first, next]).generate(request, controller.signal);
    await called.promise;
    controller.abort(new Error("client went away"));
    await expect(answered).rejects.toThrow("client went away");
    expect(next.calls).toBe(0);
  });

  test("needs at least one generator", () => {
    expect(() => chainOf([])).toThrow("at least one");
  });
});

type Step =
  /** A piece of text. */
  | string
  | { fail: string }
  /** No further event until the link's signal aborts. */
  | { hang: true }
  | { waitMs: number }
  | { reset: true }
  /** Ends without its done event. */
  | { end: true };

/** A streaming link that follows `script`, then sends done (unless the script ended it otherwise). */
function scripted(
  name: string,
  ...script: Step[]
): Generator & { calls: number; signals: (AbortSignal | undefined)[] } {
  const generator = {
    name,
    calls: 0,
    signals: [] as (AbortSignal | undefined)[],
    generate: (): Promise<Recommendation> => Promise.reject(new Error("only streamed here")),
    async *stream(_request: RecommendationRequest, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
      generator.calls++;
      generator.signals.push(signal);
      let text = "";
      for (const step of script) {
        if (typeof step === "string") {
          text += step;
          yield { type: "delta", text: step };
        } else if ("fail" in step) {
          throw new Error(step.fail);
        } else if ("hang" in step) {
          await new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason)));
        } else if ("waitMs" in step) {
          await timers.sleep(step.waitMs);
        } else if ("reset" in step) {
          text = "";
          yield { type: "reset" };
        } else {
          return;
        }
      }
      yield { type: "done", recommendation: answer(text.trim(), name.toUpperCase()), position: 0 };
    },
  };
  return generator;
}

const done = (text: string, provider: string, position: number): GenerationEvent => ({
  type: "done",
  recommendation: answer(text, provider),
  position,
});

describe("GeneratorChain.stream", () => {
  test("passes the first link's text on as it comes, then done naming the link", async () => {
    const first = scripted("openai", "Le ", "recomiendo ", "la cafetera.");
    const second = scripted("local", "otro");
    const { events, error } = await drain(chainOf([first, second]).stream(request));
    expect(error).toBeUndefined();
    expect(events).toEqual([
      { type: "delta", text: "Le " },
      { type: "delta", text: "recomiendo " },
      { type: "delta", text: "la cafetera." },
      done("Le recomiendo la cafetera.", "OPENAI", 0),
    ]);
    expect(second.calls).toBe(0);
  });

  test("a link that fails before its first text hands over silently", async () => {
    const throwsNow: Generator = {
      name: "sync",
      generate: () => Promise.reject(new Error("unused")),
      stream: () => {
        throw new Error("not even an iterable");
      },
    };
    const chain = chainOf(
      [
        scripted("rejects", { fail: "503" }),
        throwsNow,
        scripted("blank-then-fails", "  ", "\n", { fail: "cut" }),
        { generator: scripted("slow", { hang: true }), timeoutMs: 15 },
        scripted("blank", " ", "\t"),
        scripted("local", "  Texto", " local."),
      ],
      { timeoutMs: 1_000 },
    );
    const drained = drain(chain.stream(request));
    await timers.elapse(15);
    const { events, error } = await drained;
    expect(error).toBeUndefined();
    expect(events).toEqual([
      { type: "delta", text: "  Texto" },
      { type: "delta", text: " local." },
      done("Texto local.", "LOCAL", 5),
    ]);
  });

  test("a link that fails after its text began sends a reset, and the next link's text replaces it", async () => {
    const chain = chainOf([
      scripted("openai", "Le recomiendo ", "la cafe", { fail: "ECONNRESET" }),
      scripted("anthropic", "Mejor la tetera."),
    ]);
    const { events, error } = await drain(chain.stream(request));
    expect(error).toBeUndefined();
    expect(events).toEqual([
      { type: "delta", text: "Le recomiendo " },
      { type: "delta", text: "la cafe" },
      { type: "reset" },
      { type: "delta", text: "Mejor la tetera." },
      done("Mejor la tetera.", "ANTHROPIC", 1),
    ]);
  });

  test("a link that goes quiet after its text began runs out of time, and is replaced", async () => {
    const stalled = scripted("openai", "Le recomiendo ", { hang: true });
    const drained = drain(
      chainOf([{ generator: stalled, timeoutMs: 20 }, scripted("local", "Texto local.")]).stream(request),
    );
    await timers.elapse(20);
    const { events } = await drained;
    expect(shape(events)).toEqual(["delta", "reset", "delta", "done"]);
    expect(shownText(events)).toBe("Texto local.");
    expect(stalled.signals[0]?.reason).toBeInstanceOf(GenerationTimeout);
  });

  test("the time limit bounds each wait for the next piece, not a stream that keeps coming", async () => {
    // Four pauses of 150 ms: 600 ms in all, beyond the 400 ms limit, but no single wait is.
    const steady = scripted(
      "openai",
      "Uno ",
      { waitMs: 150 },
      "dos ",
      { waitMs: 150 },
      "tres ",
      { waitMs: 150 },
      "cuatro",
      {
        waitMs: 150,
      },
    );
    const drained = drain(
      chainOf([{ generator: steady, timeoutMs: 400 }, scripted("local", "Texto local.")]).stream(request),
    );
    for (let pause = 0; pause < 4; pause++) await timers.elapse(150);
    const { events } = await drained;
    expect(timers.now()).toBe(600);
    expect(events.at(-1)).toEqual(done("Uno dos tres cuatro", "OPENAI", 0));
    expect(shape(events)).toEqual(["delta", "done"]);
  });

  test("a stream that ends without its done event is a failure", async () => {
    const { events } = await drain(
      chainOf([scripted("openai", "A medias", { end: true }), scripted("local", "Entero.")]).stream(request),
    );
    expect(shape(events)).toEqual(["delta", "reset", "delta", "done"]);
    expect(events.at(-1)).toEqual(done("Entero.", "LOCAL", 1));
  });

  test("a link's own reset is passed on, and done has only the text after it", async () => {
    const { events } = await drain(chainOf([scripted("inner", "Viejo", { reset: true }, "Nuevo")]).stream(request));
    expect(events).toEqual([
      { type: "delta", text: "Viejo" },
      { type: "reset" },
      { type: "delta", text: "Nuevo" },
      done("Nuevo", "INNER", 0),
    ]);
  });

  test("when every link fails it throws GenerationUnavailable with each cause, after withdrawing the text sent", async () => {
    const chain = chainOf([
      scripted("openai", "Le recomiendo ", { fail: "quota" }),
      scripted("blank", "   "),
      { generator: scripted("slow", { hang: true }), timeoutMs: 10 },
    ]);
    const drained = drain(chain.stream(request));
    await timers.elapse(10);
    const { events, error } = await drained;
    expect(events).toEqual([{ type: "delta", text: "Le recomiendo " }, { type: "reset" }]);
    expect(error).toBeInstanceOf(GenerationUnavailable);
    const causes = ((error as GenerationUnavailable).cause as AggregateError).errors;
    expect((causes[0] as Error).message).toBe("quota");
    expect(causes[1]).toBeInstanceOf(EmptyGeneration);
    expect(causes[2]).toBeInstanceOf(GenerationTimeout);
  });

  test("the caller's abort stops everything: it cancels the link's request and tries no other link", async () => {
    const first = scripted("openai", "Le recomiendo ", { hang: true });
    const next = scripted("local", "Texto local.");
    const controller = new AbortController();
    const reason = new Error("the client went away");
    const events = chainOf([first, next]).stream(request, controller.signal)[Symbol.asyncIterator]();
    expect((await events.next()).value).toEqual({ type: "delta", text: "Le recomiendo " });
    const pending = events.next();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(first.signals[0]?.aborted).toBe(true);
    expect(next.calls).toBe(0);
  });

  test("leaving the loop early cancels the link's request", async () => {
    const first = scripted("openai", "Le recomiendo ", "la cafetera.", { hang: true });
    for await (const event of chainOf([first]).stream(request)) {
      expect(event.type).toBe("delta");
      break;
    }
    expect(first.signals[0]?.aborted).toBe(true);
  });

  test("logs each failure, saying whether text was withdrawn, and the answering link with its first-text time", async () => {
    const { events: logged, log } = recorder();
    await drain(
      chainOf(
        [
          scripted("openai", { fail: "503" }),
          scripted("anthropic", "Hola ", { fail: "overloaded" }),
          scripted("local", "Texto."),
        ],
        { log },
      ).stream(request),
    );
    expect(logged).toHaveLength(3);
    expect(logged[0]).toMatchObject({ event: "generation_failed", generator: "openai", position: 0, reason: "error" });
    expect(logged[0]?.reset).toBe(false);
    expect(logged[1]).toMatchObject({
      event: "generation_failed",
      generator: "anthropic",
      reason: "error",
      reset: true,
    });
    expect(logged[1]?.error).toBe("Error: overloaded");
    expect(logged[2]).toMatchObject({
      event: "generation_answered",
      generator: "local",
      position: 2,
      provider: "LOCAL",
    });
    expect(logged[2]?.firstTextMs).toBeNumber();
    for (const event of logged) expect(event.latencyMs).toBeNumber();
  });
});
