/** The page's reader of server-sent events, fed the way a network delivers them: in arbitrary pieces. */
import { describe, expect, test } from "bun:test";
import { EventParser, serverEvents } from "../../src/ui/event-stream.ts";

function streamOf(pieces: readonly (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(typeof piece === "string" ? encoder.encode(piece) : piece);
      controller.close();
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>) {
  const events = [];
  for await (const event of serverEvents(stream)) events.push(event);
  return events;
}

const WIRE =
  'event: results\ndata: {"query":"café","results":[]}\n\n' +
  ": heartbeat\n\n" +
  'event: delta\ndata: {"text":"Le recomiendo "}\n\n' +
  "event: reset\ndata: {}\n\n" +
  'event: done\ndata: {"recommendation":"[LOCAL - m] Hola"}\n\n';

const EXPECTED = [
  { event: "results", data: '{"query":"café","results":[]}' },
  { event: "delta", data: '{"text":"Le recomiendo "}' },
  { event: "reset", data: "{}" },
  { event: "done", data: '{"recommendation":"[LOCAL - m] Hola"}' },
];

describe("serverEvents", () => {
  test("reads the service's events and skips its heartbeats", async () => {
    expect(await collect(streamOf([WIRE]))).toEqual(EXPECTED);
  });

  test("gives the same events however the bytes are cut, even inside a UTF-8 character", async () => {
    const bytes = new TextEncoder().encode(WIRE);
    for (const size of [1, 2, 3, 7, 64]) {
      const pieces: Uint8Array[] = [];
      for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.slice(i, i + size));
      expect(await collect(streamOf(pieces))).toEqual(EXPECTED);
    }
  });

  test("CR, LF and CRLF line ends, a CRLF cut between pieces, several data lines, no space after the colon", async () => {
    const events = await collect(streamOf(["event:a\r", "\ndata:uno\r\ndata: dos\r\r", "data: tres\n\n"]));
    expect(events).toEqual([
      { event: "a", data: "uno\ndos" },
      { event: "message", data: "tres" },
    ]);
  });

  test("an event without its blank line when the stream ends is dropped", async () => {
    expect(await collect(streamOf(["event: done\ndata: {}\n"]))).toEqual([]);
  });

  test("leaving the loop early cancels the stream", async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("data: 1\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const event of serverEvents(stream)) {
      expect(event.data).toBe("1");
      break;
    }
    expect(cancelled).toBe(true);
  });

  test("EventParser ignores unknown fields and lines without a colon", () => {
    const parser = new EventParser();
    expect(parser.push("id: 7\nretry: 10\nevent: x\nfoo\ndata: y\n")).toEqual([]);
    expect(parser.push("\n")).toEqual([{ event: "x", data: "y" }]);
  });
});
