/**
 * The Gemini API's wire format for FakeProviderServer: `googleHandler()` answers embeddings and
 * generation like the real service, and the helpers build the error, blocked and odd replies that
 * tests enqueue ahead of it.
 */
import { bagOfWords } from "./fake-embedder.ts";
import {
  inPieces,
  type RecordedRequest,
  type Reply,
  type ReplyHandler,
  type StreamEnd,
  sseEvent,
} from "./fake-provider-server.ts";

/** The text the fake model answers with unless told otherwise. */
export const FAKE_GOOGLE_TEXT = "Le recomiendo la cafetera espresso: es la que mejor encaja con su consulta.";

/** The dimension of a fake embedding when the request names none (gemini-embedding-001's default). */
const DEFAULT_DIMENSION = 3072;

/** One `requests[]` item of batchEmbedContents, or the whole body of embedContent. */
interface EmbedRequest {
  content?: { parts?: { text?: string }[] };
  taskType?: string;
  outputDimensionality?: number;
}

export interface GoogleHandlerOptions {
  /** The generated text (default FAKE_GOOGLE_TEXT). */
  text?: string;
}

/**
 * Answers `POST /v1beta/models/<model>:batchEmbedContents` (one bag-of-words vector per request item,
 * of its outputDimensionality), `:embedContent`, `:generateContent` and
 * `:streamGenerateContent?alt=sse`; anything else is a 404 in the API's error shape.
 */
export function googleHandler(options: GoogleHandlerOptions = {}): ReplyHandler {
  return (request: RecordedRequest): Reply => {
    const path = new URL(request.path, "http://fake").pathname;
    const method = /^\/v1beta\/models\/([^/:]+):(\w+)$/.exec(path);
    if (request.method !== "POST" || !method) return googleError(404, "NOT_FOUND", `no route for ${path}`);
    const [, model, action] = method;
    const body = (request.body ?? {}) as Record<string, unknown>;
    switch (action) {
      case "batchEmbedContents": {
        const items = (body.requests ?? []) as EmbedRequest[];
        return embeddingsReply(items.map(fakeVector));
      }
      case "embedContent":
        return { json: { embedding: { values: fakeVector(body as EmbedRequest) } } };
      case "generateContent":
        return generationReply(options.text ?? FAKE_GOOGLE_TEXT, { modelVersion: model });
      case "streamGenerateContent":
        return generationStreamReply(inPieces(options.text ?? FAKE_GOOGLE_TEXT), { modelVersion: model });
      default:
        return googleError(404, "NOT_FOUND", `unknown method ${action}`);
    }
  };
}

function fakeVector(item: EmbedRequest): number[] {
  const text = (item.content?.parts ?? []).map((part) => part.text ?? "").join(" ");
  return bagOfWords(text, item.outputDimensionality ?? DEFAULT_DIMENSION);
}

/** A batchEmbedContents answer with exactly these vectors (wrong counts and lengths included). */
export function embeddingsReply(vectors: readonly (readonly number[])[]): Reply {
  return { json: { embeddings: vectors.map((values) => ({ values })) } };
}

/** A generateContent answer whose first candidate says `text`. */
export function generationReply(
  text: string,
  { finishReason = "STOP", modelVersion = "gemini-2.5-flash-lite" } = {},
): Reply {
  return {
    json: {
      candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason, index: 0 }],
      usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150 },
      modelVersion,
      responseId: "fake-response",
    },
  };
}

/** The prompt itself was blocked: no candidates, only promptFeedback.blockReason. */
export function blockedPromptReply(blockReason = "SAFETY"): Reply {
  return {
    json: {
      promptFeedback: {
        blockReason,
        safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH", blocked: true }],
      },
      usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 },
      modelVersion: "gemini-2.5-flash-lite",
    },
  };
}

/** A candidate that stopped for `finishReason` without any text (its content has no parts). */
export function noTextReply(finishReason: string): Reply {
  return {
    json: {
      candidates: [{ content: { role: "model" }, finishReason, index: 0 }],
      usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 },
      modelVersion: "gemini-2.5-flash-lite",
    },
  };
}

/** An answer with no candidates and no block reason. */
export function noCandidatesReply(): Reply {
  return { json: { usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 } } };
}

/** An error in the API's shape, e.g. googleError(429, "RESOURCE_EXHAUSTED", ..., { "retry-after": "0.05" }). */
export function googleError(
  code: number,
  status: string,
  message = `fake ${status}`,
  headers: Record<string, string> = {},
): Reply {
  return { json: { error: { code, message, status } }, status: code, headers };
}

export interface GenerationStreamOptions {
  /** The last event's finishReason (default "STOP"); a safety reason comes with no text and its ratings. */
  finishReason?: string;
  modelVersion?: string;
  /** The prompt was blocked: one event with promptFeedback.blockReason and nothing else. */
  blockReason?: string;
  /** An error event (`data: {"error": ...}`) after the pieces, in place of the finish. */
  error?: { code: number; status: string };
  /** The stream ends (as `end` says) only once this settles: see the Reply of FakeProviderServer. */
  endAfter?: Promise<unknown>;
  /** "close" (default): the finish event, then the end. "cut" or "hang": after the pieces, the connection is cut or left open. */
  end?: StreamEnd;
}

/**
 * A `:streamGenerateContent?alt=sse` answer as the Gemini API sends it: one `data:` event per
 * piece, each a partial GenerateContentResponse, the last one carrying the finishReason, every
 * event ended by a blank line in CRLF.
 */
export function generationStreamReply(pieces: readonly string[], options: GenerationStreamOptions = {}): Reply {
  const modelVersion = options.modelVersion ?? "gemini-2.5-flash-lite";
  const event = (candidate: Record<string, unknown>) =>
    geminiEvent({
      candidates: [{ ...candidate, index: 0 }],
      usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150 },
      modelVersion,
      responseId: "fake-response",
    });
  const end = options.end ?? "close";
  if (options.blockReason) {
    const blocked = geminiEvent({
      promptFeedback: {
        blockReason: options.blockReason,
        safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH", blocked: true }],
      },
      usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 },
      modelVersion,
    });
    return { events: [blocked], end };
  }
  const events = pieces.map((text) => event({ content: { role: "model", parts: [{ text }] } }));
  if (options.error) {
    events.push(geminiEvent({ error: { ...options.error, message: `fake ${options.error.status}` } }));
  } else if (end === "close") {
    const finishReason = options.finishReason ?? "STOP";
    events.push(
      finishReason === "STOP"
        ? event({ content: { role: "model", parts: [{ text: "" }] }, finishReason })
        : event({
            finishReason,
            safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH", blocked: true }],
          }),
    );
  }
  return { events, end, ...(options.endAfter === undefined ? {} : { endAfter: options.endAfter }) };
}

/** A `data:` event ended by a blank line in CRLF, as the Gemini API ends them. */
function geminiEvent(data: unknown): string {
  return sseEvent(data).replace(/\n\n$/, "\r\n\r\n");
}
