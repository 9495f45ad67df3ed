/**
 * A small HTTP server on 127.0.0.1 that stands in for a model provider, so the real SDKs can be
 * tested without the internet. Each provider's test gives it a handler that answers that provider's
 * wire format; `enqueue` scripts the next replies (errors, hangs, malformed bodies) ahead of it.
 */

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. "/v1/embeddings". */
  path: string;
  headers: Headers;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: unknown;
  rawBody: string;
  /** Settles when the client closes the connection before the answer is over (e.g. an aborted request). */
  clientGone: Promise<void>;
}

/** How a streamed answer ends: normally, with its connection cut mid-answer, or never (open until the client leaves). */
export type StreamEnd = "close" | "cut" | "hang";

export type Reply =
  /** A JSON answer (status 200 unless given). */
  | { json: unknown; status?: number; headers?: Record<string, string> }
  /** Any body as it is, e.g. malformed JSON. */
  | { raw: string; status?: number; headers?: Record<string, string> }
  /** No answer at all until the client gives up (a timeout). */
  | { hang: true }
  /**
   * A `text/event-stream` answer written one server-sent event at a time (each string a whole
   * event, its blank line included); then it ends as `end` says (default close), once `endAfter`
   * has settled when given. A cut connection may drop what the client had not read yet (a loaded
   * machine reads late), so a test that wants its client to see the pieces before the cut lets
   * the end come once the client has read them, never after a guessed delay.
   */
  | {
      events: readonly string[];
      end?: StreamEnd;
      endAfter?: Promise<unknown>;
      status?: number;
      headers?: Record<string, string>;
    };

export type ReplyHandler = (request: RecordedRequest) => Reply | Promise<Reply>;

export class FakeProviderServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  private readonly scripted: Reply[] = [];
  private readonly arrivals = new Set<() => void>();
  /** While set, answers wait for it (holdAnswers). */
  private held: Promise<void> | undefined;

  private constructor(
    private readonly server: ReturnType<typeof Bun.serve>,
    private readonly handler: ReplyHandler,
  ) {}

  static start(handler: ReplyHandler): FakeProviderServer {
    let fake: FakeProviderServer | undefined;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: (request) => (fake as FakeProviderServer).answer(request),
    });
    fake = new FakeProviderServer(server, handler);
    return fake;
  }

  /** The server's origin, e.g. "http://127.0.0.1:41234". */
  get url(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** The next requests get these replies, in order, before the handler answers again. */
  enqueue(...replies: Reply[]): this {
    this.scripted.push(...replies);
    return this;
  }

  /** Resolves once `count` requests have arrived (since the last reset): what a test waits for instead of a guessed time. */
  received(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.requests.length < count) return;
        this.arrivals.delete(check);
        resolve();
      };
      this.arrivals.add(check);
    });
  }

  /**
   * From now on every request is recorded but answered only once the returned function is called:
   * a test sees which requests a client has in flight at once.
   */
  holdAnswers(): () => void {
    let release = () => {};
    this.held = new Promise<void>((resolve) => {
      release = () => {
        this.held = undefined;
        resolve();
      };
    });
    return release;
  }

  /** The requests whose path contains `fragment`. */
  requestsTo(fragment: string): RecordedRequest[] {
    return this.requests.filter((request) => request.path.includes(fragment));
  }

  reset(): void {
    this.requests.length = 0;
    this.scripted.length = 0;
  }

  async stop(): Promise<void> {
    await this.server.stop(true);
  }

  private async answer(request: Request): Promise<Response> {
    const rawBody = await request.text();
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const url = new URL(request.url);
    const recorded: RecordedRequest = {
      method: request.method,
      path: url.pathname + url.search,
      headers: request.headers,
      body,
      rawBody,
      clientGone: new Promise<void>((resolve) => request.signal.addEventListener("abort", () => resolve())),
    };
    this.requests.push(recorded);
    for (const arrived of [...this.arrivals]) arrived();
    await this.held;
    const reply = this.scripted.shift() ?? (await this.handler(recorded));
    if ("hang" in reply) {
      return new Promise<Response>((resolve) => {
        request.signal.addEventListener("abort", () => resolve(new Response(null, { status: 499 })), { once: true });
      });
    }
    if ("events" in reply) {
      return new Response(eventStream(reply.events, reply.end ?? "close", reply.endAfter), {
        status: reply.status ?? 200,
        headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers },
      });
    }
    const headers = { "content-type": "application/json", ...reply.headers };
    const text = "json" in reply ? JSON.stringify(reply.json) : reply.raw;
    return new Response(text, { status: reply.status ?? 200, headers });
  }
}

/** The body of a streamed reply; it stops writing once the client has gone. */
function eventStream(
  events: readonly string[],
  end: StreamEnd,
  endAfter: Promise<unknown> | undefined,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let gone = false;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const event of events) controller.enqueue(encoder.encode(event));
      await endAfter;
      if (gone) return;
      if (end === "close") controller.close();
      // Erroring the body makes Bun close the socket with the chunked answer unfinished; an
      // `undefined` reason keeps it from printing a stack trace.
      else if (end === "cut") controller.error(undefined);
    },
    cancel() {
      gone = true;
    },
  });
}

/** `text` cut after each run of spaces ("a b" → ["a ", "b"]), the way models stream words. */
export function inPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === "" ? [] : [text]);
}

/** One server-sent event: an optional `event:` line, one `data:` line, a blank line. */
export function sseEvent(data: unknown, event?: string): string {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  return `${event === undefined ? "" : `event: ${event}\n`}data: ${payload}\n\n`;
}
