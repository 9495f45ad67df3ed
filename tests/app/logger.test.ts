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

afterAll(() => {
  for (const spy of spies) spy.mockRestore();
});
