/**
 * A TCP relay between postgres.js and a PostgreSQL server that can stop a connection at an exact
 * point of the protocol: once the client has sent a message of a given type, either the server's
 * answers on that connection are held back (never delivered), or the client's next bytes are (its
 * writes back up). The test then kills the server process and the client sees its connection die
 * at that point, every time: no race with the server's speed.
 */
import net from "node:net";

export interface HeldRelay {
  /** The server's URL with the relay's address in its place. */
  url: string;
  /**
   * Resolves when a client next sends a message of `type` (a protocol message's type byte, e.g.
   * "c" for CopyDone); from then on that connection receives nothing more from the server.
   */
  holdAnswersAfter(type: string): Promise<void>;
  /** The same, holding back what the client sends after that message's first bytes instead. */
  holdRequestsAfter(type: string): Promise<void>;
  /** Stops listening, as a server that went away: new connections are refused, open ones go on. */
  refuseNewConnections(): void;
  close(): Promise<void>;
}

export async function startHeldRelay(serverUrl: string): Promise<HeldRelay> {
  const target = new URL(serverUrl);
  let armed: { type: number; hold: "answers" | "requests"; reached: () => void } | null = null;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let answersHeld = false;
    let requestsHeld = false;
    // Client → server: passed on as it comes, read message by message (the startup message has
    // no type byte, every later one has) to see when the armed type goes by.
    let started = false;
    let header = Buffer.alloc(0);
    let skip = 0;
    client.on("data", (chunk: Buffer) => {
      if (!upstream.write(chunk)) client.pause();
      let at = 0;
      while (at < chunk.length) {
        if (skip > 0) {
          const n = Math.min(skip, chunk.length - at);
          skip -= n;
          at += n;
          continue;
        }
        const need = started ? 5 : 4;
        const take = Math.min(need - header.length, chunk.length - at);
        header = Buffer.concat([header, chunk.subarray(at, at + take)]);
        at += take;
        if (header.length < need) break;
        const type = started ? header[0] : undefined;
        const length = header.readInt32BE(started ? 1 : 0);
        skip = length - 4;
        started = true;
        header = Buffer.alloc(0);
        if (armed && type === armed.type) {
          if (armed.hold === "answers") answersHeld = true;
          else {
            requestsHeld = true;
            client.pause();
          }
          armed.reached();
          armed = null;
        }
      }
    });
    upstream.on("drain", () => requestsHeld || client.resume());
    upstream.on("data", (chunk: Buffer) => {
      if (answersHeld) return;
      if (!client.write(chunk)) upstream.pause();
    });
    client.on("drain", () => upstream.resume());
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on("error", closeBoth);
      socket.on("close", closeBoth);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(serverUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);

  return {
    url: url.toString(),
    holdAnswersAfter(type: string) {
      return new Promise<void>((reached) => {
        armed = { type: type.charCodeAt(0), hold: "answers", reached };
      });
    },
    holdRequestsAfter(type: string) {
      return new Promise<void>((reached) => {
        armed = { type: type.charCodeAt(0), hold: "requests", reached };
      });
    },
    refuseNewConnections() {
      server.close();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
