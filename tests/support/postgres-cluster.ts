/**
 * Throwaway PostgreSQL clusters of the test's own, for tests that stop, restart, kill or promote the
 * server (the shared TEST_DATABASE_URL server must stay up for everyone else): a primary, and hot
 * standbys streaming from it, made as an operator makes one (`pg_basebackup -R`). Uses the PostgreSQL
 * binaries in TEST_PG_BIN (default: Debian's PostgreSQL 15, as .ci/postgres.sh installs it, with
 * pgvector); as root, the servers run as the `postgres` user. (initdb --auth=trust already lets
 * 127.0.0.1 replicate, and PostgreSQL 15's defaults stream: wal_level replica, 10 WAL senders.)
 */
import { chownSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../scripts/free-port.ts";
import { makeTempDir } from "./temp-dirs.ts";

export const PG_BIN = Bun.env.TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/** True when a cluster with pgvector can be made here (the binaries, pgvector, and as root a postgres user). */
export function canRunPostgresCluster(): boolean {
  if (!["initdb", "pg_ctl", "pg_config", "pg_basebackup"].every((program) => existsSync(join(PG_BIN, program)))) {
    return false;
  }
  const sharedir = Bun.spawnSync([join(PG_BIN, "pg_config"), "--sharedir"])
    .stdout.toString()
    .trim();
  if (!existsSync(join(sharedir, "extension", "vector.control"))) return false;
  return process.getuid?.() !== 0 || Bun.spawnSync(["id", "-u", "postgres"]).exitCode === 0;
}

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  host: string;
  port: number;
  /** `pg_ctl restart -m fast`: every connection is cut, the server is back when it resolves. */
  restart(): Promise<void>;
  /** SIGKILL to the postmaster (and so its backends): a machine that died, not a clean stop. */
  kill(): Promise<void>;
  /** `pg_ctl promote` on a standby: resolves once it accepts writes. */
  promote(): Promise<void>;
  /**
   * `kill -9` of one server process, as a crash would: the server then ends every other session and
   * restarts them all (crash recovery). Resolves once it accepts connections again.
   */
  killServerProcess(pid: number): Promise<void>;
  /** The server's log so far (its errors, and every statement that failed with the statement's text). */
  log(): string;
  stop(): Promise<void>;
}

export interface StandbyOptions {
  /** recovery_min_apply_delay: the standby replays each commit this long after the primary made it. */
  applyDelayMs?: number;
  /** Make it a synchronous standby of the primary (synchronous_standby_names names it). */
  synchronous?: boolean;
}

/** Runs a shell command as the servers' owner; rejects with its stderr when it fails. */
async function sh(command: string): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const argv = asRoot ? ["su", "postgres", "-c", command] : ["sh", "-c", command];
  // The server inherits no pipe of ours (its output goes to the log), so this returns once pg_ctl does.
  const child = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  if (code !== 0) throw new Error(`${command} failed (${code}): ${stderr}`);
}

/** A folder the servers' owner can write. */
function serverDir(prefix: string): string {
  const dir = makeTempDir(prefix);
  if (process.getuid?.() === 0) {
    const uid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString());
    const gid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString());
    chownSync(dir, uid, gid);
  }
  return dir;
}

/** A cluster whose data folder is `dir`/data, once its files are there. */
async function runCluster(dir: string, port: number, extraOptions = ""): Promise<PostgresCluster> {
  const data = join(dir, "data");
  // fsync off: these tests kill PostgreSQL's processes, never the machine, and what a process had
  // written survives it in the page cache (synchronous_commit stays on: a commit acknowledged is in
  // the WAL, and the tests check that nothing acknowledged is lost). Dynamic shared memory as files
  // in the data folder: a killed server's POSIX segments would stay in /dev/shm after its folder is gone.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=60 -c fsync=off -c full_page_writes=off -c dynamic_shared_memory_type=mmap ${extraOptions}`;
  const pgCtl = (action: string) => sh(`${PG_BIN}/pg_ctl -D ${data} -l ${dir}/server.log -w -o '${options}' ${action}`);
  await pgCtl("start");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const log = () => readFileSync(join(dir, "server.log"), "utf8");
  // A connection can succeed in the moment between a process's death and the postmaster's reaction
  // to it: the server is back when its log says so.
  const timesReady = () => log().split("database system is ready to accept connections").length;
  return {
    url,
    host: "127.0.0.1",
    port,
    restart: () => pgCtl("restart -m fast"),
    async kill() {
      const pid = (await Bun.file(join(data, "postmaster.pid")).text()).split("\n")[0]?.trim();
      if (pid) process.kill(Number(pid), "SIGKILL");
      // Until the port is free: the backends die with their postmaster.
      for (let i = 0; i < 200 && (await accepts(port)); i++) await Bun.sleep(25);
    },
    promote: () => pgCtl("promote"),
    log,
    async killServerProcess(pid: number) {
      const readyBefore = timesReady();
      process.kill(pid, "SIGKILL");
      while (timesReady() === readyBefore) await Bun.sleep(20);
    },
    async stop() {
      await pgCtl("stop -m immediate").catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function accepts(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * A new primary (initdb, trust on loopback), started. It keeps 64 MB of WAL besides what slots hold:
 * two standbys made at once each force a checkpoint, and under load one of them recycled the WAL
 * segment the other's pg_basebackup was about to stream, before its slot was made ("requested WAL
 * segment ... has already been removed").
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const dir = serverDir("pg");
  await sh(`${PG_BIN}/initdb -D ${join(dir, "data")} --auth=trust -U postgres -E UTF8 --locale=C.UTF-8`);
  return runCluster(dir, await freePort(), "-c wal_keep_size=64MB");
}

/**
 * A hot standby of `primary`, as an operator makes one: `pg_basebackup -R` (which writes
 * primary_conninfo and standby.signal), then started; resolves once it has caught up with the
 * primary's WAL at the time of the call. `synchronous`: the primary then waits for this standby's
 * flush at every commit (synchronous_standby_names), so no acknowledged write is lost when it is
 * promoted.
 */
export async function startStandby(primary: PostgresCluster, options: StandbyOptions = {}): Promise<PostgresCluster> {
  const dir = serverDir("pg-standby");
  const name = `standby_${(await freePort()).toString()}`;
  const data = join(dir, "data");
  await sh(
    // A replication slot of its own (-C -S, named in the standby's settings by -R): the primary keeps
    // every WAL segment until this standby has it, however busy the machine (without one, a loaded run
    // failed with "requested WAL segment has already been removed" before the standby started).
    `${PG_BIN}/pg_basebackup -h ${primary.host} -p ${primary.port} -U postgres -D ${data} -R -X stream -C -S ${name} -c fast -d 'application_name=${name}'`,
  );
  const delay = options.applyDelayMs ? `-c recovery_min_apply_delay=${options.applyDelayMs}ms` : "";
  const standby = await runCluster(dir, await freePort(), `-c hot_standby_feedback=on ${delay}`);
  if (options.synchronous) {
    await psql(primary, `ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
    await psql(primary, "SELECT pg_reload_conf()");
  }
  return standby;
}

/** Runs one statement with psql against `cluster` (as postgres); resolves to its unaligned output. */
export async function psql(cluster: PostgresCluster, statement: string): Promise<string> {
  const child = Bun.spawn(
    [join(PG_BIN, "psql"), "-h", cluster.host, "-p", String(cluster.port), "-U", "postgres", "-Atqc", statement],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [code, out, err] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  if (code !== 0) throw new Error(`psql: ${statement}: ${err}`);
  return out.trim();
}

/** Waits (bounded) until `standby` has replayed everything `primary` has written so far. */
export async function caughtUp(primary: PostgresCluster, standby: PostgresCluster, timeoutMs = 30_000): Promise<void> {
  const target = await psql(primary, "SELECT pg_current_wal_lsn()");
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if ((await psql(standby, `SELECT pg_last_wal_replay_lsn() >= '${target}'::pg_lsn`)) === "t") return;
    await Bun.sleep(20);
  }
  throw new Error(`the standby did not replay ${target} within ${timeoutMs} ms`);
}
