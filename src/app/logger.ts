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

/** Secrets shorter than this are not masked: they would mask ordinary words (config enforces longer ones). */
const MIN_MASKED_SECRET_LENGTH = 8;

/**
 * `secrets` (API keys, the JWT secret) are masked wherever they appear in a line: no code path is
 * meant to log one, and this makes sure none does, e.g. inside a provider's error message.
 */
export function createLogger(minimum: LogLevel, secrets: readonly string[] = []): Logger {
  const masked = secrets
    .filter((secret) => secret.length >= MIN_MASKED_SECRET_LENGTH)
    .map((secret) => JSON.stringify(secret).slice(1, -1)); // as the secret appears inside JSON text
  const write = (level: LogLevel) => (event: Record<string, unknown>) => {
    if (RANK[level] < RANK[minimum]) return;
    let line = JSON.stringify({ time: new Date().toISOString(), level, ...event }, errorsAsText);
    for (const secret of masked) line = line.replaceAll(secret, "[redacted]");
    (level === "error" ? process.stderr : process.stdout).write(`${line}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

export interface TapOptions {
  /** Fields every line gets first, e.g. the id of the request being served (request-context.ts). */
  fields?: () => Record<string, unknown>;
  /** Sees every event, whatever the minimum level, before it is written: metrics are derived here. */
  observe?: (event: Record<string, unknown>) => void;
}

/**
 * The one place where events become both log lines and metrics: `logger` with `fields` added to
 * each event and each event shown to `observe` (the service's metrics), whatever its level.
 */
export function tapLogger(logger: Logger, { fields, observe }: TapOptions): Logger {
  const tap =
    (write: Log): Log =>
    (event) => {
      const full = fields ? { ...fields(), ...event } : event;
      observe?.(full);
      write(full);
    };
  return { debug: tap(logger.debug), info: tap(logger.info), warn: tap(logger.warn), error: tap(logger.error) };
}

/** Errors as name + message (and cause), never a stack: it would leak internals into log shippers. */
function errorsAsText(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const cause = value.cause instanceof Error ? `; cause: ${value.cause.name}: ${value.cause.message}` : "";
    return `${value.name}: ${value.message}${cause}`;
  }
  return value;
}
