import { expect, test } from "bun:test";
import { PrimaryWatch } from "../../src/adapters/postgres/primary-watch.ts";
import type { SqlClient } from "../../src/adapters/postgres/sql-client.ts";

test("the guarded write pool still listens: a service hears users' changes through it", async () => {
  const heard: string[] = [];
  const primary: SqlClient = {
    query: async () => [],
    transaction: (fn) => fn(primary),
    copyIn: async () => {},
    async listen(channel, onNotify, onListen) {
      heard.push(channel);
      onListen();
      onNotify("7 2");
      return async () => {};
    },
    close: async () => {},
  };
  // Nothing connects until a probe runs: none does here.
  const watch = new PrimaryWatch("postgres://127.0.0.1:1/none");
  const writes = watch.guard(primary);
  const payloads: string[] = [];
  let ready = 0;
  const stop = await writes.listen?.(
    "users_changed",
    (payload) => payloads.push(payload),
    () => ready++,
  );
  expect(heard).toEqual(["users_changed"]);
  expect([payloads, ready]).toEqual([["7 2"], 1]);
  await stop?.();
  await watch.close();
});
