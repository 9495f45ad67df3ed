import type { SearchEvent } from "../../../domain/search-and-recommend.ts";
import { toProblem } from "../core/errors.ts";

/** A comment line sent on a quiet stream, so proxies do not close it. */
export const HEARTBEAT_MS = 15_000;

/** Does the client ask for server-sent events? */
export function wantsEventStream(request: Request): boolean {
  return (request.headers.get("accept") ?? "").toLowerCase().includes("text/event-stream");
}

/** One server-sent event: a name and a JSON payload. */
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The wire form of each search event (snake_case fields, as the JSON answer). */
export function searchFrame(event: SearchEvent, view: (results: SearchEvent & { type: "results" }) => unknown): string {
  switch (event.type) {
    case "results":
      return frame("results", view(event));
    case "delta":
      return frame("delta", { text: event.text });
    case "reset":
      return frame("reset", {});
    case "done":
      return frame("done", {
        recommendation: event.recommendation,
        cited_ids: event.citedIds,
        provider: event.writer?.provider ?? null,
        model: event.writer?.model ?? null,
        position: event.writer?.position ?? null,
      });
  }
}

/**
 * Answers a search as server-sent events. The first event is awaited before answering, so that a
 * search that fails before any result (bad input, the embedder or the database down) gets its
 * ordinary JSON error instead of a stream. A failure after that ends the stream with an `error`
 * event `{"detail", "status"}`. When the client goes away, `abort` is called: the model's request
 * is cancelled.
 */
export async function searchEventStream(
  events: AsyncGenerator<SearchEvent>,
  abort: () => void,
  view: (results: SearchEvent & { type: "results" }) => unknown,
  headers: Record<string, string>,
): Promise<Response> {
  const first = await events.next();
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
      if (!first.done) send(searchFrame(first.value, view));
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
        send(searchFrame(next.value, view));
      } catch (error) {
        const problem = toProblem(error);
        send(frame("error", { detail: problem.detail, status: problem.status }));
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
      ...headers,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      // nginx and similar proxies buffer responses unless told not to.
      "X-Accel-Buffering": "no",
    },
  });
}
