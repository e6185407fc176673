/**
 * The scheduler: loads events due within the look-ahead into memory and fires each at its due
 * millisecond. A composition of three parts, one role each:
 *
 *   read-ahead.ts ──admit──▶ admission.ts ──refs of one claim──▶ claimer.ts ──▶ dispatcher
 *   (cursor pages,           (due heap, a line per virtual     (timer, batched conditional
 *    overdue sweep,           queue, deficit round robin,       eventClaim, claim slots,
 *    per-queue refill,        queue and node room, parked,      recovery of a lost answer)
 *    notifications)           overflow marks)
 *        ▲                                                           │ outcomes recorded
 *        └──────────── roomFreed: refill drained queues ◀────────────┴─ wake the claim loop
 *
 * Why a cursor (read-ahead.ts), why a fire is conditional (claimer.ts), and how each virtual
 * queue's share is bounded, the isolation invariant (admission.ts), are told with the part that
 * does it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { runEvery } from '../core/loop.ts';
import type { Metrics } from '../core/metrics.ts';
import { owns } from '../core/shard.ts';
import type { DueRef } from '../store/store.ts';
import { Admission, type AdmissionOptions } from './admission.ts';
import { Claimer, type ClaimerDeps, type ClaimerOptions } from './claimer.ts';
import { ReadAhead, type ReadAheadDeps, type ReadAheadOptions, type RunOnceResult } from './read-ahead.ts';

export type { RunOnceResult } from './read-ahead.ts';

/** The scheduler's options: those of its read-ahead, admission and claimer (each documented there). */
export interface SchedulerOptions extends ReadAheadOptions, AdmissionOptions, ClaimerOptions {}

/** The options a node runs with unless its config says otherwise. */
export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = {
  lookaheadMs: 3_000,
  pollIntervalMs: 250,
  sweepIntervalMs: 2_000,
  sweepGraceMs: 1_000,
  listBatchMax: 2_000,
  claimBatchMax: 250,
  wheelSizeMax: 500_000,
  queueRefsMax: 10_000,
  sweepPagesMax: 4,
  leaseMs: 10 * 60_000,
  dispatchBacklogMax: 20_000,
  fenceClaims: false,
};

/** The scheduler's store, clock and identity, and the dispatcher's side: where claims go and how much room is left. */
export interface SchedulerDeps {
  store: ReadAheadDeps['store'] & ClaimerDeps['store'];
  clock: Clock;
  /** This process's identity for leases. */
  owner: string;
  /** Receives every claimed event, in claim order. */
  onClaimed(events: EventRecord[]): void;
  /** Events handed to the dispatcher and not yet finished. */
  dispatchBacklog(): number;
  /**
   * How many more events of this queue (`queueKeyOf(tenantId, queue)`) may be claimed now: its
   * bound minus its claimed-but-unrecorded events. Absent: no bound per queue.
   */
  queueRoom?(queueKey: string): number;
  /** The bound queueRoom counts down from (absent: none). */
  queueBound?(queueKey: string): number;
  /**
   * Queues with events loaded into the timer (once per page read ahead): what delivers them may
   * get ready (read their tenant's policy and destination) before they fall due.
   */
  onDueSoon?(queues: Map<string, { tenantId: string; queue: string }>): void;
  metrics: Metrics;
  logger: Logger;
  /** Shards this node may fire; null means all (single node). */
  shards(): number[] | null;
  /**
   * Schedule occurrences (occurrence-gate.ts): late ones their schedule does not fire are left out
   * of a claim (beforeClaim), and claimed first attempts are counted (afterClaim).
   */
  occurrences?: {
    beforeClaim(due: DueRef[], now: number): Promise<DueRef[]>;
    afterClaim(claimed: EventRecord[]): void;
  };
}

/** The read-ahead, admission and claimer of one node, started and stopped together. */
export class Scheduler {
  private readonly opts: SchedulerOptions;
  private readonly admission: Admission;
  private readonly readAhead: ReadAhead;
  private readonly claimer: Claimer;
  private running = false;
  private loop: Promise<void> | null = null;
  private abort = new AbortController();

  constructor(
    private readonly deps: SchedulerDeps,
    opts: Partial<SchedulerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_SCHEDULER_OPTIONS, ...opts };
    const isRunning = () => this.running;
    this.admission = new Admission(deps, this.opts);
    this.readAhead = new ReadAhead(
      {
        store: deps.store,
        clock: deps.clock,
        logger: deps.logger,
        admission: this.admission,
        shards: () => deps.shards(),
        isRunning,
        onDueSoon: deps.onDueSoon && ((queues) => deps.onDueSoon!(queues)),
        onAdmitted: () => this.claimer.armTimer(),
        onPassEnded: () => this.passEnded(),
      },
      this.opts,
    );
    this.claimer = new Claimer(
      {
        store: deps.store,
        clock: deps.clock,
        owner: deps.owner,
        metrics: deps.metrics,
        logger: deps.logger,
        admission: this.admission,
        shards: () => deps.shards(),
        onClaimed: (events) => deps.onClaimed(events),
        occurrences: deps.occurrences,
        isRunning,
        signal: () => this.abort.signal,
        onClaimEnded: () => this.roomFreed(),
      },
      this.opts,
    );
  }

  /** Events waiting in memory for their due time, or parked for room in their queue. */
  get pending(): number {
    return this.admission.size;
  }

  /** Due events held back (unclaimed) because their queue or the node is at its bound. */
  get parkedCount(): number {
    return this.admission.parkedCount;
  }

  /** Queues with due rows left in the store because they did not fit in memory. */
  get overflowedQueues(): number {
    return this.admission.overflow.size;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    this.loop = this.runLoop();
  }

  /**
   * Stops loading and firing; events already handed to the dispatcher are not affected. Settles
   * once the read-ahead pass, the claim pass and the claims in progress have ended.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    this.claimer.cancel();
    await this.loop?.catch(() => {});
    await this.claimer.stopped();
    this.admission.clear();
  }

  private runLoop(): Promise<void> {
    return runEvery(this.deps.clock, this.opts.pollIntervalMs, this.abort.signal, () => this.readAhead.runOnce(), {
      onError: (err) => this.deps.logger.error({ err }, 'read-ahead failed'),
    });
  }

  /**
   * One read-ahead pass (read-ahead.ts), then: queues with room take their parked events,
   * drained queues are refilled, the timer is armed. Returns how many entries it loaded.
   */
  runOnce(): Promise<RunOnceResult> {
    return this.readAhead.runOnce();
  }

  /** After each read-ahead pass. Room freed is signalled by recorded outcomes; asking again each pass bounds any lost signal. */
  private passEnded(): void {
    this.roomFreed();
    this.claimer.armTimer();
    this.deps.metrics.eventsParked.set(this.admission.parkedCount);
    this.deps.metrics.eventsClaimed.set(this.deps.dispatchBacklog());
    this.deps.metrics.queuesOverflowed.set(this.admission.overflow.size);
  }

  /**
   * The owned shards changed: forget entries of shards lost, and read again from the start so the
   * events of new shards (overdue ones first) are loaded at once.
   */
  shardsChanged(): void {
    const shards = this.deps.shards();
    this.admission.retain((ref) => owns(shards, ref.shard));
    this.readAhead.restart();
    if (this.running)
      void this.readAhead.runOnce().catch((err) => this.deps.logger.error({ err }, 'read-ahead failed'));
  }

  /** Follows committed changes made in this process (create, update, cancel, replay): see ReadAhead.notifyEvents. */
  notifyEvents(events: EventRecord[]): void {
    this.readAhead.notifyEvents(events);
  }

  /** Fireable refs made in this process (retries, rescues): into memory when due within the look-ahead. */
  notifyDue(refs: DueRef[]): void {
    this.readAhead.notifyDue(refs);
  }

  /** A group's event became terminal: its next event, if fireable, may go now. */
  kickGroup(tenantId: string, group: string, shard?: number): Promise<void> {
    return this.readAhead.kickGroup(tenantId, group, shard);
  }

  /**
   * The dispatcher recorded outcomes, so queues (and the node) have room again: the claim loop
   * runs to take waiting due refs. Queues that drained below half of their memory bound are
   * refilled from the store.
   */
  roomFreed(): void {
    if (!this.running) return;
    this.claimer.wake();
    this.readAhead.refillDrained();
  }
}
