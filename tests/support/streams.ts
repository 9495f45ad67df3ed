export interface Drained<E> {
  events: E[];
  /** What the iteration threw, if it did. */
  error?: Error;
}

/** Reads a stream to its end: every event it sent, and the error it ended with, if any. */
export async function drain<E>(stream: AsyncIterable<E>): Promise<Drained<E>> {
  const events: E[] = [];
  try {
    for await (const event of stream) events.push(event);
    return { events };
  } catch (error) {
    return { events, error: error as Error };
  }
}

/**
 * Like drain, but calls `then` once the first event is read: e.g. to let a fake server cut the
 * connection only when the client has read that far.
 */
export async function drainAfterFirst<E>(stream: AsyncIterable<E>, then: () => void): Promise<Drained<E>> {
  const events: E[] = [];
  const iterator = stream[Symbol.asyncIterator]();
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (events.push(next.value) === 1) then();
    }
    return { events };
  } catch (error) {
    if (events.length === 0) then();
    return { events, error: error as Error };
  }
}

/** What a client shows after these events: the deltas since the last reset, joined. */
export function shownText(events: readonly { type: string; text?: string }[]): string {
  let text = "";
  for (const event of events) {
    if (event.type === "reset") text = "";
    else if (event.type === "delta") text += event.text ?? "";
  }
  return text;
}

/** The event types in order, deltas merged: e.g. ["delta", "reset", "delta", "done"]. */
export function shape(events: readonly { type: string }[]): string[] {
  const types: string[] = [];
  for (const { type } of events) if (type !== "delta" || types.at(-1) !== "delta") types.push(type);
  return types;
}
