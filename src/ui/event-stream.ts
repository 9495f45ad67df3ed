/**
 * Server-sent events read from a fetch response's body (EventSource cannot POST a search nor send
 * the token), parsed as the HTML standard says: lines end in CR, LF or CRLF; `event:` names the
 * event, `data:` lines are joined with LF, a blank line dispatches, comment lines (`:`, the
 * service's heartbeats) and other fields are ignored, one space after the colon is dropped, and an
 * event left without its blank line when the stream ends is discarded.
 */

export interface ServerEvent {
  /** `message` when the event names none. */
  event: string;
  data: string;
}

/** The events of `body` as they arrive; returning early (break) cancels the stream. */
export async function* serverEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new EventParser();
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** The parser itself: text in, complete events out. */
export class EventParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];

  push(text: string): ServerEvent[] {
    this.buffer += text;
    const events: ServerEvent[] = [];
    for (;;) {
      const end = /\r\n|\r|\n/.exec(this.buffer);
      if (!end) break;
      // A CR at the very end may be the first half of a CRLF: wait for the next piece.
      if (end[0] === "\r" && end.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, end.index);
      this.buffer = this.buffer.slice(end.index + end[0].length);
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  private line(line: string): ServerEvent | undefined {
    if (line === "") {
      const event = this.data.length > 0 ? { event: this.event || "message", data: this.data.join("\n") } : undefined;
      this.event = "";
      this.data = [];
      return event;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    return undefined;
  }
}
