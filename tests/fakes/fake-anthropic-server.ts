/**
 * Anthropic's Messages API wire format for FakeProviderServer: a handler that answers
 * `POST /v1/messages`, and the replies (errors, refusals, odd bodies) tests script with `enqueue`.
 */
import {
  inPieces,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
  type StreamEnd,
  sseEvent,
} from "./fake-provider-server.ts";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

export interface AnthropicHandlerOptions {
  /** The text the model "writes" (default: a fixed Spanish sentence naming the first product). */
  text?: (request: RecordedRequest) => string;
  /** When set, a request whose `x-api-key` differs gets a 401, as the real API answers. */
  apiKey?: string;
}

let messageCount = 0;

/** A Messages API answer: `content` as given (text blocks unless told otherwise). */
export function anthropicMessage(
  content: readonly unknown[],
  options: { model?: string; stopReason?: string | null; stopDetails?: unknown } = {},
): Record<string, unknown> {
  messageCount++;
  return {
    id: `msg_fake_${messageCount}`,
    type: "message",
    role: "assistant",
    model: options.model ?? "claude-fake",
    content,
    stop_reason: options.stopReason === undefined ? "end_turn" : options.stopReason,
    stop_sequence: null,
    ...(options.stopDetails === undefined ? {} : { stop_details: options.stopDetails }),
    usage: { input_tokens: 120, output_tokens: 40 },
  };
}

/** A successful answer made of one text block per string. */
export function anthropicText(...texts: string[]): Reply {
  return { json: anthropicMessage(texts.map((text) => ({ type: "text", text }))) };
}

/** An error in Anthropic's shape; `headers` for e.g. `retry-after`. */
export function anthropicError(
  status: number,
  type: AnthropicErrorType,
  message = type.replaceAll("_", " "),
  headers: Record<string, string> = {},
): Reply {
  return {
    json: { type: "error", error: { type, message }, request_id: "req_fake" },
    status,
    headers: { "request-id": "req_fake", ...headers },
  };
}

/** 429 with Retry-After in seconds. */
export function anthropicRateLimited(retryAfterSeconds: number): Reply {
  return anthropicError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", {
    "retry-after": String(retryAfterSeconds),
  });
}

/** Anthropic's own overload status, 529. */
export function anthropicOverloaded(): Reply {
  return anthropicError(529, "overloaded_error", "Overloaded");
}

/** The model declined: stop_reason "refusal", no text (or a partial one). */
export function anthropicRefusal(partialText?: string): Reply {
  const content = partialText === undefined ? [] : [{ type: "text", text: partialText }];
  return {
    json: anthropicMessage(content, {
      stopReason: "refusal",
      stopDetails: { type: "refusal", category: "general_harms", explanation: null },
    }),
  };
}

/** A 200 whose `content` is empty. */
export function anthropicEmptyContent(): Reply {
  return { json: anthropicMessage([]) };
}

/** A 200 with content blocks but none of type text. */
export function anthropicNoTextBlock(): Reply {
  return { json: anthropicMessage([{ type: "thinking", thinking: "hmm", signature: "sig" }]) };
}

/** A 200 whose body is not JSON. */
export function anthropicMalformed(): Reply {
  return { raw: '{"id":"msg_fake","type":"message","content":[{"type":"te' };
}

/** Answers `POST /v1/messages` with a text message for the requested model; anything else is a 404. */
export function anthropicHandler(options: AnthropicHandlerOptions = {}): ReplyHandler {
  return (request) => {
    if (request.method !== "POST" || request.path.split("?")[0] !== "/v1/messages") {
      return anthropicError(404, "not_found_error", `no route ${request.method} ${request.path}`);
    }
    if (options.apiKey !== undefined && request.headers.get("x-api-key") !== options.apiKey) {
      return anthropicError(401, "authentication_error", "invalid x-api-key");
    }
    const body = request.body as { model?: unknown; stream?: unknown } | undefined;
    const model = typeof body?.model === "string" ? body.model : "claude-fake";
    const text = options.text?.(request) ?? "Le recomiendo la cafetera: es la que mejor encaja con lo que busca.";
    if (body?.stream === true) return anthropicStream(inPieces(text), { model });
    return { json: anthropicMessage([{ type: "text", text }], { model }) };
  };
}

export interface AnthropicStreamOptions {
  model?: string;
  /** message_delta's stop_reason (default "end_turn"); "refusal" comes with stop_details. */
  stopReason?: string;
  /** An `event: error` after the pieces, in place of the end: how the API reports a failure mid-stream. */
  error?: AnthropicErrorType;
  /** The stream ends (as `end` says) only once this settles: see the Reply of FakeProviderServer. */
  endAfter?: Promise<unknown>;
  /** "close" (default): the stop events, then the end. "cut" or "hang": after the pieces, the connection is cut or left open. */
  end?: StreamEnd;
}

/**
 * A streamed message (`stream: true`) as the Messages API sends it: message_start, a text block
 * (content_block_start, a ping, one content_block_delta per piece, content_block_stop),
 * message_delta with the stop reason, message_stop.
 */
export function anthropicStream(pieces: readonly string[], options: AnthropicStreamOptions = {}): Reply {
  const event = (type: string, data: Record<string, unknown>) => sseEvent({ type, ...data }, type);
  const started = anthropicMessage([], { model: options.model ?? "claude-fake", stopReason: null });
  const events = [
    event("message_start", { message: { ...started, usage: { input_tokens: 120, output_tokens: 1 } } }),
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    event("ping", {}),
    ...pieces.map((text) => event("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  ];
  const end = options.end ?? "close";
  if (options.error) {
    events.push(sseEvent({ type: "error", error: { type: options.error, message: "Overloaded" } }, "error"));
  } else if (end === "close") {
    const stopReason = options.stopReason ?? "end_turn";
    const stopDetails =
      stopReason === "refusal" ? { type: "refusal", category: "general_harms", explanation: null } : null;
    events.push(
      event("content_block_stop", { index: 0 }),
      event("message_delta", {
        delta: { stop_reason: stopReason, stop_sequence: null, stop_details: stopDetails, container: null },
        usage: { output_tokens: 40 },
      }),
      event("message_stop", {}),
    );
  }
  return { events, end, ...(options.endAfter === undefined ? {} : { endAfter: options.endAfter }) };
}
