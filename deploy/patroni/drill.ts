/**
 * The Patroni drill's measuring half (deploy/patroni/drill.sh starts etcd and three nodes first):
 * the service in process on the three nodes (multi-host URLs, a fake embedder: the database's
 * failover is what is measured), four clients writing and searching, then SIGKILL to the primary's
 * Patroni and PostgreSQL; Patroni promotes the synchronous standby by itself. Prints one JSON line.
 */
import { startService } from "../../tests/support/replica-service.ts";

const work = process.argv[2] ?? "/tmp/sku-search-patroni";
const nodes = [1, 2, 3].map((n) => ({ n, port: 5600 + n, api: `http://127.0.0.1:801${n}` }));
const hosts = nodes.map(({ port }) => `127.0.0.1:${port}`).join(",");
const service = await startService({
  DATABASE_URL: `postgres://postgres@${hosts}/sku?target_session_attrs=primary`,
  DATABASE_READ_URL: `postgres://postgres@${hosts}/sku?target_session_attrs=prefer-standby`,
});
const token = await service.login();
const events: { at: number; kind: string; status: number }[] = [];
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
await Bun.sleep(2000);
const primary = (
  await Promise.all(nodes.map(async (node) => ((await fetch(`${node.api}/primary`).catch(() => undefined))?.status === 200 ? node : undefined)))
).find(Boolean);
if (!primary) throw new Error("no primary found through Patroni's REST API");
const patroniPid = Number(await Bun.file(`${work}/patroni${primary.n}.pid`).text());
const postmasterPid = Number((await Bun.file(`${work}/node${primary.n}/postmaster.pid`).text()).split("\n")[0]);
const killedAt = now();
process.kill(patroniPid, "SIGKILL");
process.kill(postmasterPid, "SIGKILL");
for (let i = 0; i < 1200 && !events.some((e) => e.kind === "write" && e.status === 201 && e.at > killedAt); i++) {
  await Bun.sleep(50);
}
await Bun.sleep(2000);
stop = true;
await Promise.all(workers);
let last = killedAt;
let searchGap = 0;
for (const e of events.filter((e) => e.kind === "search" && e.at >= killedAt && e.status === 200)) {
  searchGap = Math.max(searchGap, e.at - last);
  last = e.at;
}
const healed = events.find((e) => e.kind === "write" && e.status === 201 && e.at > killedAt);
const newPrimary = nodes.find((node) => node !== primary) as (typeof nodes)[number];
const check = await import("../../src/adapters/postgres/sql-client.ts");
const db = check.connectPostgres(`postgres://postgres@${hosts}/sku?target_session_attrs=primary`, { maxConnections: 1 });
const stored = new Set((await db.query<{ name: string }>("SELECT name FROM products WHERE category = 'drill'")).map((r) => r.name));
await db.close();
await service.close();
console.log(
  JSON.stringify({
    killed: `node${primary.n}`,
    secondsWithoutSearches: Math.round(searchGap * 100) / 100,
    searchFailures: events.filter((e) => e.kind === "search" && e.at >= killedAt && e.status !== 200).length,
    secondsWithoutWrites: healed ? Math.round((healed.at - killedAt) * 100) / 100 : null,
    writeStatuses: [...new Set(events.filter((e) => e.kind === "write" && e.at >= killedAt).map((e) => e.status))],
    acknowledgedWrites: acknowledged.length,
    acknowledgedWritesLost: acknowledged.filter((name) => !stored.has(name)).length,
    note: `another node than ${newPrimary.n} may have been promoted`,
    loadAverage: (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" "),
  }),
);
