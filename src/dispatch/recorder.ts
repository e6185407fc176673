/**
 * Records delivery outcomes in batches: every outcome finished in the same turn of the event loop
 * shares one transaction (the same group commit as inserts), so 10,000 deliveries/s cost a few
 * hundred commits, not 10,000. After the commit, `onRecorded` sees the batch and which applied.
 *
 * Until its outcome commits, a delivery is one a crash makes again (a duplicate): that window is
 * kept short and measured (belfry_outcome_unrecorded_seconds). One commit at a time: after a
 * small batch the next starts as soon as the last ends (or on the next turn); after a large one
 * (RECORD_BATCH_LOADED or more: outcomes keep coming) at most every RECORD_INTERVAL_MS_MIN after
 * the last began, so the outcomes that finish meanwhile share one. A commit's fixed cost
 * dominates small batches (measured per outcome, CPU: 17 µs in batches of 10, 9 µs of 100, 6.5 µs
 * of 1,000), and at 8,000 deliveries/s one commit per turn of the event loop took 17 % of the
 * node's time. A full batch is written at once.
 *
 * A failed batch is retried with a bounded backoff only when retrying can cure it: while the
 * store is unavailable (for as long as it lasts: the dispatcher's backlog bounds what waits here,
 * and the scheduler claims nothing more meanwhile), or after a lost race (serialization failure,
 * deadlock, SQLITE_BUSY; at most RECORD_CONFLICT_RETRIES_MAX times). Any other failure sets the
 * batch aside: its outcomes are recorded one by one, so one poison outcome cannot stop the
 * others, and an outcome that fails alone is dropped (logged, counted). Its event stays
 * `executing` in the store until rescued (at the next start on SQLite, when this node's claim
 * lease ends in a cluster), then is delivered again: at least once holds.
 *
 *   batch ─fails─▶ unavailable ──────────────▶ retry, backoff (no count)
 *          │     ─▶ retryable, ≤ max times ──▶ retry, backoff
 *          └────▶ otherwise ─▶ set aside ─▶ each outcome alone, the same rules ─fails─▶ dropped
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Metrics } from '../core/metrics.ts';
import { storeFailureKind } from '../store/failure-kind.ts';
import type { AttemptOutcome, Store } from '../store/store.ts';

export const RECORD_BATCH_MAX = 500;
/** Least time between the starts of two commits after a large one (monotonic ms). */
export const RECORD_INTERVAL_MS_MIN = 5;
/** A batch this large means outcomes keep coming: the next commit waits for the interval. */
export const RECORD_BATCH_LOADED = 50;
/** Retries of one batch after lost races (serialization failure, deadlock, busy) before it is set aside. */
export const RECORD_CONFLICT_RETRIES_MAX = 5;
const RECORD_RETRY_DELAY_MS_MIN = 100;
const RECORD_RETRY_DELAY_MS_MAX = 5_000;

/** 100 ms, doubling, at most 5 s. */
export function recordRetryDelayMs(attempt: number): number {
  return Math.min(RECORD_RETRY_DELAY_MS_MAX, RECORD_RETRY_DELAY_MS_MIN * 2 ** Math.min(attempt, 6));
}

export type RecorderMetrics = Pick<Metrics, 'outcomeBatchesSetAside' | 'outcomesDropped' | 'outcomeUnrecordedSeconds'>;

export interface RecordedOutcome<T> {
  outcome: AttemptOutcome;
  context: T;
  /** When it was added (monotonic ms): its commit ends the window in which a crash repeats its delivery. */
  addedMs: number;
}

export class OutcomeRecorder<T> {
  private queue: RecordedOutcome<T>[] = [];
  /** A commit is in flight (one at a time). */
  private committing = false;
  /** A commit is due: on the next turn, or when `cancelTimer`'s timer fires. */
  private scheduled = false;
  private cancelTimer: (() => void) | null = null;
  private lastFlushMs = -Infinity;
  /** The last commit was a large batch: the next one waits for RECORD_INTERVAL_MS_MIN. */
  private loaded = false;
  /** flush() calls waiting for a commit to end. */
  private commitWaiters: (() => void)[] = [];

  constructor(
    private readonly store: Pick<Store, 'eventRecordAttempts'>,
    private readonly clock: Clock,
    private readonly onRecorded: (batch: RecordedOutcome<T>[], applied: boolean[]) => void,
    private readonly logger: Logger,
    private readonly metrics: RecorderMetrics,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  add(outcome: AttemptOutcome, context: T): void {
    this.queue.push({ outcome, context, addedMs: this.clock.monotonicMs() });
    this.schedule();
  }

  /** Arranges the next commit, unless one is arranged or in flight (its end arranges the next). */
  private schedule(): void {
    if (this.queue.length === 0 || this.committing) return;
    if (this.scheduled) {
      // A full batch does not wait for the interval.
      if (this.cancelTimer && this.queue.length >= RECORD_BATCH_MAX) {
        this.cancelTimer();
        this.cancelTimer = null;
        setImmediate(this.onScheduled);
      }
      return;
    }
    this.scheduled = true;
    const waitMs = this.loaded ? this.lastFlushMs + RECORD_INTERVAL_MS_MIN - this.clock.monotonicMs() : 0;
    if (waitMs <= 0 || this.queue.length >= RECORD_BATCH_MAX) setImmediate(this.onScheduled);
    else this.cancelTimer = this.clock.setTimer(waitMs, this.onScheduled);
  }

  private readonly onScheduled = (): void => {
    this.scheduled = false;
    this.cancelTimer = null;
    this.startFlush();
  };

  private startFlush(): void {
    if (this.queue.length === 0 || this.committing) return;
    const batch = this.queue.splice(0, RECORD_BATCH_MAX);
    this.committing = true;
    this.loaded = batch.length >= RECORD_BATCH_LOADED;
    this.flushBatch(batch)
      // Store failures are handled inside; this is a throw of onRecorded's (a bug), not to end the process.
      .catch((err: unknown) => this.logger.error({ err, count: batch.length }, 'handling recorded outcomes failed'))
      .finally(() => {
        this.committing = false;
        this.schedule();
        for (const wake of this.commitWaiters.splice(0)) wake();
      });
  }

  /** Writes everything queued; resolves when the queue is empty and no commit is in flight. */
  async flush(): Promise<void> {
    while (this.queue.length > 0 || this.committing) {
      if (this.queue.length > 0 && !this.committing) {
        this.startFlush();
        continue;
      }
      await new Promise<void>((wake) => this.commitWaiters.push(wake));
    }
  }

  private async flushBatch(batch: RecordedOutcome<T>[]): Promise<void> {
    this.lastFlushMs = this.clock.monotonicMs();
    const result = await this.record(batch);
    if (result.ok) {
      this.observeCommitted(batch);
      this.onRecorded(batch, result.applied);
      return;
    }
    this.metrics.outcomeBatchesSetAside.inc();
    this.logger.error(
      { err: result.err, count: batch.length },
      'recording delivery outcomes failed; set the batch aside, recording its outcomes one by one',
    );
    for (const item of batch) await this.recordAlone(item);
  }

  /** One outcome of a batch set aside; dropped when the store refuses it too. */
  private async recordAlone(item: RecordedOutcome<T>): Promise<void> {
    const one = await this.record([item]);
    if (one.ok) this.observeCommitted([item]);
    else {
      this.metrics.outcomesDropped.inc();
      const { tenantId, id, version, to } = item.outcome;
      this.logger.error(
        { err: one.err, tenantId, id, version, to },
        'recording a delivery outcome failed; dropped it (the event stays executing until rescued, then is delivered again)',
      );
    }
    // A dropped outcome did not apply, as one the store skipped: nothing follows from it.
    this.onRecorded([item], one.ok ? one.applied : [false]);
  }

  private observeCommitted(batch: RecordedOutcome<T>[]): void {
    const nowMs = this.clock.monotonicMs();
    for (const item of batch) this.metrics.outcomeUnrecordedSeconds.observe((nowMs - item.addedMs) / 1_000);
  }

  /** Records `batch`, retrying while the store is unavailable or after a lost race (bounded). */
  private async record(
    batch: RecordedOutcome<T>[],
  ): Promise<{ ok: true; applied: boolean[] } | { ok: false; err: unknown }> {
    let conflicts = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await this.store.eventRecordAttempts({
          outcomes: batch.map((b) => b.outcome),
          now: this.clock.now(),
        });
        return { ok: true, applied };
      } catch (err) {
        const kind = storeFailureKind(err);
        if (kind === 'permanent' || (kind === 'retryable' && ++conflicts > RECORD_CONFLICT_RETRIES_MAX))
          return { ok: false, err };
        // The events stay executing in the store and their results are kept here meanwhile.
        this.logger.error({ err, count: batch.length, attempt, kind }, 'recording delivery outcomes failed; retrying');
        await this.clock.sleep(recordRetryDelayMs(attempt));
      }
    }
  }
}
