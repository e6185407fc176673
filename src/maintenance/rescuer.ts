/**
 * The rescuer: events left `executing` by a node that died are made due again (at-least-once).
 *
 * - At start, on a store only this process uses (SQLite), every executing event not held by this
 *   process run was held by a previous run that is gone: rescue them all at once.
 * - Periodically, on a shared store, executing events whose lease has ended are rescued. On a
 *   single-node store this is not needed: every executing event is in this process's memory.
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { DueRef, Store } from '../store/store.ts';
import type { EventSink } from '../core/event-sink.ts';

export const RESCUE_BATCH_MAX = 1_000;

export interface RescuerDeps {
  store: Pick<Store, 'eventRescue'>;
  clock: Clock;
  owner: string;
  logger: Logger;
  /** `due`: the rescued events, fireable again. */
  events: Pick<EventSink, 'due'>;
}

export class Rescuer {
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: RescuerDeps,
    private readonly intervalMs = 15_000,
  ) {}

  /**
   * Rescues events of previous runs of this node; returns how many. Call before this process
   * claims anything: every event executing under its own id is then a previous run's (a restart
   * under a fixed --node-id). On a store only this process uses (`everyOwner`, SQLite), every other
   * owner's is too.
   */
  async rescuePreviousRuns(everyOwner: boolean): Promise<number> {
    const { owner } = this.deps;
    return this.drain(everyOwner ? { heldBy: owner, notOwnedBy: owner } : { heldBy: owner });
  }

  /** One pass over expired leases; returns how many events it made due again. */
  async runOnce(): Promise<number> {
    return this.drain({});
  }

  private async drain(extra: { notOwnedBy?: string; heldBy?: string }): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const refs = await this.deps.store.eventRescue({
        leaseExpiredBefore: now,
        now,
        limit: RESCUE_BATCH_MAX,
        ...extra,
      });
      total += refs.length;
      if (refs.length > 0) {
        this.deps.logger.warn({ count: refs.length }, 'rescued events left executing by a node that stopped');
        this.deps.events.due(refs);
      }
      if (refs.length < RESCUE_BATCH_MAX) return total;
    }
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(
      this.deps.clock,
      this.intervalMs,
      this.abort.signal,
      () => this.runOnce().catch((err) => this.deps.logger.error({ err }, 'rescue failed')),
      { pauseFirst: true },
    );
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
