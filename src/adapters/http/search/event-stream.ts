import type { SearchEvent } from "../../../domain/search-and-recommend.ts";
import { toProblem } from "../core/errors.ts";

/** A comment line sent on a quiet stream, so proxies do not close it. */
export const HEARTBEAT_MS = 15_000;

/**
 * The `retry:` the stream begins with: how long a client waits before it reconnects, in ms (the
 * browsers' own default is about 3 s). EventSource reconnects whenever a stream ends, even after
 * its last event; that reconnect gets 204 (`endsStream`) and stops it.
 */
export const RECONNECT_MS = 3_000;

/**
 * The name of the event that ends a stream which failed after its results. Not `error`: EventSource
 * fires its own `error` event on a connection failure, and a listener could not tell them apart.
 */
export const FAILURE_EVENT = "failure";

/** The last part of the id of a stream's last event (`done` or `failure`). */
const END_OF_STREAM = "end";

/** Does the client ask for server-sent events? */
export function wantsEventStream(request: Request): boolean {
  return (request.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
}

/**
 * Is this Last-Event-ID the id of a stream's last event? Then the stream it reconnects to has
 * ended: nothing more will come (204). Any other id is of a stream cut before its end, whose
 * search runs again from its start (no stream is kept to resume from).
 */
export function endsStream(lastEventId: string | null): boolean {
  return lastEventId?.endsWith(`:${END_OF_STREAM}`) ?? false;
}

/** One server-sent event: its id, its name and a JSON payload. */
function frame(id: string, event: string, data: unknown): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The name and the payload (snake_case fields, as the JSON answer) of each search event. */
function searchPayload(
  event: SearchEvent,
  view: (results: SearchEvent & { type: "results" }) => unknown,
): [name: string, data: unknown] {
  switch (event.type) {
    case "results":
      return ["results", view(event)];
    case "delta":
      return ["delta", { text: event.text }];
    case "reset":
      return ["reset", {}];
    case "done":
      return [
        "done",
        {
          search_id: event.searchId,
          recommendation: event.recommendation,
          cited_ids: event.citedIds,
          provider: event.writer?.provider ?? null,
          model: event.writer?.model ?? null,
          position: event.writer?.position ?? null,
        },
      ];
  }
}

/**
 * The ids of one stream's events: `<stream>:1`, `<stream>:2`, ... and `<stream>:end` for its last
 * (`done`, or the failure event), which is what a reconnect after the end carries.
 */
export function eventIds(streamId: string) {
  let sent = 0;
  return { next: () => `${streamId}:${++sent}`, last: () => `${streamId}:${END_OF_STREAM}` };
}

/** The wire form of each search event, with its id (`eventIds`). */
export function searchFrame(
  event: SearchEvent,
  view: (results: SearchEvent & { type: "results" }) => unknown,
  ids: ReturnType<typeof eventIds>,
): string {
  const [name, data] = searchPayload(event, view);
  return frame(event.type === "done" ? ids.last() : ids.next(), name, data);
}

export interface EventStreamOptions {
  /** Names the stream in its events' ids: the request's id, which its log lines carry too. */
  streamId: string;
  /** The stream's `retry:`, in ms. */
  reconnectMs: number;
  /** Called when the client goes away: the model's request is cancelled. */
  abort: () => void;
  view: (results: SearchEvent & { type: "results" }) => unknown;
}

/**
 * Answers a search as server-sent events. The first event is awaited before answering, so that a
 * search that fails before any result (bad input, the embedder or the database down) gets its
 * ordinary JSON error instead of a stream. The stream begins with `retry:`; each event has an id
 * (`eventIds`); a failure after the results ends it with a FAILURE_EVENT `{"detail", "status"}`.
 */
export async function searchEventStream(
  events: AsyncGenerator<SearchEvent>,
  { streamId, reconnectMs, abort, view }: EventStreamOptions,
): Promise<Response> {
  const first = await events.next();
  const ids = eventIds(streamId);
  const encoder = new TextEncoder();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(heartbeat);
    heartbeat = undefined;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      heartbeat = setInterval(() => send(": heartbeat\n\n"), HEARTBEAT_MS);
      send(`retry: ${reconnectMs}\n\n`);
      if (!first.done) send(searchFrame(first.value, view, ids));
    },
    async pull(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      try {
        const next = await events.next();
        if (next.done) {
          stop();
          controller.close();
          return;
        }
        send(searchFrame(next.value, view, ids));
      } catch (error) {
        const problem = toProblem(error);
        send(frame(ids.last(), FAILURE_EVENT, { detail: problem.detail, status: problem.status }));
        stop();
        controller.close();
      }
    },
    cancel() {
      stop();
      abort();
      void events.return(undefined).catch(() => {});
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      // nginx and similar proxies buffer responses unless told not to.
      "X-Accel-Buffering": "no",
    },
  });
}
