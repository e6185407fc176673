/**
 * The bulk runner: runs bulk jobs (POST /v1/events/bulk) in the background, in bounded batches,
 * each batch one atomic store step (Store.bulkJobStep), resuming after a crash from the cursor
 * the job keeps in the store.
 *
 *   start(): the node's loop, in turns. Each turn:
 *              claim jobs while fewer than jobsMax run here (Store.bulkJobClaim names the ones
 *              running, so it never hands one back, and takes a tenant not served yet first);
 *              then ONE step of one job of each tenant that has any (round robin: a tenant's jobs
 *              take turns, so a tenant with two jobs gets no more than one with one), where a
 *              step = the next batchSize events of the job's selection (selection.ts, page.ts) and their
 *              changes at the versions read + the cursor after them, in one transaction, while
 *              this node holds the lease (extended by each step);
 *              then pause as long as the turn took (bulk work takes at most half of the store's time).
 *            A job leaves at its end (succeeded or failed), when its lease is lost (another node
 *            has it), or when the runner stops. With nothing running, wait intervalMs.
 *   runOnce(): claim one job and run it alone to its end (tools and tests).
 *
 * Why turns: one job at a time made another tenant's 1-event job wait behind a 30,000-event job
 * (5.5 s on SQLite, 36 s on PostgreSQL); in turns it waits for at most one turn: a step of each
 * job running and the pause.
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
import { StoreUnavailableError, type BulkJobKey, type BulkJobRecord, type Store } from '../store/store.ts';
import { bulkSelectPage } from './page.ts';
import { bulkChange, bulkOperation, type BulkAction, type BulkFilter } from './selection.ts';
import type { EventSink } from '../core/event-sink.ts';

export interface BulkRunnerOptions {
  /** Events read per page (and so changed per step), at most. */
  batchSize: number;
  /** A job's lease; each step extends it. */
  leaseMs: number;
  /** Wait after a pass that found no job. */
  intervalMs: number;
  /** Pause after a turn, as a multiple of the turn's duration (0: none). */
  pauseFactor: number;
  /** Jobs the loop runs at once (each holds its lease between its steps); the others wait for room. */
  jobsMax: number;
}

/** A job whose run fails this many times in a row is failed, with the last error. */
export const BULK_STEP_FAILURES_MAX = 5;

export const DEFAULT_BULK_RUNNER_OPTIONS: BulkRunnerOptions = {
  batchSize: 500,
  leaseMs: 30_000,
  intervalMs: 1_000,
  pauseFactor: 1,
  jobsMax: 8,
};

export interface BulkRunnerDeps {
  store: Pick<Store, 'capabilities' | 'bulkJobClaim' | 'bulkJobStep' | 'bulkJobFail' | 'destinationGet' | 'eventList'>;
  clock: Clock;
  logger: Logger;
  /** This node's id: the lease owner. */
  owner: string;
  /** Told about the events each step changed (the scheduler's timers follow them). */
  events: Pick<EventSink, 'changed'>;
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

/** A job this runner holds: what it does, where its selection goes on, and what it did so far. */
interface HeldJob {
  job: BulkJobRecord;
  filter: BulkFilter;
  action: BulkAction;
  cursor: string | null;
  run: BulkRun;
}

/** How a step left its job: it goes on, or it left the runner. */
type StepEnd = 'more' | 'finished' | 'lost';

export class BulkRunner {
  readonly opts: BulkRunnerOptions;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  /** Consecutive failed steps per job (bounded by the jobs running). */
  private readonly failures = new Map<string, number>();
  /**
   * The loop's jobs by tenant, each tenant's in the order of its turns; tenants in the order they
   * came. At most jobsMax jobs in all.
   */
  private readonly held = new Map<string, HeldJob[]>();

  constructor(
    private readonly deps: BulkRunnerDeps,
    opts: Partial<BulkRunnerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_BULK_RUNNER_OPTIONS, ...opts };
    if (!Number.isInteger(this.opts.jobsMax) || this.opts.jobsMax < 1)
      throw new RangeError(`bulk runner: jobsMax must be a positive integer, got ${this.opts.jobsMax}`);
  }

  /** The jobs the loop runs now. */
  heldJobs(): BulkJobKey[] {
    return [...this.held.values()].flatMap((jobs) => jobs.map((h) => ({ tenantId: h.job.tenantId, id: h.job.id })));
  }

  /** Claims one job and runs it alone, step after step, to its end (tools and tests; the node runs start()). */
  async runOnce(signal: AbortSignal = new AbortController().signal): Promise<BulkRun> {
    const h = await this.claim();
    if (!h) return { jobId: null, steps: 0, changed: 0, end: 'none' };
    if (!(await this.runnable(h))) return { ...h.run, end: 'finished' };
    while (!signal.aborted) {
      const started = this.deps.clock.monotonicMs();
      let end: StepEnd;
      try {
        end = await this.step(h);
      } catch (err) {
        if (await this.failed(h, err)) return { ...h.run, end: 'finished' };
        throw err;
      }
      if (end !== 'more') return { ...h.run, end };
      if (!(await this.pause(started, signal))) break;
    }
    return { ...h.run, end: 'stopped' };
  }

  /**
   * One turn of the loop: claims jobs while there is room, then one step of one job of each
   * tenant, then the pause. False when no job runs here.
   */
  async turn(signal: AbortSignal = new AbortController().signal): Promise<boolean> {
    const started = this.deps.clock.monotonicMs();
    await this.fill();
    if (this.held.size === 0) return false;
    for (const [tenantId, jobs] of [...this.held]) {
      if (signal.aborted) return true;
      const h = jobs[0];
      const end = await this.loopStep(h);
      // The job leaves its tenant's line, and goes to its back while it has more to do.
      jobs.shift();
      if (end === 'more') jobs.push(h);
      else this.deps.logger.info({ job: h.job.id, steps: h.run.steps, changed: h.run.changed, end }, 'bulk job ran');
      if (jobs.length === 0) this.held.delete(tenantId);
    }
    await this.pause(started, signal);
    return true;
  }

  start(): void {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        let busy = false;
        try {
          busy = await this.turn(signal);
        } catch (err) {
          // The store is away: every job waits, holding its place (a lease that ends meanwhile is
          // found lost at the next step).
          this.deps.logger.warn({ err }, 'bulk job step failed; trying again');
        }
        if (busy) continue;
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
    // Their leases stay: a restarted loop (or, once they end, another node) claims them again.
    this.held.clear();
  }

  /** Claims jobs while fewer than jobsMax run here. */
  private async fill(): Promise<void> {
    let count = this.heldJobs().length;
    while (count < this.opts.jobsMax) {
      const h = await this.claim();
      if (!h) return;
      if (!(await this.runnable(h))) continue;
      const jobs = this.held.get(h.job.tenantId);
      if (jobs) jobs.push(h);
      else this.held.set(h.job.tenantId, [h]);
      count += 1;
    }
  }

  /** Claims one job not held here yet (its lease); null when there is none. */
  private async claim(): Promise<HeldJob | null> {
    const { store, clock, owner } = this.deps;
    const now = clock.now();
    const job = await store.bulkJobClaim({
      owner,
      now,
      leaseUntil: now + this.opts.leaseMs,
      takeOver: !store.capabilities.multiNode,
      running: this.heldJobs(),
    });
    if (!job) return null;
    return {
      job,
      filter: job.filter as BulkFilter,
      action: job.action as unknown as BulkAction,
      cursor: job.cursor,
      run: { jobId: job.id, steps: 0, changed: 0, end: 'stopped' },
    };
  }

  /** Whether a job just claimed can run: a redirect whose destination is gone meanwhile fails it. */
  private async runnable(h: HeldJob): Promise<boolean> {
    const { store, clock, owner } = this.deps;
    const { job, action } = h;
    if (
      action.kind !== 'redirect' ||
      (await store.destinationGet({ tenantId: job.tenantId, name: action.destination }))
    )
      return true;
    await store.bulkJobFail({
      tenantId: job.tenantId,
      id: job.id,
      owner,
      now: clock.now(),
      error: `destination "${action.destination}" no longer exists`,
    });
    return false;
  }

  /** A step of the loop: a failure other than the store being away is counted, and the job goes on until it fails for good. */
  private async loopStep(h: HeldJob): Promise<StepEnd> {
    try {
      return await this.step(h);
    } catch (err) {
      if (await this.failed(h, err)) return 'finished';
      this.deps.logger.warn({ err, job: h.job.id }, 'bulk job step failed; trying again');
      return 'more';
    }
  }

  /**
   * Counts a failed step of `h`: true when the job is now failed (BULK_STEP_FAILURES_MAX in a
   * row). Rethrows the store being away: that passes, and fails no job.
   */
  private async failed(h: HeldJob, err: unknown): Promise<boolean> {
    if (err instanceof StoreUnavailableError) throw err;
    const { store, clock, owner } = this.deps;
    const failures = (this.failures.get(h.job.id) ?? 0) + 1;
    this.failures.set(h.job.id, failures);
    if (failures < BULK_STEP_FAILURES_MAX) return false;
    this.failures.delete(h.job.id);
    await store
      .bulkJobFail({
        tenantId: h.job.tenantId,
        id: h.job.id,
        owner,
        now: clock.now(),
        error: `step failed ${failures} times: ${(err as Error).message}`,
      })
      .catch(() => {});
    return true;
  }

  /** One batch of `h`: its next page read, its changes and the cursor after it in one store step. */
  private async step(h: HeldJob): Promise<StepEnd> {
    const { store, clock, owner } = this.deps;
    const { job, action } = h;
    const page = await bulkSelectPage(store, job.tenantId, h.filter, h.cursor, this.opts.batchSize);
    const changes = [];
    for (const e of page.events) {
      const c = bulkChange(action, e, job.id);
      if (c) changes.push(c);
    }
    const stepNow = clock.now();
    const step = await store.bulkJobStep({
      tenantId: job.tenantId,
      id: job.id,
      owner,
      now: stepNow,
      leaseUntil: stepNow + this.opts.leaseMs,
      operation: bulkOperation(action),
      changes,
      matched: page.events.length,
      skipped: page.events.length - changes.length,
      cursor: page.nextCursor,
      finished: page.nextCursor === null,
    });
    this.failures.delete(job.id);
    if (!step) return 'lost';
    h.run.steps += 1;
    h.run.changed += step.changed.length;
    if (step.changed.length > 0) this.deps.events.changed(step.changed);
    this.deps.onStep?.(step.job);
    if (step.job.state !== 'running') return 'finished';
    h.cursor = page.nextCursor;
    return 'more';
  }

  /** Pauses pauseFactor times as long as the work since `startedMs` took; false when stopped meanwhile. */
  private async pause(startedMs: number, signal: AbortSignal): Promise<boolean> {
    const pauseMs = this.opts.pauseFactor * (this.deps.clock.monotonicMs() - startedMs);
    if (pauseMs <= 0) {
      await new Promise((resolve) => setImmediate(resolve));
      return !signal.aborted;
    }
    try {
      await this.deps.clock.sleep(pauseMs, signal);
      return true;
    } catch {
      return false;
    }
  }
}
