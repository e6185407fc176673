/**
 * Group commit: concurrent single-event requests share one transaction. Each caller's promise
 * resolves after the transaction holding its events commits, so a 201 still means "on disk",
 * while the fsync is paid once per batch instead of once per request.
 *
 * A flush starts on the next turn of the event loop after the first pending insert (so every
 * request parsed in the same turn joins it) and at most `batchEventsMax` events go in one
 * transaction. While a flush runs, new inserts queue for the next one.
 */
import type { EventInsertResult, NewEvent, Store } from './store.ts';

interface Pending {
  events: NewEvent[];
  resolve: (results: EventInsertResult[]) => void;
  reject: (err: unknown) => void;
}

export const GROUP_COMMIT_EVENTS_MAX = 5_000;

export class GroupCommitter {
  private queue: Pending[] = [];
  private queuedEvents = 0;
  private flushing = false;
  private scheduled = false;

  constructor(
    private readonly store: Pick<Store, 'eventInsertMany'>,
    private readonly now: () => number,
    private readonly batchEventsMax = GROUP_COMMIT_EVENTS_MAX,
  ) {}

  /** Inserts `events` in the next group transaction; resolves with their results, in order. */
  insert(events: NewEvent[]): Promise<EventInsertResult[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ events, resolve, reject });
      this.queuedEvents += events.length;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const batch: Pending[] = [];
    let count = 0;
    while (this.queue.length > 0 && (batch.length === 0 || count + this.queue[0].events.length <= this.batchEventsMax)) {
      const p = this.queue.shift()!;
      batch.push(p);
      count += p.events.length;
    }
    this.queuedEvents -= count;
    try {
      const all = await this.store.eventInsertMany({ events: batch.flatMap((p) => p.events), now: this.now() });
      let offset = 0;
      for (const p of batch) {
        p.resolve(all.slice(offset, offset + p.events.length));
        offset += p.events.length;
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.flushing = false;
      if (this.queue.length > 0) this.schedule();
    }
  }

  /** Events waiting for a transaction (for metrics and back-pressure). */
  get pendingEvents(): number {
    return this.queuedEvents;
  }
}
