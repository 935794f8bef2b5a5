/**
 * Group commit: items handed in by concurrent callers are written together, one write for all
 * the items waiting, and each caller's promise settles only once the write holding its item has
 * committed (or failed). A batch starts on the event loop's next turn after the first item, so
 * every call that reaches its write in the same turn joins it. At most `concurrency` batches are
 * written at once; the items that arrive while they all are wait for the next batch, which starts
 * as soon as one of them ends.
 *
 * A batch that fails is written again item by item, so one bad item (a value the database refuses)
 * fails only its own caller, unless `isFinal` says the failure is the database's (unreachable, or a
 * commit whose answer was lost): every caller of that batch is then failed with it, and none is
 * written twice.
 */
export class GroupCommit<T> {
  readonly #write: (items: T[]) => Promise<void>;
  readonly #isFinal: (error: unknown) => boolean;
  readonly #maxBatch: number;
  readonly #concurrency: number;
  #queue: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** Writers scheduled for the next turn, not started yet (one at most: it takes every item waiting). */
  #scheduled = 0;
  /** Writers started, each taking batches until the queue is empty. */
  #active = 0;

  constructor(write: (items: T[]) => Promise<void>, options: { isFinal: (error: unknown) => boolean; maxBatch: number; concurrency: number }) {
    this.#write = write;
    this.#isFinal = options.isFinal;
    this.#maxBatch = options.maxBatch;
    this.#concurrency = options.concurrency;
  }

  /** Writes the item with the others waiting; settles when the write holding it has committed. */
  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** A writer for the items waiting, unless one is scheduled already or all are busy (one of them takes them next). */
  #schedule(): void {
    if (this.#queue.length === 0 || this.#scheduled > 0 || this.#active >= this.#concurrency) return;
    this.#scheduled++;
    setImmediate(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    this.#scheduled--;
    this.#active++;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        // What is left (more than a batch) may go to another writer meanwhile.
        this.#schedule();
        try {
          await this.#write(batch.map((entry) => entry.item));
          for (const entry of batch) entry.resolve();
        } catch (error) {
          if (batch.length === 1 || this.#isFinal(error)) {
            for (const entry of batch) entry.reject(error);
            continue;
          }
          for (const entry of batch) {
            try {
              await this.#write([entry.item]);
              entry.resolve();
            } catch (alone) {
              entry.reject(alone);
            }
          }
        }
      }
    } finally {
      this.#active--;
    }
  }
}
