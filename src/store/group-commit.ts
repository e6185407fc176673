/**
 * Group commit: concurrent single-event requests share one transaction. Each caller's promise
 * resolves after the transaction holding its events commits, so a 201 still means "on disk",
 * while the fsync is paid once per batch instead of once per request.
 *
 * A flush starts on the next turn of the event loop after the first pending insert (so every
 * request parsed in the same turn joins it) and at most `batchEventsMax` events and
 * `transactionPayloadBytesMax` payload bytes go in one transaction. The bound in bytes is what
 * keeps one transaction short when payloads are large: the largest batches (4 MiB of payloads
 * each) that waited together were merged into inserts of 8-12 MiB that held SQLite (synchronous
 * in process) and the event loop for 50-160 ms, against 25-57 ms for one batch each
 * (test/slow/group-commit-bytes.test.ts). A request is never split, so one larger than the
 * bound goes in a transaction of its own.
 *
 * Up to `flushesInFlightMax` (2) transactions are in flight at once, so the store always holds
 * the next one while it commits the current one: with one at a time, the SQLite
 * thread sat idle while the event loop took a transaction's results and sent the next, and a
 * PostgreSQL connection while the other waited for its commit (measured with
 * `npm run bench -- ingest --systems belfry`: batch ingest +19 % on SQLite, +44 % on PostgreSQL;
 * a third in flight added nothing). Each transaction is whole on its own, so which of two
 * commits first changes nothing a caller sees: each hears back after its own commit.
 *
 * The queue is bounded, in events and in payload characters: when the store falls behind (a slow
 * disk, a PostgreSQL primary under load), an insert that does not fit is refused at once with
 * WriteQueueFullError (the API answers 503 with Retry-After) instead of holding ever more
 * requests in memory. An insert always fits an empty queue, so no request is too big to ever go.
 */
import type { EventInsertResult, NewEvent, Store } from './store.ts';

interface Pending {
  events: NewEvent[];
  payloadChars: number;
  payloadBytes: number;
  resolve: (results: EventInsertResult[]) => void;
  reject: (err: unknown) => void;
}

/** Events in one transaction. */
export const GROUP_COMMIT_EVENTS_MAX = 5_000;
/**
 * Payload bytes (UTF-8) in one transaction: about one of the largest batches with the default
 * limits (1,000 events of 4 KiB), whose insert takes tens of ms. Smaller requests are merged up to
 * it; a larger one goes alone.
 */
export const GROUP_COMMIT_PAYLOAD_BYTES_MAX = 4 * 1024 * 1024;
/** Transactions sent to the store and not yet answered. */
export const GROUP_COMMIT_FLUSHES_IN_FLIGHT_MAX = 2;
/** Events waiting for a transaction: ten full ones, about a second of SQLite's batch ingest. */
export const GROUP_COMMIT_QUEUE_EVENTS_MAX = 50_000;
/** Payload characters waiting for a transaction: what bounds memory when payloads are large. */
export const GROUP_COMMIT_QUEUE_PAYLOAD_CHARS_MAX = 256 * 1024 * 1024;
/** What a refused insert tells the client to wait before trying again. */
export const WRITE_QUEUE_RETRY_AFTER_S = 1;

export interface GroupCommitOptions {
  batchEventsMax?: number;
  /** Payload bytes in one transaction (default GROUP_COMMIT_PAYLOAD_BYTES_MAX). */
  transactionPayloadBytesMax?: number;
  flushesInFlightMax?: number;
  queueEventsMax?: number;
  queuePayloadCharsMax?: number;
  /** Told of every refused insert (a metric). */
  onRejected?: () => void;
}

/** The write queue is full: the store is behind. Not the client's fault; try again shortly. */
export class WriteQueueFullError extends Error {
  override name = 'WriteQueueFullError';
  readonly retryAfterS = WRITE_QUEUE_RETRY_AFTER_S;
}

export class GroupCommitter {
  private queue: Pending[] = [];
  private queuedEvents = 0;
  private queuedPayloadChars = 0;
  /** Transactions in flight. */
  private flushing = 0;
  private scheduled = false;
  private readonly batchEventsMax: number;
  private readonly transactionPayloadBytesMax: number;
  private readonly flushesInFlightMax: number;
  private readonly queueEventsMax: number;
  private readonly queuePayloadCharsMax: number;

  constructor(
    private readonly store: Pick<Store, 'eventInsertMany'>,
    private readonly now: () => number,
    private readonly opts: GroupCommitOptions = {},
  ) {
    this.batchEventsMax = opts.batchEventsMax ?? GROUP_COMMIT_EVENTS_MAX;
    this.transactionPayloadBytesMax = opts.transactionPayloadBytesMax ?? GROUP_COMMIT_PAYLOAD_BYTES_MAX;
    this.flushesInFlightMax = opts.flushesInFlightMax ?? GROUP_COMMIT_FLUSHES_IN_FLIGHT_MAX;
    this.queueEventsMax = opts.queueEventsMax ?? GROUP_COMMIT_QUEUE_EVENTS_MAX;
    this.queuePayloadCharsMax = opts.queuePayloadCharsMax ?? GROUP_COMMIT_QUEUE_PAYLOAD_CHARS_MAX;
  }

  /**
   * Inserts `events` in the next group transaction; resolves with their results, in order.
   * Rejects at once with WriteQueueFullError when they do not fit the queue.
   */
  insert(events: NewEvent[]): Promise<EventInsertResult[]> {
    const payloadChars = events.reduce((sum, e) => sum + e.payload.length, 0);
    if (!this.fits(events.length, payloadChars)) {
      this.opts.onRejected?.();
      return Promise.reject(
        new WriteQueueFullError(
          `the write queue is full (${this.queuedEvents} events, ${this.queuedPayloadChars} payload characters waiting for the store)`,
        ),
      );
    }
    // Counted once a request is let in: a scan of its payloads, far cheaper than their insert.
    const payloadBytes = events.reduce((sum, e) => sum + Buffer.byteLength(e.payload, 'utf8'), 0);
    return new Promise((resolve, reject) => {
      this.queue.push({ events, payloadChars, payloadBytes, resolve, reject });
      this.queuedEvents += events.length;
      this.queuedPayloadChars += payloadChars;
      this.schedule();
    });
  }

  private fits(events: number, payloadChars: number): boolean {
    if (this.queue.length === 0) return true;
    return (
      this.queuedEvents + events <= this.queueEventsMax &&
      this.queuedPayloadChars + payloadChars <= this.queuePayloadCharsMax
    );
  }

  private schedule(): void {
    if (this.scheduled || this.flushing >= this.flushesInFlightMax) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing >= this.flushesInFlightMax || this.queue.length === 0) return;
    this.flushing++;
    const batch: Pending[] = [];
    let count = 0;
    let payloadChars = 0;
    let payloadBytes = 0;
    while (this.queue.length > 0 && (batch.length === 0 || this.joins(this.queue[0], count, payloadBytes))) {
      const p = this.queue.shift()!;
      batch.push(p);
      count += p.events.length;
      payloadChars += p.payloadChars;
      payloadBytes += p.payloadBytes;
    }
    this.queuedEvents -= count;
    this.queuedPayloadChars -= payloadChars;
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
      this.flushing--;
      if (this.queue.length > 0) this.schedule();
    }
  }

  /** Whether `next` fits a transaction that holds `events` events and `payloadBytes` bytes already. */
  private joins(next: Pending, events: number, payloadBytes: number): boolean {
    return (
      events + next.events.length <= this.batchEventsMax &&
      payloadBytes + next.payloadBytes <= this.transactionPayloadBytesMax
    );
  }

  /** Events waiting for a transaction (for metrics and back-pressure). */
  get pendingEvents(): number {
    return this.queuedEvents;
  }
}
