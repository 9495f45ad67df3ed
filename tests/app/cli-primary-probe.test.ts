/**
 * An operator's command on a PostgreSQL server first asks whether DATABASE_URL reaches a primary
 * (it writes). It asks once, so it waits for the answer as long as for a statement
 * (DATABASE_TIMEOUT_MS): a primary slow to answer, as on a busy machine, is not a missing one. Here
 * the server is reached through a relay that holds each new connection before passing it on.
 */
import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import { cliInProcess } from "../support/cli.ts";
import { POSTGRES_URL, schemaOfItsOwn } from "../support/test-databases.ts";

interface Relay {
  url: string;
  close(): void;
}

/**
 * A relay to the server at `serverUrl` that passes its first client on `holdMs` after it came (never,
 * when null), and every later one at once. The first is the command's question to the primary.
 */
async function holdingRelay(serverUrl: string, holdMs: number | null): Promise<Relay> {
  const target = new URL(serverUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const first = sockets.size === 0;
    sockets.add(client);
    client.pause();
    if (first && holdMs === null) return;
    setTimeout(
      () => {
        const upstream = net.connect(Number(target.port), target.hostname);
        sockets.add(upstream);
        client.pipe(upstream).on("error", () => client.destroy());
        upstream.pipe(client).on("error", () => upstream.destroy());
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
        client.resume();
      },
      first ? (holdMs ?? 0) : 0,
    );
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const url = new URL(serverUrl);
  url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url: url.toString(),
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(!POSTGRES_URL)("an operator's command and the primary it writes to (TEST_DATABASE_URL)", () => {
  test("a primary that answers after 2.5 s is waited for: the command does its work", async () => {
    const schema = await schemaOfItsOwn("slow_primary");
    cleanups.push(schema.drop);
    const relay = await holdingRelay(schema.url, 2500);
    cleanups.push(relay.close);
    const env = { DATABASE_URL: relay.url, ADMIN_PASSWORD: "admin-password" };
    const added = await cliInProcess(["users", "add", "bea"], env, "primera-clave\n");
    expect(added).toMatchObject({ code: 0 });
    const listed = await cliInProcess(["users", "list"], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("bea");
  });

  test("one that never answers fails the command after DATABASE_TIMEOUT_MS, saying no host answers", async () => {
    const relay = await holdingRelay(POSTGRES_URL, null);
    cleanups.push(relay.close);
    const failed = await cliInProcess(["users", "list"], { DATABASE_URL: relay.url, DATABASE_TIMEOUT_MS: "1500" });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("DATABASE_URL reaches no primary (no host answers)");
  });
});
