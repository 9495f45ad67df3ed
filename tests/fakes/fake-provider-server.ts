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
}

export type Reply =
  /** A JSON answer (status 200 unless given). */
  | { json: unknown; status?: number; headers?: Record<string, string> }
  /** Any body as it is, e.g. malformed JSON. */
  | { raw: string; status?: number; headers?: Record<string, string> }
  /** No answer at all until the client gives up (a timeout). */
  | { hang: true };

export type ReplyHandler = (request: RecordedRequest) => Reply | Promise<Reply>;

export class FakeProviderServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  private readonly scripted: Reply[] = [];

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
    };
    this.requests.push(recorded);
    const reply = this.scripted.shift() ?? (await this.handler(recorded));
    if ("hang" in reply) {
      return new Promise<Response>((resolve) => {
        request.signal.addEventListener("abort", () => resolve(new Response(null, { status: 499 })), { once: true });
      });
    }
    const headers = { "content-type": "application/json", ...reply.headers };
    const text = "json" in reply ? JSON.stringify(reply.json) : reply.raw;
    return new Response(text, { status: reply.status ?? 200, headers });
  }
}
