import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { DeadlineExceeded } from "../../domain/errors.ts";
import type { User } from "../../domain/user.ts";

/** What the app keeps about one request while serving it. */
export interface RequestContext {
  /**
   * Aborts when the request's time budget is spent (reason: DeadlineExceeded) or its client goes
   * away: use cases stop working for it, provider requests are cancelled, nothing more is stored.
   */
  signal: AbortSignal;
  startedAt: number;
  /** The client's X-Request-Id when it is usable, else one made here; sent back and on every log line. */
  requestId: string;
  /** The bearer token's user, once the route has checked it. */
  user?: User;
}

const contexts = new WeakMap<Request, RequestContext & { timer: ReturnType<typeof setTimeout> }>();

/**
 * The request being served, for whatever runs on its behalf however deep (a provider retry, a
 * generator fallback): AsyncLocalStorage follows every await and timer begun while serving it.
 */
const scope = new AsyncLocalStorage<{ requestId: string }>();

/** 1 to 128 characters that are safe in a header and a log line: letters, digits and `-_.:+=/@~`. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9_.:+=/@~-]{1,128}$/;

/** The client's (or proxy's) X-Request-Id when it is usable; otherwise a new UUID. */
export function requestIdFrom(header: string | null): string {
  const candidate = header?.trim();
  return candidate !== undefined && CLIENT_REQUEST_ID.test(candidate) ? candidate : randomUUID();
}

/** Runs `serve` inside the request's scope, whose id every log line written meanwhile carries. */
export function inRequestScope<T>(request: Request, serve: () => T): T {
  return scope.run({ requestId: requestIdFrom(request.headers.get("x-request-id")) }, serve);
}

/** `{requestId}` of the request being served, or nothing outside one: the logger adds it to each line. */
export function requestLogFields(): { requestId?: string } {
  const store = scope.getStore();
  return store ? { requestId: store.requestId } : {};
}

/** Starts the request's clock: its signal aborts with DeadlineExceeded after `timeoutMs`. */
export function beginRequest(request: Request, timeoutMs: number): RequestContext {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineExceeded()), timeoutMs);
  timer.unref();
  const context = {
    signal: AbortSignal.any([deadline.signal, request.signal]),
    startedAt: performance.now(),
    requestId: scope.getStore()?.requestId ?? requestIdFrom(request.headers.get("x-request-id")),
    timer,
  };
  contexts.set(request, context);
  return context;
}

/** The request's context (begun by the app for every request it sees). */
export function contextOf(request: Request): RequestContext {
  const context = contexts.get(request);
  if (!context) throw new Error("no context for this request: beginRequest was not called");
  return context;
}

/** Stops the request's clock once it is answered; returns its context (undefined if it was never begun). */
export function endRequest(request: Request): RequestContext | undefined {
  const context = contexts.get(request);
  if (context) clearTimeout(context.timer);
  return context;
}
