/** The bytes of JSON's structure, for the scanners that read JSON text without parsing it. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;

/** Deepest nesting of arrays and objects accepted in any JSON this service reads (a body, an import item). */
export const MAX_JSON_DEPTH = 32;

/**
 * The deepest nesting of arrays and objects in JSON text, found in one pass over its bytes without
 * parsing it. Run before JSON.parse and validation: both cost far more than linear time on deeply
 * nested input (a 60 KB body of brackets held the event loop for seconds), and no body this API
 * takes is nested more than a few levels.
 */
export function jsonDepthExceeds(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/**
 * The first object (at any depth) with an own `__proto__` key, which JSON.parse creates but schema
 * validation does not see as a field: such a body is refused like any unknown field.
 */
export function hasProtoKey(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (!Array.isArray(value) && Object.hasOwn(value, "__proto__")) return true;
  return Object.values(value).some(hasProtoKey);
}
