import { afterAll, afterEach, expect, spyOn, test } from "bun:test";
import { createLogger, tapLogger } from "../../src/app/logger.ts";

const written: string[] = [];
const spies = [process.stdout, process.stderr].map((stream) =>
  spyOn(stream, "write").mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }),
);
afterEach(() => {
  written.length = 0;
});

test("configured secrets are masked wherever they appear in a log line, errors included", () => {
  const key = 'sk-live-"quoted"-0123456789';
  const log = createLogger("info", [key, "AIzaSecretKey0123456789"]);
  log.warn({ event: "provider_gave_up", reason: `HTTP 401: invalid key ${key}` });
  log.error({
    event: "request_failed",
    error: new Error("rejected AIzaSecretKey0123456789", { cause: new Error(key) }),
  });
  expect(written).toHaveLength(2);
  for (const line of written) {
    expect(line).not.toContain("sk-live");
    expect(line).not.toContain("AIzaSecretKey");
    expect(line).toContain("[redacted]");
  }
  expect(JSON.parse(written[0] as string)).toMatchObject({ level: "warn", reason: "HTTP 401: invalid key [redacted]" });
});

test("lines below the minimum level are not written; short values are not treated as secrets", () => {
  const log = createLogger("warn", ["abc"]);
  log.info({ event: "request" });
  log.warn({ event: "slow", note: "abc" });
  expect(written).toHaveLength(1);
  expect(JSON.parse(written[0] as string).note).toBe("abc");
});

test("tapLogger adds the context's fields to each line and shows every event to the observer, whatever its level", () => {
  const observed: Record<string, unknown>[] = [];
  let context: Record<string, unknown> = { requestId: "r-1" };
  const log = tapLogger(createLogger("warn"), { fields: () => context, observe: (event) => observed.push(event) });
  log.debug({ event: "provider_call", outcome: "ok" });
  log.warn({ event: "provider_retry" });
  context = {};
  log.error({ event: "late" });
  expect(observed).toEqual([
    { requestId: "r-1", event: "provider_call", outcome: "ok" },
    { requestId: "r-1", event: "provider_retry" },
    { event: "late" },
  ]);
  expect(written.map((line) => JSON.parse(line))).toEqual([
    { time: expect.any(String), level: "warn", requestId: "r-1", event: "provider_retry" },
    { time: expect.any(String), level: "error", event: "late" },
  ]);
});

test("a buffered logger writes the turn's lines together, in order, with every field; an error at once, after them", async () => {
  const log = createLogger("info", ["AIzaSecretKey0123456789"], { buffered: true });
  log.info({ event: "search", results: 3, embedMs: 0.4, recommendedBy: "LOCAL - x" });
  log.info({ event: "request", method: "POST", path: "/products/search", status: 200, ms: 1.5, requestId: "r-1" });
  expect(written).toEqual([]); // not yet: at the end of this turn
  await new Promise((resolve) => setImmediate(resolve));
  expect(written).toHaveLength(1);
  expect(
    (written[0] as string)
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
  ).toEqual([
    { time: expect.any(String), level: "info", event: "search", results: 3, embedMs: 0.4, recommendedBy: "LOCAL - x" },
    {
      time: expect.any(String),
      level: "info",
      event: "request",
      method: "POST",
      path: "/products/search",
      status: 200,
      ms: 1.5,
      requestId: "r-1",
    },
  ]);

  written.length = 0;
  log.warn({ event: "slow", note: "AIzaSecretKey0123456789" });
  log.error({ event: "request_failed", error: new Error("boom") });
  expect(written.map((chunk) => JSON.parse(chunk))).toEqual([
    { time: expect.any(String), level: "warn", event: "slow", note: "[redacted]" },
    { time: expect.any(String), level: "error", event: "request_failed", error: "Error: boom" },
  ]);
});

afterAll(() => {
  for (const spy of spies) spy.mockRestore();
});
