/**
 * The bulk runner: runs bulk jobs (POST /v1/events/bulk) in the background, in bounded batches,
 * each batch one atomic store step (Store.bulkJobStep), resuming after a crash from the cursor
 * the job keeps in the store.
 *
 *   runOnce(): claim one running job's lease (the oldest whose lease is free or ended; on a
 *              single-process store any, as no other owner can be alive) ─▶ repeat:
 *                page = the next batchSize events of its selection (bulk-select.ts)
 *                step  = their changes at the versions read + the cursor after them, in one
 *                        transaction, while this node holds the lease (extended by each step)
 *                pause as long as the step took (a job takes at most half of the store's time)
 *              until the selection ends (job succeeded), the lease is lost (another node has it),
 *              or the runner stops. Returns what it did.
 *   start():   runOnce, then wait intervalMs when there was nothing to do; repeat.
 *
 * Lease (per job, like the leader's): owner + until, written by the claim and extended by every
 * step. A node that dies mid-job leaves its lease to end; then another node (or the same one
 * restarted) claims the job and goes on from the stored cursor. A step commits its changes and
 * the cursor together, so no change is applied twice and none is lost. Each change is the
 * single-event conditional write at the version the page read: an event changed meanwhile is
 * skipped and counted, never overwritten.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { StoreUnavailableError, type BulkJobRecord, type Store } from '../store/store.ts';
import { bulkChange, bulkOperation, bulkSelectPage, type BulkAction, type BulkFilter } from './bulk-select.ts';

export interface BulkRunnerOptions {
  /** Events read per page (and so changed per step), at most. */
  batchSize: number;
  /** A job's lease; each step extends it. */
  leaseMs: number;
  /** Wait after a pass that found no job. */
  intervalMs: number;
  /** Pause after a step, as a multiple of the step's duration (0: none). */
  pauseFactor: number;
}

/** A job whose run fails this many times in a row is failed, with the last error. */
export const BULK_STEP_FAILURES_MAX = 5;

export const DEFAULT_BULK_RUNNER_OPTIONS: BulkRunnerOptions = { batchSize: 500, leaseMs: 30_000, intervalMs: 1_000, pauseFactor: 1 };

export interface BulkRunnerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** This node's id: the lease owner. */
  owner: string;
  /** Told about the events each step changed (the scheduler's timers follow them). */
  onEventsChanged(events: EventRecord[]): void;
  /** Told after each step (tests and metrics follow jobs with it). */
  onStep?(job: BulkJobRecord): void;
}

export interface BulkRun {
  /** The job run, or null when there was none to claim. */
  jobId: string | null;
  steps: number;
  changed: number;
  /** finished: the job ended (succeeded or failed); lost: another owner has it; stopped: the runner stops. */
  end: 'finished' | 'lost' | 'stopped' | 'none';
}

export class BulkRunner {
  readonly opts: BulkRunnerOptions;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  /** Consecutive failed runs per job (bounded by the jobs running). */
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly deps: BulkRunnerDeps,
    opts: Partial<BulkRunnerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_BULK_RUNNER_OPTIONS, ...opts };
  }

  async runOnce(signal: AbortSignal = new AbortController().signal): Promise<BulkRun> {
    const { store, clock, owner } = this.deps;
    const now = clock.now();
    const job = await store.bulkJobClaim({ owner, now, leaseUntil: now + this.opts.leaseMs, takeOver: !store.capabilities.multiNode });
    if (!job) return { jobId: null, steps: 0, changed: 0, end: 'none' };
    const run: BulkRun = { jobId: job.id, steps: 0, changed: 0, end: 'stopped' };
    const filter = job.filter as BulkFilter;
    const action = job.action as unknown as BulkAction;
    if (action.kind === 'redirect' && !(await store.destinationGet({ tenantId: job.tenantId, name: action.destination }))) {
      await store.bulkJobFail({ tenantId: job.tenantId, id: job.id, owner, now: clock.now(), error: `destination "${action.destination}" no longer exists` });
      return { ...run, end: 'finished' };
    }
    try {
      const end = await this.steps(job, filter, action, run, signal);
      this.failures.delete(job.id);
      return { ...run, end };
    } catch (err) {
      // A job whose steps keep failing (not the store being away: that passes) is failed, with the reason.
      if (err instanceof StoreUnavailableError) throw err;
      const failures = (this.failures.get(job.id) ?? 0) + 1;
      this.failures.set(job.id, failures);
      if (failures >= BULK_STEP_FAILURES_MAX) {
        this.failures.delete(job.id);
        await store.bulkJobFail({ tenantId: job.tenantId, id: job.id, owner, now: clock.now(), error: `step failed ${failures} times: ${(err as Error).message}` }).catch(() => {});
      }
      throw err;
    }
  }

  private async steps(job: BulkJobRecord, filter: BulkFilter, action: BulkAction, run: BulkRun, signal: AbortSignal): Promise<BulkRun['end']> {
    const { store, clock, owner } = this.deps;
    let cursor = job.cursor;
    while (!signal.aborted) {
      const started = clock.monotonicMs();
      const page = await bulkSelectPage(store, job.tenantId, filter, cursor, this.opts.batchSize);
      const changes = [];
      for (const e of page.events) {
        const c = bulkChange(action, e, job.id);
        if (c) changes.push(c);
      }
      const stepNow = clock.now();
      const step = await store.bulkJobStep({
        tenantId: job.tenantId, id: job.id, owner, now: stepNow, leaseUntil: stepNow + this.opts.leaseMs, operation: bulkOperation(action),
        changes, matched: page.events.length, skipped: page.events.length - changes.length, cursor: page.nextCursor, finished: page.nextCursor === null,
      });
      if (!step) return 'lost';
      run.steps += 1;
      run.changed += step.changed.length;
      if (step.changed.length > 0) this.deps.onEventsChanged(step.changed);
      this.deps.onStep?.(step.job);
      if (step.job.state !== 'running') return 'finished';
      cursor = page.nextCursor;
      const pauseMs = this.opts.pauseFactor * (clock.monotonicMs() - started);
      if (pauseMs <= 0) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      try {
        await clock.sleep(pauseMs, signal);
      } catch {
        break;
      }
    }
    return 'stopped';
  }

  start(): void {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        let run: BulkRun | null = null;
        try {
          run = await this.runOnce(signal);
        } catch (err) {
          this.deps.logger.warn({ err }, 'bulk job step failed; trying again');
        }
        if (run?.jobId) this.deps.logger.info({ job: run.jobId, steps: run.steps, changed: run.changed, end: run.end }, 'bulk job ran');
        if (run?.jobId && run.end === 'finished') continue;
        try {
          await this.deps.clock.sleep(this.opts.intervalMs, signal);
        } catch {
          return;
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
