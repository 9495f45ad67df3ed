/** Structured logs: one JSON object per line on stdout (errors on stderr). */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type Log = (event: Record<string, unknown>) => void;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug: Log;
  info: Log;
  warn: Log;
  error: Log;
}

export function createLogger(minimum: LogLevel): Logger {
  const write = (level: LogLevel) => (event: Record<string, unknown>) => {
    if (RANK[level] < RANK[minimum]) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level, ...event }, errorsAsText);
    (level === "error" ? process.stderr : process.stdout).write(`${line}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

/** Errors as name + message (and cause), never a stack: it would leak internals into log shippers. */
function errorsAsText(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const cause = value.cause instanceof Error ? `; cause: ${value.cause.name}: ${value.cause.message}` : "";
    return `${value.name}: ${value.message}${cause}`;
  }
  return value;
}
