/**
 * OpenAI's wire format for FakeProviderServer: `/v1/embeddings` and `/v1/chat/completions` answer
 * like the real API, and the helpers build the error, refusal and odd replies the tests script.
 */
import { bagOfWords } from "./fake-embedder.ts";
import {
  FakeProviderServer,
  inPieces,
  type RecordedRequest,
  type Reply,
  type StreamEnd,
  sseEvent,
} from "./fake-provider-server.ts";

export const FAKE_OPENAI_DEFAULT_DIMENSION = 3072;
export const FAKE_OPENAI_REPLY_TEXT = "Le recomiendo la cafetera espresso: es lo más parecido a lo que busca.";

interface EmbeddingsBody {
  model?: string;
  input?: string | string[];
  dimensions?: number;
  encoding_format?: "float" | "base64";
}

interface ChatBody {
  model?: string;
  stream?: boolean;
}

/**
 * Answers OpenAI's endpoints: bag-of-words vectors of the requested `dimensions` (as JSON numbers, or
 * as OpenAI's base64 of little-endian float32 when `encoding_format` asks for it), and a fixed chat text.
 */
export function openAIHandler(request: RecordedRequest): Reply {
  if (request.method === "POST" && request.path === "/v1/embeddings") {
    const body = (request.body ?? {}) as EmbeddingsBody;
    const inputs = typeof body.input === "string" ? [body.input] : (body.input ?? []);
    const dimension = body.dimensions ?? FAKE_OPENAI_DEFAULT_DIMENSION;
    const vectors = inputs.map((text) => bagOfWords(text, dimension));
    return embeddingsReply(body.encoding_format === "base64" ? vectors.map(asBase64) : vectors, body.model);
  }
  if (request.method === "POST" && request.path === "/v1/chat/completions") {
    const body = request.body as ChatBody | undefined;
    if (body?.stream === true) return chatStreamReply(inPieces(FAKE_OPENAI_REPLY_TEXT), { model: body.model });
    return chatReply(FAKE_OPENAI_REPLY_TEXT, { model: body?.model });
  }
  return openAIError(404, `Invalid URL (${request.method} ${request.path})`, "invalid_request_error");
}

export function startFakeOpenAIServer(): FakeProviderServer {
  return FakeProviderServer.start(openAIHandler);
}

/** A vector as OpenAI sends it when asked for base64: its float32 values, little-endian, in base64. */
export function asBase64(vector: readonly number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString("base64");
}

/** An embeddings list; `order` gives the positions in the order they are listed (default: in order). */
export function embeddingsReply(
  vectors: readonly (number[] | string)[],
  model = "text-embedding-3-large",
  order: readonly number[] = vectors.map((_, i) => i),
): Reply {
  return {
    json: {
      object: "list",
      data: order.map((index) => ({ object: "embedding", index, embedding: vectors[index] })),
      model,
      usage: { prompt_tokens: vectors.length, total_tokens: vectors.length },
    },
  };
}

/** An embeddings answer whose `data` items are given as they are (odd indexes, strings for vectors...). */
export function rawEmbeddingsReply(data: unknown[]): Reply {
  return {
    json: { object: "list", data, model: "text-embedding-3-large", usage: { prompt_tokens: 1, total_tokens: 1 } },
  };
}

export interface ChatReplyOptions {
  model?: string | undefined;
  finishReason?: "stop" | "length" | "content_filter";
  refusal?: string | null;
}

/** A chat.completion object with one choice; `content` null is allowed (refusals have none). */
export function chatReply(content: string | null, options: ChatReplyOptions = {}): Reply {
  return {
    json: {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model: options.model ?? "gpt-4.1-mini",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content, refusal: options.refusal ?? null },
          logprobs: null,
          finish_reason: options.finishReason ?? "stop",
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
    },
  };
}

/** What OpenAI answers when the model refuses: no content, the reason in `refusal`. */
export function refusalReply(refusal = "I'm sorry, I can't help with that."): Reply {
  return chatReply(null, { refusal });
}

/** A chat.completion with no choices at all. */
export function noChoicesReply(): Reply {
  return {
    json: {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "gpt-4.1-mini",
      choices: [],
    },
  };
}

/** OpenAI's error body, e.g. 401 invalid_api_key, 429 rate_limit_exceeded (with Retry-After). */
export function openAIError(
  status: number,
  message: string,
  type = "invalid_request_error",
  options: { code?: string | null; headers?: Record<string, string> } = {},
): Reply {
  return {
    json: { error: { message, type, param: null, code: options.code ?? null } },
    status,
    ...(options.headers ? { headers: options.headers } : {}),
  };
}

/** A 429 that asks the client to wait `retryAfterSeconds`. */
export function rateLimited(retryAfterSeconds: number): Reply {
  return openAIError(429, "Rate limit reached for requests", "requests", {
    code: "rate_limit_exceeded",
    headers: { "retry-after": String(retryAfterSeconds) },
  });
}

export function serverError(): Reply {
  return openAIError(500, "The server had an error while processing your request.", "server_error");
}

/** A 200 whose body is not JSON at all. */
export function malformedJson(): Reply {
  return { raw: '{"object": "list", "data": [', status: 200 };
}

export interface ChatStreamOptions {
  model?: string | undefined;
  /** The last chunk's finish_reason (default "stop"); null sends no finish chunk, only `[DONE]`. */
  finishReason?: "stop" | "length" | "content_filter" | null;
  /** Pieces of a refusal, streamed in `delta.refusal` after the content pieces. */
  refusal?: readonly string[];
  /** An error event after the pieces, in place of the finish: how OpenAI reports a failure mid-stream. */
  error?: { message: string; type: string };
  /** The stream ends (as `end` says) only once this settles: see the Reply of FakeProviderServer. */
  endAfter?: Promise<unknown>;
  /**
   * "close" (default): the finish chunk and `data: [DONE]`, then the end. "cut" or "hang": after
   * the pieces, the connection is cut or left open, with no finish.
   */
  end?: StreamEnd;
}

/**
 * A streamed chat completion (`stream: true`) as OpenAI sends it: `data: {chat.completion.chunk}`
 * events (the role first, then one per piece, then the finish_reason) and `data: [DONE]`.
 */
export function chatStreamReply(pieces: readonly string[], options: ChatStreamOptions = {}): Reply {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    sseEvent({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: options.model ?? "gpt-4.1-mini",
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
  const events = [
    chunk({ role: "assistant", content: "", refusal: null }),
    ...pieces.map((content) => chunk({ content })),
    ...(options.refusal ?? []).map((refusal) => chunk({ refusal })),
  ];
  const end = options.end ?? "close";
  if (options.error) {
    events.push(sseEvent({ error: { ...options.error, param: null, code: null } }));
  } else if (end === "close") {
    if (options.finishReason !== null) events.push(chunk({}, options.finishReason ?? "stop"));
    events.push(sseEvent("[DONE]"));
  }
  return { events, end, ...(options.endAfter === undefined ? {} : { endAfter: options.endAfter }) };
}
