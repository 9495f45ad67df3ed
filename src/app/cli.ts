/**
 * The command line: `serve` (the default) and the operator's commands, parsed with node:util's
 * parseArgs (strict: an unknown option or an extra argument is an error, exit 2, that names it).
 * Passwords are read from standard input or a hidden prompt, never from the arguments (they would
 * show in `ps` and shell history).
 */

import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import packageJson from "../../package.json" with { type: "json" };
import { FILE_FORMATS, type FileFormat } from "../adapters/import/file-items.ts";
import { DataDirInUse } from "../adapters/pglite/data-dir-lock.ts";
import { EmbeddingSpaceMismatch, reembedProducts } from "../adapters/postgres/schema.ts";
import type { VectorIndex } from "../adapters/postgres/vector-index.ts";
import { DomainError } from "../domain/errors.ts";
import { ImportProducts } from "../domain/import-products.ts";
import { type Config, ConfigError, loadConfig, secretsOf } from "./config.ts";
import { INTERRUPTED, openImport, runImport } from "./import-command.ts";
import { createLogger } from "./logger.ts";
import { initialAdminPasswordFile } from "./secrets.ts";
import { createEmbedder, openDatabase, openStore, openVectorIndex, setUpTranslation } from "./store.ts";

type Env = Record<string, string | undefined>;

/** Products the import command reads and stores together. */
const IMPORT_BATCH_SIZE = 1000;

/** Exit statuses: 0 done, 1 the command failed, 2 the command line itself is wrong. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** A command's own options, as parseArgs takes them, each with a line for its help. */
type CommandOptions = Record<string, { type: "string" | "boolean"; short?: string; help: string }>;
type OptionValues = Record<string, string | boolean | undefined>;

interface Command {
  /** The words that name it, e.g. "users add". */
  name: string;
  /** Its arguments as the usage line shows them, e.g. "<username>". */
  args: string;
  summary: string;
  /** How many positional arguments it takes (exactly). */
  positionals: number;
  options?: CommandOptions;
  run(config: Config, positionals: string[], options: OptionValues): Promise<number>;
}

const GLOBAL_OPTIONS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} as const;

const COMMANDS: readonly Command[] = [
  { name: "serve", args: "", summary: "start the HTTP service (the default command)", positionals: 0, run: serve },
  {
    name: "users add",
    args: "<username>",
    summary: "create a user; the password is read from stdin (first line) or a hidden prompt",
    positionals: 1,
    run: (config, [username]) => users(config, "add", username as string),
  },
  {
    name: "users reset-password",
    args: "<username>",
    summary: "set a user's password (read like `users add`); the user's earlier tokens stop working",
    positionals: 1,
    run: (config, [username]) => users(config, "reset-password", username as string),
  },
  {
    name: "users remove",
    args: "<username>",
    summary: "delete a user; their tokens stop working",
    positionals: 1,
    run: (config, [username]) => users(config, "remove", username as string),
  },
  {
    name: "import",
    args: "<file>",
    summary:
      "import products from JSON Lines, a JSON array or CSV (header: name,description,category[,sku]), gzip accepted",
    positionals: 1,
    options: {
      format: { type: "string", help: "jsonl, json or csv (default: from the file's name, else its first bytes)" },
      "batch-size": { type: "string", help: `products read and stored together (default ${IMPORT_BATCH_SIZE})` },
      report: { type: "string", help: "write every item's outcome to this file, as JSON Lines" },
    },
    run: (config, [file], options) => importFile(config, file as string, options),
  },
  {
    name: "reembed",
    args: "",
    summary: "re-embed every product with the configured embedding model (stop the service first)",
    positionals: 0,
    run: reembed,
  },
  {
    name: "index status",
    args: "",
    summary: "show the vector index: its column, whether it is built and valid, its size, the products",
    positionals: 0,
    run: (config) => vectorIndex(config, "status"),
  },
  {
    name: "index build",
    args: "",
    summary: "build the vector index now, whatever the catalogue's size (VECTOR_INDEX_MIN_ROWS)",
    positionals: 0,
    run: (config) => vectorIndex(config, "build"),
  },
  {
    name: "index drop",
    args: "",
    summary: "drop the vector index: search scans exactly until it is built again",
    positionals: 0,
    run: (config) => vectorIndex(config, "drop"),
  },
  {
    name: "healthcheck",
    args: "",
    summary: "exit 0 when the service on HOST:PORT answers GET / with 200, 1 otherwise",
    positionals: 0,
    run: healthcheck,
  },
];

const FOOTER = "Settings come from the environment and a .env file in the working directory; see README.md.";

function usage(version: string): string {
  const width = Math.max(...COMMANDS.map((command) => `${command.name} ${command.args}`.length));
  const lines = COMMANDS.map((command) => `  ${`${command.name} ${command.args}`.padEnd(width)}  ${command.summary}`);
  return [
    `sku-search ${version}: semantic product search`,
    "",
    "Usage: sku-search [command] [options]",
    "",
    "Commands:",
    ...lines,
    `  ${"help [command]".padEnd(width)}  show this help, or one command's`,
    "",
    "Options: -h, --help (also after a command), -V, --version",
    "",
    FOOTER,
  ].join("\n");
}

function commandUsage(command: Command): string {
  const options = Object.entries(command.options ?? {}).map(
    ([name, option]) => `  --${name}${option.type === "string" ? " <value>" : ""}  ${option.help}`,
  );
  return [
    `Usage: sku-search ${command.name}${command.args ? ` ${command.args}` : ""}${options.length ? " [options]" : ""}`,
    "",
    command.summary,
    ...(options.length ? ["", "Options:", ...options] : []),
  ].join("\n");
}

/** Raised for a wrong command line: printed with the usage, exit 2. */
class UsageError extends Error {}

/** `version`: the program's own (package.json's, embedded at build time); the VERSION setting labels a deployment. */
export async function runCli(args: string[], env: Env, version: string = packageJson.version): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(args);
  } catch (error) {
    if (!(error instanceof UsageError) && !isParseArgsError(error)) throw error;
    console.error(`sku-search: ${(error as Error).message}\nRun 'sku-search help' for the commands.`);
    return EXIT.usage;
  }
  if (parsed.kind === "version") {
    console.log(version);
    return EXIT.ok;
  }
  if (parsed.kind === "help") {
    console.log(parsed.command ? commandUsage(parsed.command) : usage(version));
    return EXIT.ok;
  }
  try {
    return await parsed.command.run(loadConfig(env), parsed.positionals, parsed.options);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`sku-search: ${error.message}\nRun 'sku-search help ${parsed.command.name}' for its usage.`);
      return EXIT.usage;
    }
    console.error(describeFailure(error));
    return EXIT.failed;
  }
}

type ParsedCommandLine =
  | { kind: "version" }
  | { kind: "help"; command?: Command | undefined }
  | { kind: "run"; command: Command; positionals: string[]; options: OptionValues };

/**
 * Two passes: a lenient one finds the command among the first words, then a strict one with that
 * command's own options, so an option no command takes (or another command's) is an error naming it.
 */
function parseCommandLine(args: string[]): ParsedCommandLine {
  const words = parseArgs({ args, options: GLOBAL_OPTIONS, allowPositionals: true, strict: false }).positionals;
  const named = words.length === 0 || words[0] === "help" ? undefined : findCommand(words).command;
  const { values, positionals } = parseArgs({
    args,
    options: { ...GLOBAL_OPTIONS, ...optionsOf(named) },
    allowPositionals: true,
    strict: true,
  });
  if (values.version) {
    if (positionals.length > 0 || values.help) throw new UsageError("--version takes no command or other option");
    return { kind: "version" };
  }
  if (positionals[0] === "help") {
    const wanted = positionals.slice(1);
    if (wanted.length === 0) return { kind: "help" };
    return { kind: "help", command: findCommand(wanted).command };
  }
  if (positionals.length === 0) {
    return values.help ? { kind: "help" } : { kind: "run", command: SERVE, positionals: [], options: {} };
  }
  const { command, rest } = findCommand(positionals);
  if (values.help) return { kind: "help", command };
  if (rest.length !== command.positionals) {
    const expected = command.args || "no arguments";
    if (rest.length > command.positionals) {
      const extra = rest.slice(command.positionals).map((arg) => `'${arg}'`);
      throw new UsageError(`${command.name}: unexpected argument ${extra.join(" ")} (it takes ${expected})`);
    }
    throw new UsageError(`${command.name}: missing argument (usage: ${command.name} ${command.args})`);
  }
  const { help: _help, version: _version, ...options } = values;
  return { kind: "run", command, positionals: rest, options };
}

/** A command's options in parseArgs' form (without their help lines). */
function optionsOf(command: Command | undefined) {
  return Object.fromEntries(
    Object.entries(command?.options ?? {}).map(([name, { type, short }]) => [
      name,
      short === undefined ? { type } : { type, short },
    ]),
  );
}

const SERVE = COMMANDS[0] as Command;

/** The command named by the first one or two words, and the words after it. */
function findCommand(words: string[]): { command: Command; rest: string[] } {
  for (const length of [2, 1]) {
    const command = COMMANDS.find((candidate) => candidate.name === words.slice(0, length).join(" "));
    if (command) return { command, rest: words.slice(length) };
  }
  const group = COMMANDS.filter((candidate) => candidate.name.startsWith(`${words[0]} `));
  if (group.length > 0) {
    const actions = group.map((command) => command.name.split(" ")[1]).join(", ");
    throw new UsageError(
      words[1] === undefined
        ? `${words[0]}: which one? ${actions}`
        : `${words[0]}: unknown action '${words[1]}' (one of ${actions})`,
    );
  }
  throw new UsageError(`unknown command '${words[0]}'`);
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_");
}

async function serve(config: Config): Promise<number> {
  const log = createLogger(config.logLevel, secretsOf(config));
  // The HTTP service's modules are loaded by this command only.
  const { createContainer } = await import("./container.ts");
  const container = await createContainer(config, log);
  let server: ReturnType<typeof container.app.listen>;
  let metricsServer: ReturnType<NonNullable<typeof container.metricsApp>["listen"]> | undefined;
  try {
    // Bun's own body limit stays at its default (far above MAX_BODY_BYTES): the app answers 413 as
    // {"detail"} itself, from Content-Length and while reading the body.
    server = container.app.listen({
      hostname: config.host,
      port: config.port,
      // Elysia defaults to SO_REUSEPORT: a second instance would share the port silently instead of failing.
      reusePort: false,
    });
  } catch (error) {
    await container.close();
    throw error;
  }
  try {
    metricsServer = container.metricsApp?.listen({
      hostname: config.host,
      port: config.metrics.port,
      reusePort: false,
    });
  } catch (error) {
    await container.app.stop();
    await container.close();
    throw error;
  }

  const stopped = Promise.withResolvers<number>();
  let stopping = false;
  const shutdown = async (reason: string, code: number = EXIT.ok) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: "stopping", reason });
    await container.app.stop();
    await metricsServer?.stop();
    await container.close();
    stopped.resolve(code);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));

  // Listening already: /health/live answers, /health/ready says 503 until the model is loaded.
  try {
    await container.warmUp();
  } catch (error) {
    log.error({ event: "warm_up_failed", error });
    await shutdown("the embedder could not be loaded", EXIT.failed);
    return stopped.promise;
  }
  container.maintainVectorIndex();
  log.info({
    event: "started",
    url: `http://${config.host}:${server.server?.port ?? config.port}`,
    metrics: metricsServer
      ? `http://${config.host}:${metricsServer.server?.port}/metrics`
      : config.metrics.token
        ? "/metrics (bearer token)"
        : "off",
    database: config.databaseUrl === undefined ? "pglite" : "postgresql",
    embedder: container.embedder.model,
    version: config.version,
  });
  return stopped.promise;
}

async function users(config: Config, action: "add" | "reset-password" | "remove", username: string): Promise<number> {
  const store = await openStore(config, await createEmbedder(config));
  try {
    if (action === "remove") {
      await store.manageUsers.remove(username);
      console.log(`user '${username}' removed`);
    } else {
      const password = await readPassword();
      if (action === "add") {
        await store.manageUsers.add(username, password);
        console.log(`user '${username}' created`);
      } else {
        await store.manageUsers.resetPassword(username, password);
        console.log(`password of '${username}' changed`);
      }
    }
    if (action !== "add" && username.trim() === config.adminUsername) {
      // The first-start password file no longer holds a working password.
      rmSync(initialAdminPasswordFile(config.dataDir), { force: true });
    }
    return EXIT.ok;
  } finally {
    await store.client.close();
  }
}

async function reembed(config: Config): Promise<number> {
  const log = createLogger(config.logLevel, secretsOf(config));
  const embedder = await createEmbedder(config, log);
  const translation = await setUpTranslation(config, embedder, log);
  const client = await openDatabase(config).catch(async (error) => {
    await translation.close();
    throw error;
  });
  try {
    const { products } = await reembedProducts(client, translation.wrap(embedder), {
      onProgress: (done, total) => process.stderr.write(`\rre-embedded ${done}/${total}`),
    });
    console.error(`\nall ${products} products now use ${embedder.model} (${embedder.dimension} dimensions)`);
    // The vector index went with the old embeddings: built again for the new ones.
    await buildIndexAfterLoad(openVectorIndex(config, client, embedder.dimension));
    return EXIT.ok;
  } finally {
    await translation.close();
    await client.close();
  }
}

/** After a large write (an import, a re-embed): builds the vector index if it is due (VECTOR_INDEX=auto). */
async function buildIndexAfterLoad(index: VectorIndex): Promise<void> {
  const started = performance.now();
  if (await index.maintain({ ignoreWrites: true })) {
    console.error(`vector index built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

async function vectorIndex(config: Config, action: "status" | "build" | "drop"): Promise<number> {
  const store = await openStore(config, await createEmbedder(config));
  try {
    const index = store.vectorIndex;
    if (action === "build") {
      const started = performance.now();
      if (!(await index.build()) && !(await index.status()).valid) {
        console.error("no vector index was built: see `index status` (the dimension, or another build running)");
        return EXIT.failed;
      }
      console.error(`vector index ready (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    } else if (action === "drop") {
      console.error((await index.drop()) ? "vector index dropped" : "there was no vector index");
    }
    const status = await index.status();
    console.log(
      JSON.stringify({
        ...status,
        mode: config.vectorSearch.mode,
        minRows: config.vectorSearch.minRows,
        efSearch: config.vectorSearch.efSearch,
        filterExactMaxRows: config.vectorSearch.filterExactMaxRows,
      }),
    );
    return EXIT.ok;
  } finally {
    await store.client.close();
  }
}

async function importFile(config: Config, file: string, options: OptionValues): Promise<number> {
  const format = options.format;
  if (format !== undefined && !(FILE_FORMATS as readonly unknown[]).includes(format)) {
    throw new UsageError(`import: --format must be one of ${FILE_FORMATS.join(", ")}, got '${String(format)}'`);
  }
  const batchSize = options["batch-size"] === undefined ? IMPORT_BATCH_SIZE : Number(options["batch-size"]);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new UsageError("import: --batch-size must be a whole number from 1 to 100000");
  }
  const source = await openImport(file, format as FileFormat | undefined);
  if (source === undefined) return EXIT.failed;
  const log = createLogger(config.logLevel, secretsOf(config));
  const embedder = await createEmbedder(config, log);
  const translation = await setUpTranslation(config, embedder, log);
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore(config, embedder);
  } catch (error) {
    await translation.close();
    throw error;
  }
  try {
    const importer = new ImportProducts({ products: store.products, embedder: translation.wrap(embedder) });
    const code = await runImport(file, source, importer, {
      batchSize,
      reportPath: typeof options.report === "string" ? options.report : undefined,
    });
    if (code !== INTERRUPTED) await buildIndexAfterLoad(store.vectorIndex);
    return code;
  } finally {
    await translation.close();
    await store.client.close();
  }
}

async function healthcheck(config: Config): Promise<number> {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}/`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
    if (response.status === 200) return EXIT.ok;
    console.error(`unhealthy: GET ${url} answered ${response.status}`);
  } catch (error) {
    console.error(`unhealthy: nothing answers at ${url} (${(error as Error).message})`);
  }
  return EXIT.failed;
}

/** The first line of stdin when it is piped; otherwise a prompt with echo off, asked twice. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const text = await new Response(Bun.stdin.stream()).text();
    return text.split(/\r?\n/)[0] ?? "";
  }
  const first = promptHidden("Password: ");
  const second = promptHidden("Repeat password: ");
  if (first !== second) throw new Error("the passwords do not match");
  return first;
}

function promptHidden(question: string): string {
  const stty = (mode: string) => Bun.spawnSync(["stty", mode], { stdin: "inherit" });
  stty("-echo");
  try {
    return prompt(question) ?? "";
  } finally {
    stty("echo");
    process.stdout.write("\n");
  }
}

/** One readable line for the operator; a stack only for the unexpected. */
function describeFailure(error: unknown): string {
  if (error instanceof ConfigError || error instanceof EmbeddingSpaceMismatch || error instanceof DataDirInUse) {
    return error.message;
  }
  if (error instanceof DomainError) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return error instanceof Error ? `error: ${error.message}` : `error: ${String(error)}`;
}
