/**
 * Records delivery outcomes in batches: every outcome finished in the same turn of the event loop
 * shares one transaction (the same group commit as inserts), so 10,000 deliveries/s cost a few
 * hundred commits, not 10,000. After the commit, `onRecorded` sees the batch and which applied.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { AttemptOutcome, Store } from '../store/store.ts';

export const RECORD_BATCH_MAX = 2_000;

export interface RecordedOutcome<T> {
  outcome: AttemptOutcome;
  context: T;
}

export class OutcomeRecorder<T> {
  private queue: RecordedOutcome<T>[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;

  constructor(
    private readonly store: Pick<Store, 'eventRecordAttempts'>,
    private readonly clock: Clock,
    private readonly onRecorded: (batch: RecordedOutcome<T>[], applied: boolean[]) => void,
    private readonly logger: Logger,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  add(outcome: AttemptOutcome, context: T): void {
    this.queue.push({ outcome, context });
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  /** Writes everything queued; resolves when the queue is empty. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    while (this.queue.length > 0) {
      this.flushing = this.flushBatch(this.queue.splice(0, RECORD_BATCH_MAX));
      await this.flushing;
      this.flushing = null;
    }
  }

  private async flushBatch(batch: RecordedOutcome<T>[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await this.store.eventRecordAttempts({ outcomes: batch.map((b) => b.outcome), now: this.clock.now() });
        this.onRecorded(batch, applied);
        return;
      } catch (err) {
        // The store is down: the events stay executing in the store and their results are kept
        // here; keep trying with a bounded backoff. A restart would rescue them (at-least-once).
        this.logger.error({ err, count: batch.length, attempt }, 'recording delivery outcomes failed; retrying');
        await this.clock.sleep(Math.min(5_000, 100 * 2 ** Math.min(attempt, 6)));
      }
    }
  }
}
