const MAX_REASON_LENGTH = 300;

/**
 * An error as "Name: message" for the log, bounded, with anything shaped like a credential masked:
 * provider errors may echo a request URL (`?key=...`) or a header.
 */
export function describeError(error: Error): string {
  const text = `${error.name}: ${error.message}`
    .replace(/\b(key|api[_-]?key|token|access_token|secret|password)=[^&\s"']+/gi, "$1=[redacted]")
    .replace(/\b(Bearer|Basic)\s+[\w.~+/=-]+/gi, "$1 [redacted]")
    .replace(/\b(sk-[\w-]{8,}|AIza[\w-]{20,})/g, "[redacted]");
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}
