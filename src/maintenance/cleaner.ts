/**
 * The cleaner (retention): deletes terminal events (succeeded, canceled, discarded, archived),
 * with their traces, once their tenant's period for that state has passed.
 *
 *   pass (leader only): for each tenant, for each terminal state, cutoff = now - period:
 *     eventDeleteTerminal(cutoff, batchSizeMax) ─▶ onBatch ─▶ pause ─▶ again, until a batch is short
 *
 * Leader-only: in a cluster the node holding the leader lease cleans, so nodes do not race over
 * the same rows; a single node (SQLite) is its own leader. A node that lost the lease stops after
 * its current batch. Two cleaners at once (a lease that changed hands between checks) are still
 * safe: each row is deleted once, under a lock skipped by the other, and only if still terminal.
 *
 * Bounds, so a backlog of expired rows never stalls firing (on SQLite each batch is a synchronous
 * transaction on the event loop the scheduler shares):
 * - a batch deletes at most batchSizeMax events (and their transitions);
 * - after a batch of n events that took d ms, the cleaner pauses max(n / deletesPerSecondMax - d, d):
 *   at most deletesPerSecondMax events per second, and never more than half of the time spent
 *   deleting, however slow the store; after an empty batch it still yields to the event loop;
 * - a pass reads the tenant list once; its cost is one index probe per (tenant, state) plus the
 *   rows it deletes, never a scan of finished rows that are kept.
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import {
  RETENTION_DEFAULTS,
  RETENTION_STATES,
  resolveRetention,
  type RetentionPeriods,
  type RetentionState,
} from '../core/retention.ts';
import type { Store } from '../store/store.ts';

export interface CleanerOptions {
  /** Pause between the end of one pass and the start of the next. */
  intervalMs: number;
  /** Events per delete batch (each with its transitions). */
  batchSizeMax: number;
  /** Events deleted per second, at most. */
  deletesPerSecondMax: number;
  /** The node's periods; a tenant's own (settings.retention) override them one by one. */
  defaults: RetentionPeriods;
}

/**
 * Defaults chosen by measurement (bench/measure-retention.ts; the figures are in
 * docs/operations.md): batches of 200 at 2,000 events/s left a 1,000/s firing stream's
 * lateness at its baseline on both backends, where 500 at 5,000/s did not.
 */
export const DEFAULT_CLEANER_OPTIONS: CleanerOptions = {
  intervalMs: 60_000,
  batchSizeMax: 200,
  deletesPerSecondMax: 2_000,
  defaults: RETENTION_DEFAULTS,
};

/** Bounds of the options, checked by the config and the constructor. */
export const CLEANER_BATCH_SIZE_MAX = 10_000;
export const CLEANER_DELETES_PER_SECOND_MAX = 1_000_000;

/** What one delete batch did (the signal tests and metrics follow). */
export interface CleanerBatch {
  tenantId: string;
  state: RetentionState;
  events: number;
  transitions: number;
  durationMs: number;
}

export interface CleanerPass {
  /** False when this node was not the leader: nothing was looked at. */
  leader: boolean;
  /** False when the pass ended early: stopped, or the leader lease lost. */
  completed: boolean;
  tenants: number;
  batches: number;
  events: number;
  transitions: number;
  durationMs: number;
}

export interface CleanerDeps {
  store: Pick<Store, 'tenantList' | 'eventDeleteTerminal'>;
  clock: Clock;
  logger: Logger;
  /** Whether this node may clean now (holds the leader lease; always true on a single node). */
  isLeader(): boolean;
  onBatch?(batch: CleanerBatch): void;
  onPass?(pass: CleanerPass): void;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How long to pause after a batch of `events` that took `durationMs`: see the file header. */
export function cleanerPauseMs(events: number, durationMs: number, deletesPerSecondMax: number): number {
  if (events === 0) return 0;
  return Math.max((events * 1_000) / deletesPerSecondMax - durationMs, durationMs);
}

export class Cleaner {
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  readonly opts: CleanerOptions;

  constructor(
    private readonly deps: CleanerDeps,
    opts: Partial<CleanerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_CLEANER_OPTIONS, ...opts };
    const { batchSizeMax, deletesPerSecondMax, intervalMs } = this.opts;
    if (!Number.isInteger(batchSizeMax) || batchSizeMax < 1 || batchSizeMax > CLEANER_BATCH_SIZE_MAX)
      throw new RangeError(`cleaner: batchSizeMax must be 1..${CLEANER_BATCH_SIZE_MAX}, got ${batchSizeMax}`);
    if (!(deletesPerSecondMax >= 1 && deletesPerSecondMax <= CLEANER_DELETES_PER_SECOND_MAX))
      throw new RangeError(
        `cleaner: deletesPerSecondMax must be 1..${CLEANER_DELETES_PER_SECOND_MAX}, got ${deletesPerSecondMax}`,
      );
    if (!(intervalMs >= 1)) throw new RangeError(`cleaner: intervalMs must be ≥ 1, got ${intervalMs}`);
  }

  /** One pass over every tenant and terminal state; returns what it did. */
  async runOnce(): Promise<CleanerPass> {
    const { store, clock } = this.deps;
    const startedMs = clock.monotonicMs();
    const pass: CleanerPass = {
      leader: this.deps.isLeader(),
      completed: false,
      tenants: 0,
      batches: 0,
      events: 0,
      transitions: 0,
      durationMs: 0,
    };
    if (!pass.leader) return pass;
    const tenants = await store.tenantList();
    const now = clock.now();
    pass.tenants = tenants.length;
    pass.completed = true;
    outer: for (const tenant of tenants) {
      const periods = resolveRetention(this.opts.defaults, tenant.settings);
      for (const state of RETENTION_STATES) {
        const finishedBefore = now - periods[state];
        for (;;) {
          if (this.abort.signal.aborted || !this.deps.isLeader()) {
            pass.completed = false;
            break outer;
          }
          const batch = await this.deleteBatch(tenant.id, state, finishedBefore);
          pass.batches += 1;
          pass.events += batch.events;
          pass.transitions += batch.transitions;
          if (!(await this.pause(batch))) {
            pass.completed = false;
            break outer;
          }
          if (batch.events < this.opts.batchSizeMax) break;
        }
      }
    }
    pass.durationMs = clock.monotonicMs() - startedMs;
    this.deps.onPass?.(pass);
    return pass;
  }

  private async deleteBatch(tenantId: string, state: RetentionState, finishedBefore: number): Promise<CleanerBatch> {
    const { store, clock } = this.deps;
    const t0 = clock.monotonicMs();
    const r = await store.eventDeleteTerminal({ tenantId, state, finishedBefore, limit: this.opts.batchSizeMax });
    const batch: CleanerBatch = {
      tenantId,
      state,
      events: r.events,
      transitions: r.transitions,
      durationMs: clock.monotonicMs() - t0,
    };
    this.deps.onBatch?.(batch);
    return batch;
  }

  /** Paces the pass after a batch; false when the cleaner was stopped meanwhile. */
  private async pause(batch: CleanerBatch): Promise<boolean> {
    const ms = cleanerPauseMs(batch.events, batch.durationMs, this.opts.deletesPerSecondMax);
    if (ms <= 0) {
      await yieldToEventLoop();
      return !this.abort.signal.aborted;
    }
    try {
      await this.deps.clock.sleep(ms, this.abort.signal);
      return true;
    } catch {
      return false;
    }
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.opts.intervalMs, this.abort.signal, async () => {
      const pass = await this.runOnce().catch((err) => {
        this.deps.logger.error({ err }, 'retention pass failed');
        return null;
      });
      if (pass && pass.events > 0) {
        this.deps.logger.info(
          {
            events: pass.events,
            transitions: pass.transitions,
            batches: pass.batches,
            durationMs: Math.round(pass.durationMs),
          },
          'retention deleted finished events',
        );
      }
    });
  }

  /** Stops after the batch in progress, if any. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
