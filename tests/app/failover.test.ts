/**
 * Failover that keeps search up, on a real primary and a synchronous hot standby: the service's
 * DATABASE_URL names both (target_session_attrs=primary) and its reads go to the standby first
 * (DATABASE_READ_URL, prefer-standby). Killing the primary (SIGKILL) under load: every search goes
 * on answering 200, every write answers 201 or 503 with Retry-After (never 500); once the standby is
 * promoted, writes succeed again by themselves, and every write acknowledged before the kill is there.
 * The timings (seconds without writes, time to heal) are bench/replicas.ts's, not asserted here.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  canRunPostgresCluster,
  caughtUp,
  type PostgresCluster,
  psql,
  startPostgresCluster,
  startStandby,
} from "../support/postgres-cluster.ts";
import { multiHost, product, type ReplicaService, startService } from "../support/replica-service.ts";

setDefaultTimeout(180_000);

const skipped = !canRunPostgresCluster();
let primary: PostgresCluster;
let standby: PostgresCluster;
let service: ReplicaService;

beforeAll(async () => {
  if (skipped) return;
  primary = await startPostgresCluster();
  standby = await startStandby(primary, { synchronous: true });
  service = await startService({
    DATABASE_URL: multiHost([primary, standby], "primary"),
    DATABASE_READ_URL: multiHost([standby, primary], "prefer-standby"),
    // The shared query cache too: its writes must not touch a search while the primary is gone.
    QUERY_CACHE_DAYS: "1",
  });
  await caughtUp(primary, standby);
}, 120_000);

afterAll(async () => {
  await service?.close();
  await standby?.stop();
  await primary?.stop();
});

test.skipIf(skipped)(
  "kill the primary: searches stay 200, writes 503 until the standby is promoted, then they succeed; nothing acknowledged is lost",
  async () => {
    const token = await service.login();
    const acknowledged: string[] = [];
    const answers: { kind: "search" | "write"; status: number; retryAfter: string | null; phase: string }[] = [];
    let phase = "before";
    let stop = false;
    const worker = async (id: number) => {
      for (let i = 0; !stop; i++) {
        const name = `Producto ${id}-${i}`;
        const write = await service.call("POST", "/products/", { token, json: product(name) });
        answers.push({ kind: "write", status: write.status, retryAfter: write.headers.get("retry-after"), phase });
        if (write.status === 201) acknowledged.push(name);
        const search = await service.call("POST", "/products/search", { token, json: { query: `producto ${i}` } });
        answers.push({ kind: "search", status: search.status, retryAfter: null, phase });
        await Bun.sleep(20);
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    /**
     * Waits until `count` answers of `kind` (of `status`) were given in the current phase: an event,
     * not a duration. The bound (60 s) only turns a service that never answers into a failure.
     */
    const answered = async (kind: "search" | "write", count: number, status?: number) => {
      const seen = () =>
        answers.filter((a) => a.phase === phase && a.kind === kind && (status === undefined || a.status === status));
      for (let i = 0; i < 1200 && seen().length < count; i++) await Bun.sleep(50);
      if (seen().length < count) throw new Error(`${phase}: ${seen().length} of ${count} ${kind}s ${status ?? ""}`);
    };
    await answered("write", 8, 201);

    phase = "primary killed";
    await primary.kill();
    // The service refuses a write once it has seen the primary go; searches go on meanwhile, from the standby.
    await answered("write", 1, 503);
    await answered("search", 12);

    phase = "promoting";
    await standby.promote();
    await answered("write", 1, 201);
    phase = "promoted";
    await answered("write", 4, 201);
    stop = true;
    await Promise.all(workers);

    const searches = answers.filter((a) => a.kind === "search");
    const writes = answers.filter((a) => a.kind === "write");
    expect(searches.filter((a) => a.phase === "primary killed").length).toBeGreaterThanOrEqual(12);
    expect(searches.filter((a) => a.status !== 200)).toEqual([]);
    expect(writes.filter((a) => a.status !== 201 && !(a.status === 503 && a.retryAfter === "5"))).toEqual([]);
    expect(writes.some((a) => a.phase === "primary killed" && a.status === 503)).toBe(true);
    expect(writes.some((a) => a.phase === "promoted" && a.status === 201)).toBe(true);

    // Synchronous replication: every acknowledged create is on the promoted standby.
    const stored = new Set((await psql(standby, "SELECT name FROM products")).split("\n"));
    expect(acknowledged.filter((name) => !stored.has(name))).toEqual([]);
  },
);
