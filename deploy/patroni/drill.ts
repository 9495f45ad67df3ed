/**
 * The Patroni drill's measuring half (deploy/patroni/drill.sh starts etcd and three nodes first):
 * the service in process on the three nodes (multi-host URLs, a fake embedder: the database's
 * failover is what is measured), four clients writing and searching, then SIGKILL to the primary's
 * Patroni and PostgreSQL; Patroni promotes the synchronous standby by itself. Prints the timeline
 * and one JSON line; exits 1 when the failover broke a promise of README "Replicas and failover": a
 * search failed, a write answered anything but 201 or 503, writes never came back, or an
 * acknowledged write is missing. (The seconds are reported, not judged: they depend on Patroni's
 * ttl and on the machine.)
 */
import { startService } from "../../tests/support/replica-service.ts";

const work = process.argv[2] ?? "/tmp/sku-search-patroni";
const nodes = [1, 2, 3].map((n) => ({ n, port: 5600 + n, api: `http://127.0.0.1:801${n}` }));
const hosts = nodes.map(({ port }) => `127.0.0.1:${port}`).join(",");
const loadAverage = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
const loadBefore = await loadAverage();
const service = await startService({
  DATABASE_URL: `postgres://postgres@${hosts}/sku?target_session_attrs=primary`,
  DATABASE_READ_URL: `postgres://postgres@${hosts}/sku?target_session_attrs=prefer-standby`,
});
const token = await service.login();
const events: { at: number; kind: "write" | "search"; status: number }[] = [];
const acknowledged: string[] = [];
let stop = false;
const t0 = performance.now();
const now = () => (performance.now() - t0) / 1000;
const workers = [0, 1, 2, 3].map(async (id) => {
  for (let i = 0; !stop; i++) {
    const name = `drill ${id}-${i}`;
    const write = await service.call("POST", "/products/", { token, json: { name, description: "d", category: "drill" } });
    events.push({ at: now(), kind: "write", status: write.status });
    if (write.status === 201) acknowledged.push(name);
    const search = await service.call("POST", "/products/search", { token, json: { query: "drill" } });
    events.push({ at: now(), kind: "search", status: search.status });
    await Bun.sleep(20);
  }
});

/** Waits until `count` events match after `since` (seconds): an event, bounded by 120 s. */
async function seen(count: number, since: number, match: (e: (typeof events)[number]) => boolean): Promise<void> {
  for (let i = 0; i < 2400; i++) {
    if (events.filter((e) => e.at > since && match(e)).length >= count) return;
    await Bun.sleep(50);
  }
  throw new Error(`waited 120 s for ${count} events after ${since.toFixed(2)} s`);
}

async function primaryNode() {
  const answers = await Promise.all(
    nodes.map(async (node) => ((await fetch(`${node.api}/primary`).catch(() => undefined))?.status === 200 ? node : undefined)),
  );
  return answers.find((node) => node !== undefined);
}

// Traffic first: 20 acknowledged writes and 20 answered searches before the kill.
await seen(20, 0, (e) => e.kind === "write" && e.status === 201);
await seen(20, 0, (e) => e.kind === "search" && e.status === 200);
const primary = await primaryNode();
if (!primary) throw new Error("no primary found through Patroni's REST API");
const patroniPid = Number(await Bun.file(`${work}/patroni${primary.n}.pid`).text());
const postmasterPid = Number((await Bun.file(`${work}/node${primary.n}/postmaster.pid`).text()).split("\n")[0]);
const killedAt = now();
process.kill(patroniPid, "SIGKILL");
process.kill(postmasterPid, "SIGKILL");

// Patroni promotes a standby once the leader key expires (ttl); the service finds it by itself.
let promoted: (typeof nodes)[number] | undefined;
for (let i = 0; i < 1200 && promoted === undefined; i++) {
  promoted = await primaryNode();
  if (promoted === undefined) await Bun.sleep(100);
}
const promotedAt = promoted === undefined ? undefined : now();
// Writes are back with the first one acknowledged after a refusal (one answered just after the kill
// had committed before it), or after the promotion when none was refused.
const outageFrom = () =>
  events.find((e) => e.at > killedAt && e.kind === "write" && e.status !== 201)?.at ?? promotedAt ?? killedAt;
await seen(1, killedAt, (e) => e.kind === "write" && e.status === 201 && e.at > outageFrom());
const healedAt = events.find((e) => e.kind === "write" && e.status === 201 && e.at > outageFrom())?.at as number;
// And more after it: the writes that follow the first one succeed too.
await seen(8, healedAt, (e) => e.kind === "write" && e.status === 201);
stop = true;
await Promise.all(workers);

let last = killedAt;
let searchGap = 0;
for (const e of events.filter((e) => e.kind === "search" && e.at >= killedAt && e.status === 200)) {
  searchGap = Math.max(searchGap, e.at - last);
  last = e.at;
}
const afterKill = events.filter((e) => e.at >= killedAt);
const firstRefusal = afterKill.find((e) => e.kind === "write" && e.status === 503)?.at;
const sql = await import("../../src/adapters/postgres/sql-client.ts");
const db = sql.connectPostgres(`postgres://postgres@${hosts}/sku?target_session_attrs=primary`, { maxConnections: 1 });
const stored = new Set(
  (await db.query<{ name: string }>("SELECT name FROM products WHERE category = 'drill'")).map((r) => r.name),
);
await db.close();
await service.close();

const seconds = (at: number | undefined) => (at === undefined ? null : Math.round((at - killedAt) * 100) / 100);
const result = {
  killed: `node${primary.n}`,
  promoted: promoted ? `node${promoted.n}` : null,
  secondsToPromotion: seconds(promotedAt),
  secondsToFirstRefusedWrite: seconds(firstRefusal),
  secondsWithoutWrites: seconds(healedAt),
  secondsWithoutSearches: Math.round(searchGap * 100) / 100,
  searchesAfterKill: afterKill.filter((e) => e.kind === "search").length,
  searchFailures: afterKill.filter((e) => e.kind === "search" && e.status !== 200).length,
  writeStatusesAfterKill: Object.fromEntries(
    [...new Set(afterKill.filter((e) => e.kind === "write").map((e) => e.status))].map((status) => [
      status,
      afterKill.filter((e) => e.kind === "write" && e.status === status).length,
    ]),
  ),
  acknowledgedWrites: acknowledged.length,
  acknowledgedWritesLost: acknowledged.filter((name) => !stored.has(name)).length,
  loadAverage: { before: loadBefore, after: await loadAverage() },
};
console.log(
  [
    `killed ${result.killed} (Patroni and PostgreSQL, SIGKILL) at 0 s`,
    `first write refused (503): ${result.secondsToFirstRefusedWrite} s`,
    `${result.promoted} promoted by Patroni: ${result.secondsToPromotion} s`,
    `first write acknowledged again: ${result.secondsWithoutWrites} s`,
    `longest stretch without an answered search: ${result.secondsWithoutSearches} s (${result.searchFailures} of ${result.searchesAfterKill} searches failed)`,
    `acknowledged writes lost: ${result.acknowledgedWritesLost} of ${result.acknowledgedWrites}`,
  ].join("\n"),
);
console.log(JSON.stringify(result));

const broken = [
  ...(result.searchFailures > 0 ? [`${result.searchFailures} searches failed`] : []),
  ...Object.keys(result.writeStatusesAfterKill)
    .filter((status) => status !== "201" && status !== "503")
    .map((status) => `writes answered ${status}`),
  ...(result.acknowledgedWritesLost > 0 ? [`${result.acknowledgedWritesLost} acknowledged writes lost`] : []),
  ...(promoted === undefined ? ["no standby was promoted"] : []),
];
if (broken.length > 0) {
  console.error(`drill failed: ${broken.join("; ")}`);
  process.exit(1);
}
