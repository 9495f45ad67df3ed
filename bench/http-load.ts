/**
 * A keep-alive HTTP load generator for bench/http.ts (the `--client bun` choice; not run by hand):
 * `concurrency` loops each sending one POST /products/search after another for `duration` seconds,
 * every one with a query of its own ("<tag> <n>"), or one of `repeat` queries in turn when repeat > 0.
 * Prints one JSON line: requests, duration, failures (network errors and non-2xx answers) and
 * latency percentiles in microseconds.
 *
 *   bun bench/http-load.ts <url> <concurrency> <seconds> <tag> <repeat> [token]
 */
export {};

const [url = "", concurrencyText = "1", secondsText = "5", tag = "q", repeatText = "0", token = ""] =
  process.argv.slice(2);
const repeat = Number(repeatText);
const concurrency = Number(concurrencyText);
const endAt = performance.now() + Number(secondsText) * 1000;
const headers: Record<string, string> = { "content-type": "application/json" };
if (token) headers.authorization = `Bearer ${token}`;

const latencies: number[] = [];
let failures = 0;
let sent = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (performance.now() < endAt) {
      const n = sent++;
      const body = JSON.stringify({ query: `consulta ${tag} ${repeat > 0 ? n % repeat : n}`, limit: 10 });
      const begun = performance.now();
      try {
        const response = await fetch(url, { method: "POST", headers, body });
        await response.arrayBuffer();
        if (!response.ok) failures++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - begun);
    }
  }),
);
const durationUs = Math.round((performance.now() - started) * 1000);
latencies.sort((a, b) => a - b);
const percentile = (p: number) => Math.round((latencies[Math.floor((latencies.length - 1) * p)] ?? 0) * 1000);
console.log(
  JSON.stringify({
    requests: latencies.length,
    duration_us: durationUs,
    failures,
    p50_us: percentile(0.5),
    p95_us: percentile(0.95),
    p99_us: percentile(0.99),
  }),
);
