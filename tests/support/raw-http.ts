/**
 * HTTP/1.x spoken by hand over a TCP socket (Bun.connect), for what `fetch` refuses to send: a
 * request without Host, CONNECT, absolute-form targets, odd methods and versions, oversized
 * headers, bad percent-encoding left as it is. The answer is read until the server closes the
 * connection (send `Connection: close`), or until `waitMs` passes without it.
 */

export interface RawAnswer {
  /** The status of the answer; undefined when the server closed (or went quiet) without one. */
  status?: number;
  /** Header names in lower case (the last of repeated ones). */
  headers: Map<string, string>;
  /** The body, de-chunked when the answer was chunked. */
  body: string;
  /** The server did not close the connection within `waitMs`. */
  timedOut: boolean;
}

/** Sends `request` (bytes as given) to 127.0.0.1:`port` and reads what comes back. */
export async function sendRaw(port: number, request: string | Uint8Array, waitMs = 5_000): Promise<RawAnswer> {
  const chunks: Uint8Array[] = [];
  const done = Promise.withResolvers<boolean>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_socket, data) {
        chunks.push(new Uint8Array(data));
      },
      close() {
        done.resolve(false);
      },
      end() {
        done.resolve(false);
      },
      error() {
        done.resolve(false);
      },
      connectError() {
        done.resolve(false);
      },
    },
  });
  socket.write(request);
  const timer = setTimeout(() => done.resolve(true), waitMs);
  const timedOut = await done.promise;
  clearTimeout(timer);
  socket.end();
  return { ...parseAnswer(Buffer.concat(chunks)), timedOut };
}

/** An HTTP/1.x answer's status, headers and body (only the first answer on the connection). */
export function parseAnswer(bytes: Uint8Array): Omit<RawAnswer, "timedOut"> {
  const text = Buffer.from(bytes).toString("latin1");
  const headEnd = text.indexOf("\r\n\r\n");
  const head = headEnd < 0 ? text : text.slice(0, headEnd);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  let body = headEnd < 0 ? new Uint8Array() : bytes.subarray(Buffer.byteLength(text.slice(0, headEnd + 4), "latin1"));
  if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") body = unchunk(body);
  else if (headers.has("content-length")) body = body.subarray(0, Number(headers.get("content-length")));
  return { status: status === undefined ? undefined : Number(status), headers, body: new TextDecoder().decode(body) };
}

/** The data of a chunked body (as far as it arrived). */
function unchunk(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    const lineEnd = Buffer.from(bytes.subarray(at)).indexOf("\r\n");
    if (lineEnd < 0) break;
    const size = Number.parseInt(Buffer.from(bytes.subarray(at, at + lineEnd)).toString("latin1"), 16);
    if (!Number.isFinite(size) || size === 0) break;
    const start = at + lineEnd + 2;
    parts.push(bytes.subarray(start, start + size));
    at = start + size + 2;
  }
  return Buffer.concat(parts);
}
