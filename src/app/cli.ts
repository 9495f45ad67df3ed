/**
 * The command line: `serve` (the default) and the operator's commands. Passwords are read from
 * standard input or a hidden prompt, never from the arguments (they would show in `ps` and shell history).
 */

import { DataDirInUse } from "../adapters/pglite/data-dir-lock.ts";
import { EmbeddingSpaceMismatch, reembedProducts } from "../adapters/postgres/schema.ts";
import { DomainError } from "../domain/errors.ts";
import { type Config, ConfigError, loadConfig, secretsOf } from "./config.ts";
import { createContainer, createEmbedder, openDatabase, openStore, setUpTranslation } from "./container.ts";
import { createLogger } from "./logger.ts";

type Env = Record<string, string | undefined>;

const USAGE = `Usage: sku-search [command]

Commands:
  serve                          start the HTTP service (default)
  users add <username>           create a user; the password is read from stdin or a prompt
  users reset-password <username>
  users remove <username>
  reembed                        re-embed every product with the configured embedding model
  healthcheck                    exit 0 when the local service answers GET / with 200
  help

Settings come from the environment and a .env file; see README.md.`;

export async function runCli(args: string[], env: Env): Promise<number> {
  const [command = "serve", ...rest] = args;
  try {
    if (command === "help" || command === "--help" || command === "-h") {
      console.log(USAGE);
      return 0;
    }
    const config = loadConfig(env);
    switch (command) {
      case "serve":
        return await serve(config);
      case "users":
        return await users(config, rest);
      case "reembed":
        return await reembed(config);
      case "healthcheck":
        return await healthcheck(config);
      default:
        console.error(`unknown command '${command}'\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    console.error(describeFailure(error));
    return 1;
  }
}

async function serve(config: Config): Promise<number> {
  const log = createLogger(config.logLevel, secretsOf(config));
  const container = await createContainer(config, log);
  let server: ReturnType<typeof container.app.listen>;
  try {
    await container.warmUp();
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
  log.info({
    event: "started",
    url: `http://${config.host}:${server.server?.port ?? config.port}`,
    database: config.databaseUrl === undefined ? "pglite" : "postgresql",
    embedder: container.embedder.model,
    version: config.version,
  });

  const stopped = Promise.withResolvers<number>();
  const shutdown = async (signal: string) => {
    log.info({ event: "stopping", signal });
    await container.app.stop();
    await container.close();
    stopped.resolve(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  return stopped.promise;
}

async function users(config: Config, args: string[]): Promise<number> {
  const [action, username] = args;
  if (!action || !username || !["add", "reset-password", "remove"].includes(action)) {
    console.error(USAGE);
    return 2;
  }
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
    return 0;
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
    return 0;
  } finally {
    await translation.close();
    await client.close();
  }
}

async function healthcheck(config: Config): Promise<number> {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  try {
    const response = await fetch(`http://${host}:${config.port}/`, { signal: AbortSignal.timeout(5000) });
    return response.status === 200 ? 0 : 1;
  } catch {
    return 1;
  }
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
