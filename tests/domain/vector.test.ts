import { describe, expect, test } from "bun:test";
import { vectorProblem } from "../../src/domain/vector.ts";

describe("vectorProblem", () => {
  test("a finite, non-zero vector of the right length is usable", () => {
    expect(vectorProblem([0.1, -0.2, 0.3], 3)).toBeNull();
    expect(vectorProblem([0, 0, 1e-30], 3)).toBeNull();
    expect(vectorProblem([-1], 1)).toBeNull();
    expect(vectorProblem(new Float32Array([0, 0.5, 0, 0]), 4)).toBeNull();
  });

  test("a wrong length names both lengths", () => {
    expect(vectorProblem([1, 2, 3], 4)).toBe("expected 4 dimensions, got 3");
    expect(vectorProblem([1, 2, 3, 4, 5], 4)).toBe("expected 4 dimensions, got 5");
    expect(vectorProblem([], 4)).toBe("expected 4 dimensions, got 0");
  });

  test("an empty vector is never usable", () => {
    expect(vectorProblem([], 0)).not.toBeNull();
  });

  test("an all-zero vector has no direction", () => {
    expect(vectorProblem([0, 0, 0], 3)).toBe("the vector is all zeros");
    expect(vectorProblem([0, -0, 0], 3)).toBe("the vector is all zeros");
    expect(vectorProblem(new Float32Array(8), 8)).toBe("the vector is all zeros");
  });

  test("NaN and infinities are refused, naming the component", () => {
    expect(vectorProblem([1, Number.NaN, 0], 3)).toBe("component 1 is not a finite number");
    expect(vectorProblem([Number.POSITIVE_INFINITY, 1, 0], 3)).toBe("component 0 is not a finite number");
    expect(vectorProblem([1, 2, Number.NEGATIVE_INFINITY], 3)).toBe("component 2 is not a finite number");
    expect(vectorProblem([0, 0, Number.NaN], 3)).toBe("component 2 is not a finite number");
  });

  test("holes and non-numbers are refused", () => {
    expect(vectorProblem([1, undefined, 0] as unknown as number[], 3)).toBe("component 1 is not a finite number");
    expect(vectorProblem([1, "2", 0] as unknown as number[], 3)).toBe("component 1 is not a finite number");
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    expect(vectorProblem([1, , 0] as number[], 3)).toBe("component 1 is not a finite number");
  });

  test("the length is checked before the values", () => {
    expect(vectorProblem([Number.NaN], 2)).toBe("expected 2 dimensions, got 1");
  });
});
