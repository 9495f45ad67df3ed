import { DatabaseReadOnly, DatabaseUnavailable } from "../../domain/errors.ts";
import { connectPostgres, type SqlClient } from "./sql-client.ts";

/** What the hosts of DATABASE_URL offer now. */
export type PrimaryState =
  /** One of them is a primary: writes go there. */
  | "writable"
  /** Every host that answers is a hot standby: reads only (a standby-only start, or a failover under way). */
  | "read-only"
  /** No host answers. */
  | "unreachable";

export interface PrimaryWatchOptions {
  /** Time between two looks, in ms (default 1000). */
  probeEveryMs?: number;
  /** Longest wait for a host's answer, in ms (default 2000). */
  probeTimeoutMs?: number;
  /** As connectPostgres's option of that name (DATABASE_TRANSACTION_POOLER). */
  transactionPooler?: boolean;
  /** `database_primary` {state, previous} whenever the state changes. */
  log?: (event: Record<string, unknown>) => void;
}

/**
 * The hosts of a postgres URL (`postgres://u@h1:5432,h2:5433/db?...`), each as a URL of its own,
 * without target_session_attrs.
 */
export function hostUrls(url: string): string[] {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?]*@)?([^/?]*)(.*)$/.exec(url);
  if (!match) throw new Error("not a postgres:// URL");
  const [, scheme, credentials = "", hosts = "", rest = ""] = match;
  const [path = "", query = ""] = rest.split("?", 2);
  const params = new URLSearchParams(query);
  params.delete("target_session_attrs");
  const search = params.size > 0 ? `?${params}` : "";
  return hosts
    .split(",")
    .filter(Boolean)
    .map((host) => `${scheme}${credentials}${host}${path}${search}`);
}

/**
 * Watches which host of DATABASE_URL is the primary, by asking each one, on a connection of its
 * own, `pg_is_in_recovery()` every second, and guards the write pool with what it sees: while no
 * primary answers, a write fails at once with DatabaseReadOnly (standbys answer) or
 * DatabaseUnavailable (nothing does), so a client gets 503 with Retry-After instead of waiting:
 * postgres.js, told `target_session_attrs=primary`, goes on trying the hosts without failing the
 * queries that wait for a connection (measured: a write waited for its statement timeout), and told
 * `read-write` it takes a hot standby for a primary (it reads `default_transaction_read_only`, which
 * a standby reports off). Writes under way when the primary is lost are failed then too. Once a
 * host answers as a primary (a standby promoted, the primary back), writes go through again.
 */
export class PrimaryWatch {
  private current: PrimaryState = "unreachable";
  private everWritable = false;
  private readonly probes: SqlClient[];
  private timer: ReturnType<typeof setInterval> | undefined;
  private probing: Promise<PrimaryState> | undefined;
  /** Rejected when the primary is lost: the writes under way then fail with it. */
  private lost = PromiseWithLoss();

  constructor(
    url: string,
    private readonly options: PrimaryWatchOptions = {},
  ) {
    const timeoutMs = options.probeTimeoutMs ?? 2000;
    this.probes = hostUrls(url).map((hostUrl) =>
      connectPostgres(hostUrl, {
        maxConnections: 1,
        connectTimeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
        queryTimeoutMs: timeoutMs,
        transactionPooler: options.transactionPooler,
        // A probe's question is worth nothing once closed: a connection still being made to a host
        // that does not answer is dropped at once, not waited for 5 s (a command's exit waited so).
        closeTimeoutSeconds: 0,
      }),
    );
  }

  get state(): PrimaryState {
    return this.current;
  }

  /** True while the primary these hosts had is gone and none has replaced it (a failover under way). */
  get primaryLost(): boolean {
    return this.everWritable && this.current !== "writable";
  }

  /** Asks every host once and updates the state. */
  probe(): Promise<PrimaryState> {
    this.probing ??= this.probeNow().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /** Looks again every probeEveryMs until close(). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.probe(), this.options.probeEveryMs ?? 1000);
    this.timer.unref();
  }

  /** `writes` whose statements fail at once while there is no primary (and when it is lost under them). */
  guard(writes: SqlClient): SqlClient {
    const guarded =
      <A extends unknown[], R>(operation: (...args: A) => Promise<R>) =>
      (...args: A): Promise<R> => {
        if (this.current !== "writable") return Promise.reject(this.refusal());
        const pending = operation(...args);
        pending.catch(() => {});
        return Promise.race([pending, this.lost.promise]);
      };
    return {
      query: guarded((text: string, params?: readonly unknown[]) => writes.query(text, params)),
      transaction: guarded(<R>(fn: (tx: SqlClient) => Promise<R>) => writes.transaction(fn)),
      copyIn: guarded((table: string, columns: readonly string[], data: Uint8Array) =>
        writes.copyIn(table, columns, data),
      ),
      // Not a write: listening goes on through a failover (postgres.js makes its connection again,
      // on the new primary, and says so: Authenticate then forgets what it remembered).
      ...(writes.listen ? { listen: writes.listen.bind(writes) } : {}),
      close: () => writes.close(),
    } as SqlClient;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.probing?.catch(() => {});
    await Promise.all(this.probes.map((probe) => probe.close().catch(() => {})));
  }

  private refusal(): DatabaseUnavailable {
    return this.current === "read-only" ? new DatabaseReadOnly() : new DatabaseUnavailable();
  }

  private async probeNow(): Promise<PrimaryState> {
    const answers = await Promise.all(
      this.probes.map((probe) =>
        probe.query<{ standby: boolean }>("SELECT pg_is_in_recovery() AS standby").then(
          ([row]) => (row?.standby ? "standby" : "primary"),
          () => "down",
        ),
      ),
    );
    const state: PrimaryState = answers.includes("primary")
      ? "writable"
      : answers.includes("standby")
        ? "read-only"
        : "unreachable";
    if (state === "writable") this.everWritable = true;
    if (state !== this.current) {
      const previous = this.current;
      this.current = state;
      if (previous === "writable") {
        this.lost.reject(this.refusal());
        this.lost = PromiseWithLoss();
      }
      this.options.log?.({ event: "database_primary", state, previous });
    }
    return state;
  }
}

/** A promise that only ever rejects (when the primary is lost), handled so that nobody waiting is no error. */
function PromiseWithLoss(): { promise: Promise<never>; reject: (error: Error) => void } {
  const { promise, reject } = Promise.withResolvers<never>();
  promise.catch(() => {});
  return { promise, reject };
}
