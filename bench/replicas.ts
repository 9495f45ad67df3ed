/**
 * Replicas, measured on the local cluster of deploy/local/up.sh (primary 5501, synchronous standby
 * 5502, two instances behind HAProxy on 8080), run as root after it:
 *   bash deploy/local/up.sh && bun bench/replicas.ts [--products 3000] [--seconds 15] [--concurrency 8]
 * 1. Replication lag during a bulk import through the API (pg_stat_replication's replay_lag and the
 *    bytes not yet replayed, sampled every 50 ms).
 * 2. Search requests/s with two instances (started here, beside the recipe's, on 8101 and 8102)
 *    reading from the primary, then from the standby, the client spreading requests over both.
 *    One machine: the two instances, both servers and the client share its cores, so this says what
 *    reading from a standby costs, not what a second machine would add.
 * 3. The failover timeline through HAProxy: SIGKILL to the primary, the standby promoted 3 s later
 *    (as a manager would after its own detection time), searches and writes sent all along:
 *    seconds without a successful search, seconds without a successful write and after the promotion
 *    until writes heal, and acknowledged writes missing on the promoted standby.
 * It kills the recipe's primary: run deploy/local/up.sh again afterwards. Last line: one JSON object.
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    products: { type: "string", default: "3000" },
    seconds: { type: "string", default: "15" },
    concurrency: { type: "string", default: "8" },
  },
});
const PRODUCTS = Number(values.products);
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const ROOT = Bun.env.SKU_CLUSTER_DIR ?? "/tmp/sku-search-cluster";
const PGBIN = "/usr/lib/postgresql/15/bin";
const HAPROXY = "http://127.0.0.1:8080";
const PASSWORD = Bun.env.ADMIN_PASSWORD ?? "cambie-esta-contraseña";
const PRIMARY = "postgres://postgres@127.0.0.1:5501,127.0.0.1:5502/sku?target_session_attrs=primary";

async function psql(port: number, sql: string): Promise<string> {
  const child = Bun.spawn(
    [`${PGBIN}/psql`, "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "sku", "-Atqc", sql],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const [out] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  return out.trim();
}

async function login(base: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${base}/auth/login`, {
      method: "POST",
      body: new URLSearchParams({ username: "admin", password: PASSWORD }),
    }).catch(() => undefined);
    if (response?.ok) return ((await response.json()) as { access_token: string }).access_token;
    if (attempt > 100) throw new Error(`cannot log in at ${base}`);
    await Bun.sleep(200);
  }
}

const loadAverage = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
const words = ["lámpara", "silla", "mesa", "taza", "zapatilla", "mochila", "reloj", "cafetera", "cable", "funda"];
const item = (i: number) => ({
  name: `${words[i % words.length]} modelo ${i}`,
  description: `${words[(i * 7) % words.length]} de prueba número ${i} para medir la réplica`,
  category: `cat-${i % 12}`,
  sku: `BENCH-${i}`,
});

// 1. Lag under a bulk import.
const token = await login(HAPROXY);
const lagSamples: { ms: number; bytes: number }[] = [];
let importing = true;
const sampler = (async () => {
  while (importing) {
    const row = await psql(
      5501,
      "SELECT coalesce(extract(epoch FROM replay_lag) * 1000, 0), pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) FROM pg_stat_replication LIMIT 1",
    );
    const [ms, bytes] = row.split("|").map(Number);
    if (ms !== undefined && bytes !== undefined) lagSamples.push({ ms, bytes });
    await Bun.sleep(50);
  }
})();
const importStarted = performance.now();
for (let start = 0; start < PRODUCTS; start += 100) {
  const batch = Array.from({ length: Math.min(100, PRODUCTS - start) }, (_, i) => item(start + i));
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${HAPROXY}/products/bulk`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(batch),
    });
    if (response.ok) break;
    // A busy machine may pass the request's time budget: the batch is sent again (upserted by sku).
    if (response.status !== 503 || attempt > 5)
      throw new Error(`bulk import: ${response.status} ${await response.text()}`);
  }
}
const importSeconds = (performance.now() - importStarted) / 1000;
importing = false;
await sampler;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const pick = (values: number[], q: number) =>
  sorted(values)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;
const lag = {
  products: PRODUCTS,
  importPerSecond: Math.round(PRODUCTS / importSeconds),
  samples: lagSamples.length,
  replayLagMs: {
    p50: pick(
      lagSamples.map((s) => s.ms),
      0.5,
    ),
    max: Math.max(0, ...lagSamples.map((s) => s.ms)),
  },
  unreplayedKb: {
    p50: Math.round(
      pick(
        lagSamples.map((s) => s.bytes),
        0.5,
      ) / 1024,
    ),
    max: Math.round(Math.max(0, ...lagSamples.map((s) => s.bytes)) / 1024),
  },
  loadAverage: await loadAverage(),
};
console.log("lag under a bulk import:", JSON.stringify(lag));

// 2. Search requests/s, reads on the primary vs on the standby, two instances.
async function searchRate(
  readUrl: string | undefined,
): Promise<{ perSecond: number; p50ms: number; p95ms: number; errors: number; loadAverage: string }> {
  const instances = [8101, 8102].map((port) =>
    Bun.spawn(["bun", "src/app/main.ts", "serve"], {
      env: {
        ...Bun.env,
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: `${ROOT}/bench-${port}`,
        DATABASE_URL: PRIMARY,
        ...(readUrl ? { DATABASE_READ_URL: readUrl } : { DATABASE_READ_URL: "" }),
        SEARCH_RATE_LIMIT: "0",
        LOG_LEVEL: "warn",
      },
      stdout: "ignore",
      stderr: "ignore",
    }),
  );
  try {
    const bases = ["http://127.0.0.1:8101", "http://127.0.0.1:8102"];
    const tokens = await Promise.all(bases.map(login));
    for (const base of bases) {
      for (let i = 0; i < 200; i++) {
        const ready = await fetch(`${base}/health/ready`).catch(() => undefined);
        if (ready?.ok) break;
        await Bun.sleep(250);
      }
    }
    const latencies: number[] = [];
    let errors = 0;
    const until = performance.now() + SECONDS * 1000;
    const warmUntil = performance.now() + 2000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, worker) => {
        for (let i = 0; performance.now() < until; i++) {
          const which = (worker + i) % 2;
          const started = performance.now();
          const response = await fetch(`${bases[which]}/products/search`, {
            method: "POST",
            headers: { authorization: `Bearer ${tokens[which]}`, "content-type": "application/json" },
            body: JSON.stringify({ query: `${words[i % words.length]} ${i % 50}`, limit: 5 }),
          });
          await response.arrayBuffer();
          if (started < warmUntil) continue;
          if (response.status === 200) latencies.push(performance.now() - started);
          else errors++;
        }
      }),
    );
    return {
      perSecond: Math.round(latencies.length / (SECONDS - 2)),
      p50ms: Math.round(pick(latencies, 0.5) * 10) / 10,
      p95ms: Math.round(pick(latencies, 0.95) * 10) / 10,
      errors,
      loadAverage: await loadAverage(),
    };
  } finally {
    for (const instance of instances) instance.kill();
    await Promise.all(instances.map((instance) => instance.exited));
  }
}
const onPrimary = await searchRate(undefined);
console.log("search, reads on the primary:", JSON.stringify(onPrimary));
const onStandby = await searchRate(
  "postgres://postgres@127.0.0.1:5502,127.0.0.1:5501/sku?target_session_attrs=prefer-standby",
);
console.log("search, reads on the standby:", JSON.stringify(onStandby));

// 3. The failover timeline through HAProxy.
const events: { at: number; kind: "search" | "write"; status: number }[] = [];
const acknowledged: string[] = [];
let stop = false;
const t0 = performance.now();
const now = () => (performance.now() - t0) / 1000;
const worker = async (id: number) => {
  for (let i = 0; !stop; i++) {
    const name = `failover ${id}-${i}`;
    const write = await fetch(`${HAPROXY}/products/`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name, description: "medida de conmutación", category: "failover" }),
      signal: AbortSignal.timeout(15_000),
    }).catch(() => undefined);
    events.push({ at: now(), kind: "write", status: write?.status ?? 0 });
    if (write?.status === 201) acknowledged.push(name);
    await write?.arrayBuffer();
    const search = await fetch(`${HAPROXY}/products/search`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: `lámpara ${i % 20}` }),
      signal: AbortSignal.timeout(15_000),
    }).catch(() => undefined);
    await search?.arrayBuffer();
    events.push({ at: now(), kind: "search", status: search?.status ?? 0 });
    await Bun.sleep(20);
  }
};
const workers = [0, 1, 2, 3].map(worker);
await Bun.sleep(2000);
const pid = (await Bun.file(`${ROOT}/primary/postmaster.pid`).text()).split("\n")[0];
const killedAt = now();
process.kill(Number(pid), "SIGKILL");
await Bun.sleep(3000);
const promotedAt = now();
Bun.spawnSync(["su", "postgres", "-c", `${PGBIN}/pg_ctl -D ${ROOT}/standby -w promote`]);
const promoteReturnedAt = now();
for (let i = 0; i < 300 && !events.some((e) => e.kind === "write" && e.status === 201 && e.at > promotedAt); i++) {
  await Bun.sleep(50);
}
await Bun.sleep(2000);
stop = true;
await Promise.all(workers);

/** The longest stretch after `from` with no successful answer of `kind` (from `from` to the first success counts). */
function longestGap(kind: "search" | "write", ok: number, from: number): number {
  let last = from;
  let gap = 0;
  for (const event of events.filter((e) => e.kind === kind && e.at >= from)) {
    if (event.status !== ok) continue;
    gap = Math.max(gap, event.at - last);
    last = event.at;
  }
  return Math.round(gap * 100) / 100;
}
const after = events.filter((e) => e.at >= killedAt);
const firstWriteAfterPromotion = events.find((e) => e.kind === "write" && e.status === 201 && e.at > promotedAt);
const stored = new Set((await psql(5502, "SELECT name FROM products WHERE category = 'failover'")).split("\n"));
const failover = {
  secondsWithoutSearches: longestGap("search", 200, killedAt),
  searchFailures: after.filter((e) => e.kind === "search" && e.status !== 200).length,
  searches: after.filter((e) => e.kind === "search").length,
  secondsWithoutWrites: firstWriteAfterPromotion
    ? Math.round((firstWriteAfterPromotion.at - killedAt) * 100) / 100
    : null,
  promotionDelaySeconds: Math.round((promotedAt - killedAt) * 100) / 100,
  writesHealedSecondsAfterPromote: firstWriteAfterPromotion
    ? Math.round((firstWriteAfterPromotion.at - promoteReturnedAt) * 100) / 100
    : null,
  writeStatusesWhileNoPrimary: Object.fromEntries(
    [...new Set(after.filter((e) => e.kind === "write" && e.at < promotedAt).map((e) => e.status))].map((s) => [
      s,
      after.filter((e) => e.kind === "write" && e.at < promotedAt && e.status === s).length,
    ]),
  ),
  acknowledgedWrites: acknowledged.length,
  acknowledgedWritesLost: acknowledged.filter((name) => !stored.has(name)).length,
  loadAverage: await loadAverage(),
};
console.log("failover:", JSON.stringify(failover));
console.log(JSON.stringify({ lag, search: { readsOnPrimary: onPrimary, readsOnStandby: onStandby }, failover }));
