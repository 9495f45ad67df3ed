import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { LocalEmbedder } from "../../../src/adapters/providers/local-embedder.ts";
import { INSTALLED_MODEL_DIR } from "../../../src/adapters/providers/local-model-files.ts";
import { vectorProblem } from "../../../src/domain/vector.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";
import { cosineSimilarity } from "../../fakes/memory-product-repository.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";

const MODEL_DIR = INSTALLED_MODEL_DIR;
const cosine = cosineSimilarity;

function norm(v: readonly number[]): number {
  return Math.hypot(...v);
}

describe("LocalEmbedder (real model)", () => {
  const embedder = new LocalEmbedder(MODEL_DIR, { batchSize: 4 });
  afterAll(() => embedder.dispose());

  test("names its model and dimension", () => {
    expect(embedder.model).toBe("all-MiniLM-L6-v2");
    expect(embedder.dimension).toBe(384);
  });

  test("concurrent first calls both get 384-d unit vectors (and it says it is loaded from then on)", async () => {
    expect(embedder.loaded).toBe(false);
    const [a, b] = await Promise.all([
      embedder.embed(["Espresso machine with milk frother"], "document"),
      embedder.embed(["Leather wallet for men"], "query"),
    ]);
    for (const vector of [a[0], b[0]]) {
      expect(vector).toBeArray();
      expect(vectorProblem(vector as number[], 384)).toBeNull();
      expect(norm(vector as number[])).toBeCloseTo(1, 4);
    }
    expect(embedder.loaded).toBe(true);
  });

  test("is deterministic", async () => {
    const text = "Stainless steel water bottle, 1 litre";
    const [first] = await embedder.embed([text], "document");
    const [second] = await embedder.embed([text], "document");
    expect(second).toEqual(first as number[]);
  });

  test("keeps input order across batches of mixed lengths", async () => {
    const texts = [
      "a much longer text about a cotton t-shirt for men with a round neck and short sleeves",
      "pen",
      "wrist watch with a leather strap",
      "baby diapers",
      "",
      "a wooden double bed with storage and a headboard, made of sheesham wood",
      "laptop battery",
    ];
    const together = await embedder.embed(texts, "document");
    expect(together).toHaveLength(texts.length);
    for (const [i, text] of texts.entries()) {
      const [alone] = await embedder.embed([text], "document");
      expect(cosine(together[i] as number[], alone as number[])).toBeGreaterThan(0.999);
    }
  });

  test("an empty list needs no model work and gives no vectors", async () => {
    expect(await embedder.embed([], "query")).toEqual([]);
  });

  test("ranks by meaning", async () => {
    const [query, espresso, wallet] = await embedder.embed(
      ["a device to brew coffee in the morning", "Espresso machine with milk frother", "Leather wallet for men"],
      "query",
    );
    const toEspresso = cosine(query as number[], espresso as number[]);
    const toWallet = cosine(query as number[], wallet as number[]);
    expect(toEspresso).toBeGreaterThan(toWallet + 0.1);
  });
});

describe("LocalEmbedder's two threads", () => {
  const embedder = new LocalEmbedder(MODEL_DIR);
  afterAll(() => embedder.dispose());
  const products = Array.from(
    { length: 64 },
    (_, i) => `Product ${i}: a cotton shirt with long sleeves, a collar and ${i} buttons, machine washable`,
  );

  /** How many times this thread's event loop turned while `work` ran. */
  async function turnsDuring(work: Promise<unknown>): Promise<number> {
    let turns = 0;
    let done = false;
    const spin = () => {
      turns++;
      if (!done) setImmediate(spin);
    };
    setImmediate(spin);
    await work;
    done = true;
    return turns;
  }

  test("a product and a query of the same text get the same vector (one model in both places)", async () => {
    const text = "Espresso machine with milk frother";
    const [asProduct] = await embedder.embed([text], "document");
    const [asQuery] = await embedder.embed([text], "query");
    expect(cosine(asProduct as number[], asQuery as number[])).toBeGreaterThan(0.9999);
  });

  test("products are embedded in the worker: this thread keeps serving meanwhile", async () => {
    await embedder.embed(["warm"], "document");
    // Four batches of 16: on this thread the loop would turn about once per batch.
    const turns = await turnsDuring(embedder.embed(products, "document"));
    expect(turns).toBeGreaterThan(200);
  });

  test("a product embedding aborted midway rejects with the signal's reason, and the next is answered", async () => {
    const controller = new AbortController();
    const aborted = embedder.embed(products, "document", controller.signal);
    setImmediate(() => controller.abort(new Error("the client left"))); // once the worker has it

    await expect(aborted).rejects.toThrow("the client left");
    const [vector] = await embedder.embed(["Leather wallet"], "document");
    expect(vectorProblem(vector as number[], 384)).toBeNull();
  });

  test("closing while products embed rejects them; the next call starts the worker again", async () => {
    const timers = new FakeTimers();
    const closing = new LocalEmbedder(MODEL_DIR, { timers });
    const outcome = closing.embed(products, "document").then(
      () => "embedded",
      (error: Error) => error.message,
    );
    await closing.dispose();
    expect(await outcome).toBe("the offline model was closed");
    // The worker closed by itself: its time limit is cancelled, not left to keep the process alive.
    expect(timers.pending()).toEqual([]);
    const [vector] = await closing.embed(["Leather wallet"], "document");
    expect(vectorProblem(vector as number[], 384)).toBeNull();
    await closing.dispose();
    expect(timers.pending()).toEqual([]);
  });
});

describe("LocalEmbedder when its worker dies", () => {
  test("what the worker was doing fails with a clear error; the next call starts another and is answered", async () => {
    const embedder = new LocalEmbedder(MODEL_DIR, {
      workerUrl: new URL("../../fakes/crashing-model-worker.ts", import.meta.url),
    });
    await expect(embedder.embed(["Leather wallet", "crash"], "document")).rejects.toThrow(
      "the offline model's worker failed",
    );
    const [vector] = await embedder.embed(["Leather wallet"], "document");
    expect(vectorProblem(vector as number[], 384)).toBeNull();
    await embedder.dispose();
  });
});

describe("LocalEmbedder and the files around it", () => {
  const tempDir = useTempDirs("embedder-files");
  const EMBEDDER_MODULE = join(import.meta.dir, "../../../src/adapters/providers/local-embedder.ts");
  const TIMERS_MODULE = join(import.meta.dir, "../../../src/ports/timers.ts");

  test("writes nothing to HOME or TMPDIR (onnxruntime's telemetry stays off), and a process that disposes it exits when its work ends", async () => {
    const home = tempDir();
    const tmp = tempDir();
    // The worker's time limit is stretched a thousandfold: anything dispose left waiting on it (as
    // its 5 s once kept such a process alive to its end) would keep this process up for 83 minutes,
    // not seconds, so what is asserted is that it ends at all, however loaded the machine.
    const child = Bun.spawn(
      [
        process.execPath,
        "-e",
        `import { LocalEmbedder } from ${JSON.stringify(EMBEDDER_MODULE)};
         import { systemTimers } from ${JSON.stringify(TIMERS_MODULE)};
         const timers = { ...systemTimers, after: (ms, expire) => systemTimers.after(ms * 1000, expire) };
         const embedder = new LocalEmbedder(${JSON.stringify(MODEL_DIR)}, { timers });
         const [vector] = await embedder.embed(["Espresso machine"], "document");
         await embedder.dispose();
         console.log(JSON.stringify({ dimension: vector.length }));`,
      ],
      // Only what a service has: no CI variable (which would also silence onnxruntime), no transpiler cache.
      {
        env: { PATH: process.env.PATH, HOME: home, TMPDIR: tmp, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" },
        stdout: "pipe",
        // A process still up then is one that would not end: stopped, it fails the test below.
        timeout: 50_000,
      },
    );
    expect(await child.exited, "the process's exit status (143: still up after 50 s, stopped)").toBe(0);
    expect(JSON.parse(await new Response(child.stdout).text())).toEqual({ dimension: 384 });
    expect(readdirSync(home, { recursive: true })).toEqual([]);
    expect(readdirSync(tmp, { recursive: true })).toEqual([]);
  }, 60_000);
});

describe("LocalEmbedder without its model", () => {
  test("says which folder is missing and to run bun install", async () => {
    const missingDir = join(import.meta.dir, "no-such-model");
    const embedder = new LocalEmbedder(missingDir);
    const failure = embedder.embed(["anything"], "query");
    await expect(failure).rejects.toThrow(missingDir);
    await expect(embedder.load()).rejects.toThrow("bun install");
    expect(embedder.loaded).toBe(false);
  });
});
