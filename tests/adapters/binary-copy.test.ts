import { describe, expect, test } from "bun:test";
import { decodeVector, encodeVector } from "../../src/adapters/postgres/binary-copy.ts";

describe("pgvector's binary vector format", () => {
  test("a vector read back is the float4 of each component, exactly", () => {
    const vector = [0.1, -2.5, 1e-7, 3.4e38, 0, 1 / 3];
    expect(decodeVector(encodeVector(vector))).toEqual(vector.map(Math.fround));
  });

  test("bytes inside a larger buffer (a driver's pooled Buffer) are read from their own offset", () => {
    const bytes = encodeVector([1, 2, 3]);
    const pooled = Buffer.alloc(64, 0xff);
    pooled.set(bytes, 13);
    expect(decodeVector(pooled.subarray(13, 13 + bytes.length))).toEqual([1, 2, 3]);
  });

  test("bytes of another length than the dimension they announce are refused", () => {
    expect(() => decodeVector(encodeVector([1, 2, 3]).subarray(0, 12))).toThrow("not a vector");
    expect(() => decodeVector(new Uint8Array([0]))).toThrow("not a vector");
  });
});
