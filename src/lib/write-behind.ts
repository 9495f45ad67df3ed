/**
 * When a write-behind queue is stored: `delayMs` after the first record queued since the last
 * store, or at once when the queue is full; stores run one after the other, never two at once.
 * The queue and how it is stored are the owner's (`store`, which must not reject).
 */
export class WriteBehindSchedule {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The store running (or the last one). Never rejects. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: () => Promise<void>,
    private readonly delayMs: number,
  ) {}

  /** A record was queued: stores now when the queue is `full`, else within `delayMs`. */
  queued(full: boolean): void {
    if (full) {
      void this.flush();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.delayMs);
      this.timer.unref?.();
    }
  }

  /** Stores what is queued now, after any store running; resolves when it is stored (or dropped). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.writing.then(() => this.store());
    return this.writing;
  }
}
