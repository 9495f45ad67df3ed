import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NulPipe, type PipeFailure, PipeUnavailable } from "../../../src/adapters/translation/nul-pipe.ts";
import { FakeTimers } from "../../fakes/fake-timers.ts";
import { useTempDirs } from "../../support/temp-dirs.ts";
import { waitUntil } from "../../support/wait-until.ts";

const FAKE = join(import.meta.dir, "../../fakes/fake-apertium.ts");
const pipes: NulPipe[] = [];
const tempDir = useTempDirs("nul-pipe");
/** The pipes' time limits run out when a test lets them (`timers.elapse`), never because the machine is slow. */
let timers: FakeTimers;

function pipe(command: string[] = [process.execPath, FAKE, "-z", "echo"], retryAfterMs = 60_000): NulPipe {
  const created = new NulPipe({ command, probe: "hola", startTimeoutMs: 10_000, retryAfterMs, timers });
  pipes.push(created);
  return created;
}

beforeEach(() => {
  timers = new FakeTimers();
});

afterEach(async () => {
  for (const created of pipes.splice(0)) await created.close();
});

/** A shell whose child (in its process group) is the fake; the child's pid is written to `pidFile`. */
function shellWithChild(pidFile: string): string[] {
  // Through fd 3: a background command of a script would otherwise read /dev/null.
  return ["sh", "-c", `exec 3<&0; ${process.execPath} ${FAKE} echo <&3 & echo $! > ${pidFile}; wait`];
}

/** Alive and not a zombie (a killed orphan waits for init to reap it). */
function isRunning(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

/** Resolves once the process is gone (a test that kills nothing fails by its own time limit). */
function gone(pid: number): Promise<void> {
  return waitUntil(() => !isRunning(pid));
}

async function failure(promise: Promise<unknown>): Promise<PipeFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PipeUnavailable) return error.reason;
    throw error;
  }
  throw new Error("expected the request to fail");
}

describe("NulPipe", () => {
  test("answers each segment in order, from one long-lived process, one request at a time", async () => {
    const echo = pipe();
    const answers = await Promise.all([
      echo.request(["uno", "dos"], 5000),
      echo.request(["tres"], 5000),
      echo.request(["ñandú ☕ 𝄞"], 5000),
    ]);
    expect(answers).toEqual([["uno", "dos"], ["tres"], ["ñandú ☕ 𝄞"]]);
    expect(echo.starts).toBe(1);
  });

  test("a megabyte in one segment comes back whole", async () => {
    const echo = pipe();
    const long = "palabra ñ ".repeat(100_000);
    const [answer] = await echo.request([long], 10_000);
    expect(answer).toBe(long);
  });

  test("a request with no answer in time fails; the stuck process is replaced by the next request", async () => {
    const pidFile = join(tempDir(), "pid");
    const echo = pipe(shellWithChild(pidFile));
    await echo.start();
    const stuck = Number(readFileSync(pidFile, "utf8"));
    const failed = failure(echo.request(["esto cuelga"], 300));
    await timers.elapse(300);
    expect(await failed).toBe("timeout");
    // The whole pipeline goes, not only the shell that runs it.
    await gone(stuck);
    expect(await echo.request(["sigue"], 5000)).toEqual(["sigue"]);
    expect(echo.starts).toBe(2);
  });

  test("a process that dies mid-answer fails that request; the next one gets a new process", async () => {
    const echo = pipe();
    await echo.start();
    expect(await failure(echo.request(["esto revienta"], 5000))).toBe("died");
    expect(await echo.request(["otra vez"], 5000)).toEqual(["otra vez"]);
    expect(echo.starts).toBe(2);
  });

  test("a request that times out while queued never reaches the process, which carries on", async () => {
    const dir = tempDir();
    const [hold, log] = [join(dir, "hold"), join(dir, "log")];
    const echo = pipe([
      "sh",
      "-c",
      `FAKE_APERTIUM_HOLD='${hold}' FAKE_APERTIUM_LOG='${log}' exec '${process.execPath}' '${FAKE}' -z echo`,
    ]);
    await echo.start();
    // Held by the process until the test lets it answer.
    const slow = echo.request(["despacio"], 5000);
    const impatient = failure(echo.request(["impaciente"], 50));
    await timers.elapse(50);
    expect(await impatient).toBe("timeout");
    writeFileSync(hold, "");
    expect(await slow).toEqual(["despacio"]);
    expect(await echo.request(["después"], 5000)).toEqual(["después"]);
    expect(echo.starts).toBe(1);
    expect(readFileSync(log, "utf8")).not.toContain("impaciente");
  });

  test("an aborted request fails at once", async () => {
    const echo = pipe();
    await echo.start();
    const controller = new AbortController();
    const stuck = echo.request(["cuelga"], 5000, controller.signal);
    controller.abort();
    expect(await failure(stuck)).toBe("aborted");
    expect(await echo.request(["bien"], 5000)).toEqual(["bien"]);
  });

  test("a program that cannot start fails, and is not started again until retryAfterMs has passed", async () => {
    const broken = pipe(["sh", "-c", "echo 'no such data file' >&2; exit 1"], 60_000);
    const first = broken.request(["hola"], 5000);
    await expect(first).rejects.toThrow("no such data file");
    await timers.advance(59_999);
    expect(await failure(broken.request(["hola"], 5000))).toBe("start_failed");
    expect(broken.starts).toBe(1);
    await timers.advance(1);
    await expect(broken.request(["hola"], 5000)).rejects.toThrow("no such data file");
    expect(broken.starts).toBe(2);
  });

  test("close kills the process and later requests fail", async () => {
    const pidFile = join(tempDir(), "pid");
    const echo = pipe(shellWithChild(pidFile));
    await echo.start();
    await echo.close();
    await gone(Number(readFileSync(pidFile, "utf8")));
    expect(await failure(echo.request(["hola"], 1000))).toBe("closed");
  });
});
