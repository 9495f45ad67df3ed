/**
 * The command line, run two ways. `cliProcess`: `bun run cli <args>` as a real process in the
 * project folder, exactly as the README writes it; each README command is run this way once (by
 * the test that owns it), for what only a process shows: its arguments, piped stdin, stdout,
 * stderr and exit status. `cliInProcess`: runCli in this process, stdin given and output
 * captured: the same parsing, commands and exit statuses without starting two `bun` processes and
 * loading the program again (about 0.3 s of CPU a command; with the model, about 0.6 s).
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/app/cli.ts";

export const PROJECT = join(import.meta.dir, "../..");

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `bun run cli <args>` as a process, with only PATH, HOME and `env` in its environment. */
export function startCliProcess(args: string[], env: Record<string, string>, stdin = "") {
  return Bun.spawn(["bun", "run", "cli", ...args], {
    cwd: PROJECT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), ...env },
    stdin: new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** What a process started by startCliProcess printed, once it has exited. */
export async function finished(child: ReturnType<typeof startCliProcess>): Promise<CliRun> {
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/** `bun run cli <args>` as a process, to its end. */
export function cliProcess(args: string[], env: Record<string, string>, stdin = ""): Promise<CliRun> {
  return finished(startCliProcess(args, env, stdin));
}

/**
 * runCli in this process, `env` its whole environment (the service's logs at warn unless told
 * otherwise: they go to this process's stdout) and `stdin` its standard input.
 */
export async function cliInProcess(args: string[], env: Record<string, string>, stdin = ""): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, { LOG_LEVEL: "warn", ...env }, undefined, {
    out: (text) => {
      stdout += text;
    },
    err: (text) => {
      stderr += text;
    },
    input: async () => stdin,
  });
  return { code, stdout, stderr };
}
