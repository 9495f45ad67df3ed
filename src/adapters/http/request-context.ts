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
  /** The bearer token's user, once the route has checked it. */
  user?: User;
}

const contexts = new WeakMap<Request, RequestContext & { timer: ReturnType<typeof setTimeout> }>();

/** Starts the request's clock: its signal aborts with DeadlineExceeded after `timeoutMs`. */
export function beginRequest(request: Request, timeoutMs: number): RequestContext {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineExceeded()), timeoutMs);
  timer.unref();
  const context = { signal: AbortSignal.any([deadline.signal, request.signal]), startedAt: performance.now(), timer };
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
