/** What every command shares: its exit statuses, its output, and how a command line error is raised. */
import type { Command } from "commander";
import type { Config } from "../config.ts";

/** Exit statuses: 0 done, 1 the command failed, 2 the command line itself is wrong. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Where a command writes: the terminal's stdout and stderr, or a test's buffers. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
  /**
   * What a command reads as its standard input (a password, `synonyms set -`), for a test that runs
   * the command in its own process; unset, the process's stdin (or a prompt when it is a terminal).
   */
  input?: () => Promise<string>;
}

/** Standard input to its end: `output.input`'s, else the process's. */
export function readStandardInput(output: CliOutput): Promise<string> {
  return output.input ? output.input() : new Response(Bun.stdin.stream()).text();
}

/** A wrong command line found by a command itself (e.g. an option's value): printed with a hint, exit 2. */
export class UsageError extends Error {}

/**
 * Runs a command's action with the settings read from the environment (read only when a command
 * runs, so `help` works whatever they are); resolves once its exit status is recorded.
 */
export type RunAction = (action: (config: Config) => Promise<number>) => Promise<void>;

/** Adds a command (or a group of them) to the program. */
export type RegisterCommand = (program: Command, run: RunAction, output: CliOutput) => void;
