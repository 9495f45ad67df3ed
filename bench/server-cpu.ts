/**
 * What /proc shows of the benchmarks' processes, for a PostgreSQL server on this machine: a
 * process's CPU time, the whole server's (its postmaster, the processes it runs, and those that
 * ended) and its memory, and the machine's busy time.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { SqlClient } from "../src/adapters/postgres/sql-client.ts";

const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** /proc/PID/stat's fields after the command's name (field 3 is index 0). */
const statFields = (pid: number) => (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");

/** A process's CPU time in ms (its own, and with `children` that of the children it has waited for). */
export function processCpuMs(pid: number, children = false): number {
  const fields = statFields(pid);
  const ticks = [11, 12, ...(children ? [13, 14] : [])].reduce((sum, i) => sum + Number(fields[i]), 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

/** The PostgreSQL server's postmaster when it runs on this machine and /proc shows it; else undefined. */
export async function postmasterOf(db: SqlClient): Promise<number | undefined> {
  try {
    const [row] = await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const postmaster = Number(statFields(Number(row?.pid))[1]);
    return readFileSync(`/proc/${postmaster}/cmdline`, "utf8").includes("postgres") ? postmaster : undefined;
  } catch {
    return undefined;
  }
}

/** The server's processes running now: the postmaster and those it started. */
function serverProcesses(postmaster: number): number[] {
  const pids = [postmaster];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === postmaster) continue;
    try {
      if (Number(statFields(pid)[1]) === postmaster) pids.push(pid);
    } catch {
      // It ended meanwhile.
    }
  }
  return pids;
}

/** Adds `read(pid)` over the server's processes; one that ends meanwhile counts for nothing. */
function sumOverServer(postmaster: number, read: (pid: number) => number): number {
  let sum = 0;
  for (const pid of serverProcesses(postmaster)) {
    try {
      sum += read(pid);
    } catch {
      // It ended meanwhile (its CPU time went to the postmaster's children's).
    }
  }
  return sum;
}

/** The whole server's CPU time in ms: the postmaster, its live processes, and those that have ended. */
export function serverCpuMs(postmaster: number): number {
  return sumOverServer(postmaster, (pid) => processCpuMs(pid, pid === postmaster));
}

/** The server's memory (proportional set size: shared buffers counted once) in MB; undefined when unreadable. */
export function serverMemoryMb(postmaster: number): number | undefined {
  const kb = sumOverServer(postmaster, (pid) => {
    const pss = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return Number(pss?.[1] ?? 0);
  });
  return kb > 0 ? Math.round(kb / 1024) : undefined;
}

/** The machine's busy CPU time (all cores, idle and I/O wait left out), in ms, from /proc/stat. */
export function machineBusyMs(): number {
  const [, ...ticks] = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0); // idle, iowait
  return ((total - idle) * 1000) / CLOCK_TICKS;
}
