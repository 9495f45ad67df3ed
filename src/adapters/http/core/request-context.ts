import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { Elysia } from "elysia";
import { DeadlineExceeded } from "../../../domain/errors.ts";

/** One request while it is served, from the moment it arrives (`inRequestScope`). */
interface RequestScope {
  /** The client's X-Request-Id when it is usable, else one made here; sent back and on every log line. */
  requestId: string;
  startedAt: number;
  /** performance.now() at which the time budget is spent. */
  deadlineAt: number;
  /** Aborts with DeadlineExceeded once the request's time budget is spent. */
  deadline: AbortController;
  timer: ReturnType<typeof setTimeout>;
  /** Who is served, once the route has checked the token (read-your-writes keys on it). */
  caller?: string;
  /** The catalogue the request works in, once the route has checked it (on every log line after that). */
  catalogue?: string;
  /** The WAL position the client's X-Read-After asks its reads to see. */
  readAfter?: string;
  /** The WAL position of the request's last committed write, sent back as X-Read-After. */
  wroteAt?: string;
}

/**
 * The request being served. AsyncLocalStorage follows every await and timer begun while serving
 * it, so it reaches what Elysia's context cannot: a log line written deep inside a use case (a
 * provider retry, a generator fallback) gets the request's id from here, and so do the app's
 * hooks that run for requests no route matched (404, 405). Handlers get it from Elysia's context
 * (`requestContext`).
 */
const scope = new AsyncLocalStorage<RequestScope>();

/** 1 to 128 characters that are safe in a header and a log line: letters, digits and `-_.:+=/@~`. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9_.:+=/@~-]{1,128}$/;

/** The client's (or proxy's) X-Request-Id when it is usable; otherwise a new UUID. */
export function requestIdFrom(header: string | null): string {
  const candidate = header?.trim();
  return candidate !== undefined && CLIENT_REQUEST_ID.test(candidate) ? candidate : randomUUID();
}

/**
 * Serves a request inside its scope (the app's `.wrap`): its id, and its clock, whose deadline
 * aborts with DeadlineExceeded after `timeoutMs`.
 */
export function inRequestScope<T>(request: Request, timeoutMs: number, serve: () => T): T {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineExceeded()), timeoutMs);
  timer.unref();
  const requestId = requestIdFrom(request.headers.get("x-request-id"));
  const startedAt = performance.now();
  return scope.run({ requestId, startedAt, deadlineAt: startedAt + timeoutMs, deadline, timer }, serve);
}

/**
 * `{requestId}` of the request being served, and `catalogue` once its route has checked it; nothing
 * outside one: the logger adds them to each line.
 */
export function requestLogFields(): { requestId?: string; catalogue?: string } {
  const current = scope.getStore();
  if (!current) return {};
  return current.catalogue === undefined
    ? { requestId: current.requestId }
    : { requestId: current.requestId, catalogue: current.catalogue };
}

/** The id of the request being served (the app's onRequest sends it back as X-Request-Id). */
export function currentRequestId(): string | undefined {
  return scope.getStore()?.requestId;
}

/** Records who the request being served is for (the auth macro, once the token is checked). */
export function rememberRequestCaller(caller: string): void {
  const current = scope.getStore();
  if (current) current.caller = caller;
}

/** Records the catalogue the request being served works in (the auth macro, once it has checked it). */
export function rememberRequestCatalogue(catalogue: string): void {
  const current = scope.getStore();
  if (current) current.catalogue = catalogue;
}

/** Records the position the request's X-Read-After asks its reads to see (app.ts checks it first). */
export function rememberReadAfter(position: string): void {
  const current = scope.getStore();
  if (current) current.readAfter = position;
}

/**
 * What read-your-writes needs of the request being served (composition root → the database
 * adapter's readYourWrites): who it is for, the position it asks to see, and where its writes
 * commit. Undefined outside a request.
 */
export function currentRequestConsistency():
  | { caller?: string; readAfter?: string; wrote(position: string): void }
  | undefined {
  const current = scope.getStore();
  if (!current) return undefined;
  return {
    caller: current.caller,
    readAfter: current.readAfter,
    wrote(position: string) {
      current.wroteAt = position;
    },
  };
}

/** The WAL position of the request's last committed write, for its answer's X-Read-After; undefined when it wrote nothing. */
export function requestWroteAt(): string | undefined {
  return scope.getStore()?.wroteAt;
}

/** Stops the request's clock once it is answered: its id and milliseconds, for its log line. */
export function endRequest(): { requestId: string; ms: number } | undefined {
  const current = scope.getStore();
  if (!current) return undefined;
  clearTimeout(current.timer);
  return { requestId: current.requestId, ms: Math.round((performance.now() - current.startedAt) * 10) / 10 };
}

/**
 * What every handler may take from Elysia's context: `requestId`; `signal`, which aborts when the
 * request's time budget is spent (reason: DeadlineExceeded) or its client goes away: use cases
 * stop working for it, provider requests are cancelled, nothing more is stored; and `timeLeftMs()`,
 * what is left of the budget (the bulk import hands its work over to a job before it runs out).
 */
export const requestContext = new Elysia({ name: "request-context" }).derive({ as: "scoped" }, ({ request }) => {
  const current = scope.getStore();
  if (!current) throw new Error("no request scope: the app's .wrap begins one for every request");
  return {
    requestId: current.requestId,
    signal: AbortSignal.any([current.deadline.signal, request.signal]),
    timeLeftMs: () => Math.max(0, current.deadlineAt - performance.now()),
  };
});
