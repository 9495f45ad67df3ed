/**
 * The command line: `serve` (the default) and the operator's commands, one file each in commands/,
 * parsed by commander. A wrong command line (an unknown command or option, a missing or extra
 * argument) exits 2 and names what is wrong; a command that fails exits 1 with one readable line.
 */
import { Command, CommanderError } from "commander";
import packageJson from "../../package.json" with { type: "json" };
import { DataDirInUse } from "../adapters/pglite/data-dir-lock.ts";
import { EmbeddingSpaceMismatch, SchemaBehind } from "../adapters/postgres/schema.ts";
import { DomainError } from "../domain/errors.ts";
import { UpkeepBusy } from "../domain/reembed-catalogue.ts";
import { AdminChannelFailed } from "./admin/admin-channel.ts";
import { registerCatalogues } from "./commands/catalogues.ts";
import { type CliOutput, EXIT, type RegisterCommand, UsageError } from "./commands/command.ts";
import { registerExport } from "./commands/export.ts";
import { registerHealthcheck } from "./commands/healthcheck.ts";
import { registerImport } from "./commands/import.ts";
import { registerKeys } from "./commands/keys.ts";
import { registerReembed } from "./commands/reembed.ts";
import { registerServe } from "./commands/serve.ts";
import { registerSynonyms } from "./commands/synonyms.ts";
import { registerUsers } from "./commands/users.ts";
import { registerVectorIndex } from "./commands/vector-index.ts";
import { ConfigError, loadConfig } from "./config.ts";

type Env = Record<string, string | undefined>;

/** In the order `help` lists them. */
const COMMANDS: readonly RegisterCommand[] = [
  registerServe,
  registerUsers,
  registerKeys,
  registerCatalogues,
  registerSynonyms,
  registerImport,
  registerExport,
  registerReembed,
  registerVectorIndex,
  registerHealthcheck,
];

const FOOTER = "Settings come from the environment and a .env file in the working directory; see README.md.";

const terminal: CliOutput = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** `version`: the program's own (package.json's, embedded at build time); the VERSION setting labels a deployment. */
export async function runCli(
  args: string[],
  env: Env,
  version: string = packageJson.version,
  output: CliOutput = terminal,
): Promise<number> {
  let exitCode: number = EXIT.ok;
  let failed: unknown;
  const run = async (action: (config: ReturnType<typeof loadConfig>) => Promise<number>) => {
    try {
      exitCode = await action(loadConfig(env));
    } catch (error) {
      failed = error;
    }
  };
  const program = buildProgram(version, run, output);
  // `help users add` is `users add --help`; no command at all is `serve`.
  const argv = args[0] === "help" ? [...args.slice(1), "--help"] : args.length === 0 ? ["serve"] : args;
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return EXIT.ok;
    // A group named without its action (`users`) shows the group's help: a usage error all the same.
    output.err("Run 'sku-search help' for the commands.\n");
    return EXIT.usage;
  }
  if (failed instanceof UsageError) {
    output.err(`sku-search: ${failed.message}\nRun 'sku-search help' for the commands.\n`);
    return EXIT.usage;
  }
  if (failed !== undefined) {
    output.err(`${describeFailure(failed)}\n`);
    return EXIT.failed;
  }
  return exitCode;
}

function buildProgram(version: string, run: Parameters<RegisterCommand>[1], output: CliOutput): Command {
  const program = new Command("sku-search")
    .description("semantic product search")
    .version(version, "-V, --version")
    .helpCommand(false)
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({ writeOut: output.out, writeErr: output.err })
    .addHelpText("after", `\n${FOOTER}`)
    // Every command of the tree in the list, with its arguments (`users add <username>`).
    .configureHelp({
      visibleCommands: (command) => (command.parent ? [...command.commands] : leaves(command)),
      subcommandTerm: (command) => [...path(command), ...command.registeredArguments.map(argumentTerm)].join(" "),
    });
  for (const register of COMMANDS) register(program, run, output);
  // Every command refuses what it does not take (commander's own default lets extra arguments through).
  for (const command of leaves(program)) command.allowExcessArguments(false);
  return program;
}

/** The commands that do something (not a group like `users`), in order. */
function leaves(command: Command): Command[] {
  return command.commands.flatMap((child) => (child.commands.length > 0 ? leaves(child) : [child]));
}

/** A command's words from the top (`users add`). */
function path(command: Command): string[] {
  return command.parent?.parent ? [...path(command.parent), command.name()] : [command.name()];
}

function argumentTerm(argument: { name(): string; required: boolean }): string {
  return argument.required ? `<${argument.name()}>` : `[${argument.name()}]`;
}

/** One readable line for the operator; a stack only for the unexpected. */
function describeFailure(error: unknown): string {
  if (
    error instanceof ConfigError ||
    error instanceof EmbeddingSpaceMismatch ||
    error instanceof SchemaBehind ||
    error instanceof UpkeepBusy ||
    error instanceof DataDirInUse ||
    error instanceof AdminChannelFailed
  ) {
    return error.message;
  }
  if (error instanceof DomainError) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return error instanceof Error ? `error: ${error.message}` : `error: ${String(error)}`;
}
