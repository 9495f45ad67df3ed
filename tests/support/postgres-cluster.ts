/**
 * A throwaway PostgreSQL cluster of the test's own, for tests that stop and restart the server (the
 * shared TEST_DATABASE_URL server must stay up for everyone else). Uses the PostgreSQL binaries in
 * TEST_PG_BIN (default: Debian's PostgreSQL 15, as .ci/postgres.sh installs it, with pgvector); as
 * root, the server runs as the `postgres` user.
 */
import { chownSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "./temp-dirs.ts";

export const PG_BIN = Bun.env.TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/** True when a cluster with pgvector can be made here (the binaries, pgvector, and as root a postgres user). */
export function canRunPostgresCluster(): boolean {
  if (!["initdb", "pg_ctl", "pg_config"].every((program) => existsSync(join(PG_BIN, program)))) return false;
  const sharedir = Bun.spawnSync([join(PG_BIN, "pg_config"), "--sharedir"])
    .stdout.toString()
    .trim();
  if (!existsSync(join(sharedir, "extension", "vector.control"))) return false;
  return process.getuid?.() !== 0 || Bun.spawnSync(["id", "-u", "postgres"]).exitCode === 0;
}

export interface PostgresCluster {
  url: string;
  /** `pg_ctl restart -m fast`: every connection is cut, the server is back when it resolves. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const dir = makeTempDir("pg");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString());
    const gid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const port = 30_000 + Math.floor(Math.random() * 20_000);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=50`;

  const sh = async (command: string) => {
    const argv = asRoot ? ["su", "postgres", "-c", command] : ["sh", "-c", command];
    // The server inherits no pipe of ours (its output goes to the log), so this returns once pg_ctl does.
    const child = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" });
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    if (code !== 0) throw new Error(`${command} failed (${code}): ${stderr}`);
  };
  const pgCtl = (action: string) => sh(`${PG_BIN}/pg_ctl -D ${data} -l ${dir}/server.log -w -o '${options}' ${action}`);

  await sh(`${PG_BIN}/initdb -D ${data} --auth=trust -U postgres -E UTF8 --locale=C.UTF-8`);
  await pgCtl("start");
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    restart: () => pgCtl("restart -m fast"),
    async stop() {
      await pgCtl("stop -m immediate").catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
