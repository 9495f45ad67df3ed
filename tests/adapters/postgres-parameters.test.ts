/**
 * How query parameters travel to a PostgreSQL server (TEST_DATABASE_URL): a Uint8Array given for a
 * `vector` or a `bytea` goes in the type's binary format, its bytes as they are (patches/postgres@3.4.9.patch;
 * postgres.js alone sends a bytea as hex text, twice the bytes, built on the event loop). The
 * bytes the client sends are counted by a relay on 127.0.0.1 between it and the server.
 */
import { describe, expect, test } from "bun:test";
import net from "node:net";
import { encodeVector } from "../../src/adapters/postgres/binary-copy.ts";
import { connectPostgres, type SqlClient } from "../../src/adapters/postgres/sql-client.ts";
import { blockHooks } from "../support/skipped-blocks.ts";
import { POSTGRES_URL } from "../support/test-databases.ts";

interface CountingRelay {
  url: string;
  /** Bytes the client has sent the server so far. */
  sent(): number;
  close(): Promise<void>;
}

async function startCountingRelay(serverUrl: string): Promise<CountingRelay> {
  const target = new URL(serverUrl);
  let sent = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on("data", (chunk: Buffer) => {
      sent += chunk.length;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const url = new URL(serverUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    sent: () => sent,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    },
  };
}

describe.skipIf(!POSTGRES_URL)("query parameters on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  let relay: CountingRelay;
  let client: SqlClient;
  blockHooks(!POSTGRES_URL, {
    async beforeAll() {
      relay = await startCountingRelay(POSTGRES_URL);
      client = connectPostgres(relay.url, { maxConnections: 1 });
      await client.query("SELECT 1");
    },
    async afterAll() {
      await client.close();
      await relay.close();
    },
  });

  /** Bytes sent for one statement taking `value` (a Uint8Array of 12,292 bytes), and what the server received. */
  async function sendOnce(value: Uint8Array): Promise<{ bytes: number; received: string }> {
    const before = relay.sent();
    const [row] = await client.query<{ received: string }>("SELECT md5($1::bytea) AS received", [value]);
    return { bytes: relay.sent() - before, received: row?.received ?? "" };
  }

  test("a bytea goes as its bytes, not as hex text, and arrives unchanged", async () => {
    // A 3072-d vector in pgvector's binary format, as the query cache stores it.
    const value = encodeVector(Array.from({ length: 3072 }, (_, i) => Math.sin(i) / 55));
    await sendOnce(value); // the statement prepared; what follows is its execution alone
    const { bytes, received } = await sendOnce(value);
    expect(received).toBe(new Bun.CryptoHasher("md5").update(value).digest("hex"));
    expect(value.length).toBe(12_292);
    // Hex would be 24,586 bytes for this parameter alone.
    expect(bytes).toBeGreaterThan(value.length);
    expect(bytes).toBeLessThan(value.length + 1_000);
  });
});
