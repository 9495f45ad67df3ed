/**
 * A PostgreSQL WAL position (`pg_lsn`) as text, e.g. `0/16B3748`: two hexadecimal numbers of up to
 * 32 bits. Read-your-writes across instances passes it from a write's answer to the reads that must
 * see it (the X-Read-After header); the HTTP adapter checks a client's, the database adapter
 * compares them.
 */
const WAL_POSITION = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

/** The position as a number (comparable), or undefined when `text` is not one. */
export function walPositionValue(text: string): bigint | undefined {
  const match = WAL_POSITION.exec(text);
  if (!match) return undefined;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** The position in PostgreSQL's own spelling (upper case, no leading zeros), or undefined when `text` is not one. */
export function canonicalWalPosition(text: string): string | undefined {
  const value = walPositionValue(text.trim());
  if (value === undefined) return undefined;
  return `${(value >> 32n).toString(16).toUpperCase()}/${(value & 0xffffffffn).toString(16).toUpperCase()}`;
}
