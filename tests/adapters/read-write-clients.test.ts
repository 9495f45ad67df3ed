/**
 * Read-your-writes' routing (read-write-clients.ts) on fake pools that record what they are asked:
 * where a read goes for a request that names a position (X-Read-After) or a caller that just wrote,
 * what a write reports, and that a failover under way sends reads to the standby at once.
 * The real thing, on a primary and a delayed standby: tests/app/replicas.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { type ConsistencyRequest, readYourWrites } from "../../src/adapters/postgres/read-write-clients.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";

/** A pool that answers every statement with `answer(text)` and records it (a reserved connection records in the same log). */
function fakePool(
  name: string,
  log: string[],
  answer: (text: string, params: readonly unknown[]) => unknown[] = () => [{ name }],
): SqlClient {
  const client: SqlClient = {
    async query<T>(text: string, params: readonly unknown[] = []): Promise<T[]> {
      log.push(`${name}: ${text}`);
      return answer(text, params) as T[];
    },
    transaction: (fn) => fn(client),
    copyIn: async () => {},
    reserved: (fn) => fn(client),
    close: async () => {},
  };
  return client;
}

const READ = "SELECT * FROM products";

describe("read-your-writes routing", () => {
  test("a request naming a position reads on the standby once it has replayed it, else on the primary", async () => {
    const log: string[] = [];
    let replayed = true;
    const standby = fakePool("standby", log, (text) =>
      text.includes("pg_last_wal_replay_lsn") ? [{ seen: replayed }] : [{ name: "standby" }],
    );
    const primary = fakePool("primary", log);
    const request: ConsistencyRequest = { readAfter: "0/3000148", wrote: () => {} };
    const pools = readYourWrites(standby, primary, { request: () => request, standbys: true, waitMs: 1 });

    expect(await pools.reads.query(READ)).toEqual([{ name: "standby" }]);
    expect(log).toEqual([
      "standby: SELECT NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= $1::pg_lsn AS seen",
      `standby: ${READ}`,
    ]);
    log.length = 0;
    replayed = false;
    expect(await pools.reads.query(READ)).toEqual([{ name: "primary" }]);
    expect(log.at(-1)).toBe(`primary: ${READ}`);
    // Without a position, the standby as it is.
    log.length = 0;
    const plain = readYourWrites(standby, primary, { request: () => ({ wrote: () => {} }), standbys: true, waitMs: 1 });
    expect(await plain.reads.query(READ)).toEqual([{ name: "standby" }]);
    expect(log).toEqual([`standby: ${READ}`]);
  });

  test("while the primary is lost, a read that must see a position is answered by the standby at once", async () => {
    const log: string[] = [];
    const standby = fakePool("standby", log, (text) =>
      text.includes("pg_last_wal_replay_lsn") ? [{ seen: false }] : [{ name: "standby" }],
    );
    const primary = fakePool("primary", log);
    const request: ConsistencyRequest = { readAfter: "0/3000148", wrote: () => {} };
    let lost = true;
    const pools = readYourWrites(standby, primary, {
      request: () => request,
      standbys: true,
      waitMs: 60_000,
      primaryLost: () => lost,
    });
    expect(await pools.reads.query(READ)).toEqual([{ name: "standby" }]);
    expect(log).toEqual([`standby: ${READ}`]);
    lost = false;
    log.length = 0;
    const replaced = readYourWrites(standby, primary, {
      request: () => request,
      standbys: true,
      waitMs: 0,
      primaryLost: () => lost,
    });
    expect(await replaced.reads.query(READ)).toEqual([{ name: "primary" }]);
  });

  test("a write reports its commit's position to the request and its caller's next reads must see it; the later position wins", async () => {
    const log: string[] = [];
    let position = "0/5000000";
    const primary = fakePool("primary", log, (text) =>
      text.includes("pg_current_wal_insert_lsn") ? [{ position }] : [{ name: "primary" }],
    );
    const awaited: unknown[] = [];
    const standby = fakePool("standby", log, (text, params) => {
      if (!text.includes("pg_last_wal_replay_lsn")) return [{ name: "standby" }];
      awaited.push(params[0]);
      return [{ seen: true }];
    });
    const reported: string[] = [];
    let request: ConsistencyRequest = { caller: "user:1", wrote: (at) => reported.push(at) };
    const pools = readYourWrites(standby, primary, { request: () => request, standbys: true, waitMs: 1 });
    await pools.wrote();
    expect(reported).toEqual(["0/5000000"]);

    // The same caller's next request, naming an older position: the later one (its own write) is awaited.
    request = { caller: "user:1", readAfter: "0/4FFFFFF", wrote: () => {} };
    log.length = 0;
    await pools.reads.query(READ);
    expect(awaited).toEqual(["0/5000000"]);
    // Another caller without a position reads the standby as it is.
    request = { caller: "user:2", wrote: () => {} };
    log.length = 0;
    await pools.reads.query(READ);
    expect(log).toEqual([`standby: ${READ}`]);

    // Without standbys nothing is routed, but a write still says where it committed.
    position = "1/0";
    const single = readYourWrites(primary, primary, { request: () => request, standbys: false, waitMs: 1 });
    const heard: string[] = [];
    request = { caller: "user:3", readAfter: "2/0", wrote: (at) => heard.push(at) };
    log.length = 0;
    await single.reads.query(READ);
    expect(log).toEqual([`primary: ${READ}`]);
    await single.wrote();
    expect(heard).toEqual(["1/0"]);
  });

  test("outside a request (a command, the job worker on its own) a write asks for no position", async () => {
    const log: string[] = [];
    const primary = fakePool("primary", log);
    const pools = readYourWrites(fakePool("standby", log), primary, {
      request: () => undefined,
      standbys: true,
      waitMs: 1,
    });
    await pools.wrote();
    expect(log).toEqual([]);
  });
});
