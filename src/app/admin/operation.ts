/**
 * An admin operation: one thing the operator's command line does (create a user, a key, a
 * catalogue...), run by the command itself on the database, or, when the embedded database is
 * held by the running service, by the service on the command's behalf over its admin socket
 * (admin-channel.ts). Its arguments and result are JSON, so either way gives the same answer.
 */
import { InvalidInput } from "../../domain/errors.ts";
import type { CompositionRoot } from "../composition-root.ts";

export type AdminArgs = Record<string, unknown>;

/** `signal`: aborts when the command stops waiting (Ctrl-C, or its connection to the socket closed). */
export type AdminOperation = (root: CompositionRoot, args: AdminArgs, signal?: AbortSignal) => Promise<unknown>;

/** A text argument; InvalidInput when it is missing or not text (only a client other than ours sends that). */
export function textArg(args: AdminArgs, name: string): string {
  const value = args[name];
  if (typeof value !== "string") throw new InvalidInput(`Falta el argumento '${name}'`);
  return value;
}

/** A list of texts. */
export function textListArg(args: AdminArgs, name: string): string[] {
  const value = args[name];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    throw new InvalidInput(`El argumento '${name}' debe ser una lista de textos`);
  }
  return value;
}
