/**
 * How the operator's commands reach the data while the service runs.
 *
 * On PostgreSQL a command opens the database itself, beside the service. The embedded database
 * (PGlite) is one process's (its data directory is locked: adapters/pglite/data-dir-lock.ts), so
 * while `serve` holds it, the command asks the service instead: `serve` listens on a unix socket in
 * DATA_DIR (`admin.sock`, mode 0600: only the data directory's owner, who could read its secrets
 * anyway, can connect) and runs the same admin operations there. The protocol is one request per
 * operation: `POST /operations/<name>` with the JSON arguments; 200 `{"result"}`, or `{"error",
 * "domain"}` (a domain refusal, its Spanish message as the command prints it). A command tries the
 * database first and falls back to the socket only when the directory is in use.
 *
 * Each operation is a function of the composition root and its arguments (operation.ts), listed in
 * ADMIN_OPERATIONS by its command's area: users, keys, catalogues, synonyms, and the batches of an import.
 */
import { chmodSync, existsSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { DataDirInUse } from "../../adapters/pglite/data-dir-lock.ts";
import { DomainError } from "../../domain/errors.ts";
import type { CompositionRoot } from "../composition-root.ts";
import type { Config } from "../config.ts";
import { createLogger, type Logger } from "../logger.ts";
import { CATALOGUE_OPERATIONS } from "./catalogue-operations.ts";
import { KEY_OPERATIONS } from "./key-operations.ts";
import type { AdminArgs, AdminOperation } from "./operation.ts";
import { PRODUCT_OPERATIONS } from "./product-operations.ts";
import { SYNONYM_OPERATIONS } from "./synonym-operations.ts";
import { USER_OPERATIONS } from "./user-operations.ts";

/** Every admin operation, by name (`<area>.<action>`). */
export const ADMIN_OPERATIONS: Record<string, AdminOperation> = {
  ...USER_OPERATIONS,
  ...KEY_OPERATIONS,
  ...CATALOGUE_OPERATIONS,
  ...SYNONYM_OPERATIONS,
  ...PRODUCT_OPERATIONS,
};

const SOCKET_FILE = "admin.sock";

/** Where the service listens for admin operations (embedded database only). */
export function adminSocketPath(dataDir: string): string {
  return join(resolve(dataDir), SOCKET_FILE);
}

/** A domain refusal the service sent back over the socket: printed as its message, like one of our own. */
export class AdminOperationRefused extends DomainError {
  readonly kind = "AdminOperationRefused";
}

/** The service answered the socket with something other than an operation's answer. */
export class AdminChannelFailed extends Error {}

/**
 * Runs an operation for a command: on the database itself, or, when the embedded database is held
 * by the running service, through the service's admin socket. Resolves with its JSON result.
 */
export async function runAdminOperation(config: Config, name: string, args: AdminArgs): Promise<unknown> {
  const operation = ADMIN_OPERATIONS[name];
  if (!operation) throw new Error(`unknown admin operation: ${name}`);
  // Loaded here, not with the command line: `help` opens nothing.
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger("warn"));
  try {
    // Through JSON, as over the socket, so both ways answer alike.
    return JSON.parse(JSON.stringify(await operation(root, args)));
  } catch (error) {
    const socket = serviceSocketFor(config, error);
    if (socket === undefined) throw error;
    return viaSocket(socket, name, args);
  } finally {
    await root.close();
  }
}

/**
 * The running service's admin socket when `error` says the embedded database is held by it (and the
 * socket is there); undefined otherwise (PostgreSQL, another error, or no service listening).
 */
export function serviceSocketFor(config: Config, error: unknown): string | undefined {
  const socket = adminSocketPath(config.dataDir);
  return error instanceof DataDirInUse && config.databaseUrl === undefined && existsSync(socket) ? socket : undefined;
}

/** Runs operation `name` in the service behind `socket`; `signal` closes the connection, which stops it there. */
export async function viaSocket(socket: string, name: string, args: AdminArgs, signal?: AbortSignal): Promise<unknown> {
  const response = await fetch(`http://localhost/operations/${encodeURIComponent(name)}`, {
    unix: socket,
    ...(signal ? { signal } : {}),
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(args),
  });
  const answer = (await response.json().catch(() => null)) as { result?: unknown; error?: string; domain?: boolean };
  if (response.ok && answer && "result" in answer) return answer.result;
  const message = answer?.error ?? `the service's admin socket answered ${response.status}`;
  throw answer?.domain ? new AdminOperationRefused(message) : new AdminChannelFailed(message);
}

/**
 * The service's end: listens on DATA_DIR/admin.sock (mode 0600) and runs each operation on the
 * service's own composition root. Only for the embedded database (on PostgreSQL a command opens the
 * database itself). A socket file left by a process that died is replaced: whoever serves holds
 * the data directory's lock, so no live service owns it. Returns the function that stops it.
 */
export function serveAdminSocket(config: Config, root: CompositionRoot, log: Logger): () => void {
  const path = adminSocketPath(config.dataDir);
  rmSync(path, { force: true });
  // Created 0600 from the start (the umask), not chmod-ed after a moment of being open to others.
  const umask = process.umask(0o177);
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      unix: path,
      fetch: async (request, self) => {
        // An operation may run for minutes (a catalogue embedded again): no idle limit cuts it.
        self.timeout(request, 0);
        const match = /^\/operations\/([a-z.-]+)$/.exec(new URL(request.url).pathname);
        const name = match?.[1];
        const operation = name === undefined ? undefined : ADMIN_OPERATIONS[name];
        if (request.method !== "POST" || !operation)
          return Response.json({ error: "no such operation" }, { status: 404 });
        try {
          const args = (await request.json()) as AdminArgs;
          // request.signal aborts when the command's connection closes (it was stopped).
          const result = await operation(root, typeof args === "object" && args !== null ? args : {}, request.signal);
          log.info({ event: "admin_operation", operation: name });
          return Response.json({ result });
        } catch (error) {
          if (error instanceof DomainError) {
            return Response.json({ error: error.message, domain: true }, { status: 422 });
          }
          log.error({ event: "admin_operation_failed", operation: name, error });
          return Response.json({ error: error instanceof Error ? error.message : String(error) }, { status: 500 });
        }
      },
    });
  } finally {
    process.umask(umask);
  }
  chmodSync(path, 0o600);
  return () => {
    server.stop(true);
    rmSync(path, { force: true });
  };
}
