/**
 * The offline model's pooling (local-model.ts, meanPooledUnitVectors): the vectors transformers'
 * feature-extraction pipeline gives with { pooling: "mean", normalize: true }, bit for bit, so that
 * products embedded before and after it stay comparable.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { basename, dirname } from "node:path";
import { env, mean_pooling, pipeline, Tensor } from "@huggingface/transformers";
import { LocalModel, meanPooledUnitVectors } from "../../../src/adapters/providers/local-model.ts";
import { INSTALLED_MODEL_DIR } from "../../../src/adapters/providers/local-model-files.ts";
import { seededRandom } from "../../support/seeded-random.ts";

describe("meanPooledUnitVectors", () => {
  test("gives transformers' mean_pooling then normalize(2, -1), bit for bit, padding left out", () => {
    const random = seededRandom(40);
    const [rows, tokens, width] = [3, 7, 384] as const;
    const hidden = Float32Array.from({ length: rows * tokens * width }, () => random() * 4 - 2);
    // Row 0 whole, row 1 padded after 4 tokens, row 2 after 1.
    const kept = [7, 4, 1];
    const mask = BigInt64Array.from({ length: rows * tokens }, (_, i) =>
      i % tokens < (kept[Math.floor(i / tokens)] as number) ? 1n : 0n,
    );

    const theirs = mean_pooling(
      new Tensor("float32", hidden, [rows, tokens, width]),
      new Tensor("int64", mask, [rows, tokens]),
    ).normalize(2, -1).data as Float32Array;
    const ours = meanPooledUnitVectors(hidden, [rows, tokens, width], mask);

    expect(ours).toHaveLength(rows * width);
    expect([...ours]).toEqual([...theirs]);
    // A padded token changes nothing: row 2 is its first token's direction.
    const first = hidden.subarray(2 * tokens * width, 2 * tokens * width + width);
    const length = Math.hypot(...first);
    expect(ours[2 * width]).toBeCloseTo((first[0] as number) / length, 6);
  });
});

describe("LocalModel (real model)", () => {
  const model = new LocalModel(INSTALLED_MODEL_DIR, { batchSize: 2 });
  afterAll(() => model.dispose());

  test("embeds texts as transformers' feature-extraction pipeline does, bit for bit", async () => {
    const texts = [
      "Cafetera italiana de acero, seis tazas",
      "a lamp",
      "Warm desk lamp with a dimmer, for reading at night in a small bedroom",
    ];
    env.allowRemoteModels = false;
    env.localModelPath = dirname(INSTALLED_MODEL_DIR);
    const extractor = await pipeline("feature-extraction", basename(INSTALLED_MODEL_DIR), { dtype: "q4" });
    try {
      const expected = await extractor(texts, { pooling: "mean", normalize: true });
      const vectors = await model.embed(texts);
      expect([...vectors]).toEqual([...(expected.data as Float32Array)]);
    } finally {
      await extractor.dispose();
    }
  });
});
