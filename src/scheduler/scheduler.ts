/**
 * The read-ahead scheduler: loads events due within the look-ahead into an in-memory timer and
 * fires each at its due millisecond.
 *
 *   store ──eventListDue (keyset cursor, ≤ now + lookahead)──▶ TimerWheel ──timer at dueAt──▶
 *   eventClaim (batched, conditional on state + version + group head) ──▶ dispatcher
 *
 * Why a cursor: at 5,000 events/s and a 3 s look-ahead, re-reading everything due within the
 * look-ahead on each poll would re-read 15,000 rows per poll. Instead each poll reads only rows past
 * the last one loaded. Rows that appear behind the cursor (an event created or rescheduled to fire
 * soon, a retry, a rescue, a group's next head) are pushed in by `notify*`/`kickGroup` from this
 * process, and a periodic sweep from the start of time catches anything else (rows written by
 * another process) once it is overdue by `sweepGraceMs` and due before everything in the wheel.
 *
 * Why a fire is conditional: the wheel holds (id, version) as read. A cancel or an update that
 * commits after the read bumps the version, so the claim skips the stale entry: the later write wins.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { FIREABLE_STATES, type EventRecord } from '../core/event.ts';
import type { Metrics } from '../node/metrics.ts';
import type { DueRef, Store } from '../store/store.ts';
import { TimerWheel, refKey } from './timer-wheel.ts';

export interface SchedulerOptions {
  /** How far ahead events are loaded into memory. */
  lookaheadMs: number;
  /** Interval of the read-ahead poll. */
  pollIntervalMs: number;
  /** Interval of the overdue sweep, and how overdue a row must be before the sweep takes it. */
  sweepIntervalMs: number;
  sweepGraceMs: number;
  /** Rows per eventListDue page, and refs per eventClaim call. */
  listBatchMax: number;
  claimBatchMax: number;
  /** Bound on the events held in memory; the read-ahead pauses when the wheel is this full. */
  wheelSizeMax: number;
  /** How long a claimed event stays leased to this node. */
  leaseMs: number;
  /** Claiming pauses while the dispatcher holds this many undelivered events (memory bound). */
  dispatchBacklogMax: number;
  /** Cluster: claims check the stored shard map in the same statement (fencing). */
  fenceClaims: boolean;
}

export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = {
  lookaheadMs: 3_000,
  pollIntervalMs: 250,
  sweepIntervalMs: 2_000,
  sweepGraceMs: 1_000,
  listBatchMax: 2_000,
  claimBatchMax: 1_000,
  wheelSizeMax: 500_000,
  leaseMs: 10 * 60_000,
  dispatchBacklogMax: 20_000,
  fenceClaims: false,
};

export interface SchedulerDeps {
  store: Store;
  clock: Clock;
  /** This process's identity for leases. */
  owner: string;
  /** Receives every claimed event, in claim order. */
  onClaimed(events: EventRecord[]): void;
  /** Events handed to the dispatcher and not yet finished. */
  dispatchBacklog(): number;
  metrics: Metrics;
  logger: Logger;
  /** Shards this node may fire; null means all (single node). */
  shards(): number[] | null;
}

/** Whether `shard` is among `shards` (null: all). */
function owns(shards: number[] | null, shard: number): boolean {
  return shards === null || shards.includes(shard);
}

export interface RunOnceResult {
  loaded: number;
}

export class Scheduler {
  private readonly wheel = new TimerWheel();
  private readonly opts: SchedulerOptions;
  private cursor: { dueAt: number; tenantId: string; id: string } | null = null;
  private cancelTimer: (() => void) | null = null;
  private timerAt = Infinity;
  private firing = false;
  private running = false;
  private loop: Promise<void> | null = null;
  private abort = new AbortController();
  private lastSweepMs = -Infinity;

  constructor(
    private readonly deps: SchedulerDeps,
    opts: Partial<SchedulerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_SCHEDULER_OPTIONS, ...opts };
  }

  /** Events waiting in memory for their due time. */
  get pending(): number {
    return this.wheel.size;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    this.loop = this.runLoop();
  }

  /** Stops loading and firing; events already handed to the dispatcher are not affected. */
  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    this.cancelTimer?.();
    this.cancelTimer = null;
    await this.loop?.catch(() => {});
    while (this.firing) await new Promise((r) => setImmediate(r));
    this.wheel.clear();
  }

  private async runLoop(): Promise<void> {
    while (this.running) {
      try {
        await this.runOnce();
      } catch (err) {
        this.deps.logger.error({ err }, 'read-ahead failed');
      }
      try {
        await this.deps.clock.sleep(this.opts.pollIntervalMs, this.abort.signal);
      } catch {
        return;
      }
    }
  }

  /**
   * One read-ahead pass: pages through rows past the cursor that are due within the look-ahead
   * until a page comes back short or the wheel is full; every `sweepIntervalMs` also re-reads
   * overdue rows from the start. Returns how many entries it put in the wheel.
   */
  async runOnce(): Promise<RunOnceResult> {
    const now = this.deps.clock.now();
    let loaded = 0;
    if (now - this.lastSweepMs >= this.opts.sweepIntervalMs) {
      this.lastSweepMs = now;
      // Rows due from the wheel's earliest entry on wait behind it anyway (the wheel fires in due
      // order), so the sweep reads only rows due before it: when the node is behind, the few rows
      // older than everything it holds, not the whole overdue backlog every interval. A row it
      // leaves is read once the wheel has drained past its due time.
      const earliest = this.wheel.peekDueAt();
      loaded += await this.sweepOverdue(Math.min(now - this.opts.sweepGraceMs, (earliest ?? Infinity) - 1));
    }
    const horizon = now + this.opts.lookaheadMs;
    while (this.wheel.size < this.opts.wheelSizeMax) {
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: this.cursor,
        untilMs: horizon,
        limit: this.opts.listBatchMax,
      });
      for (const ref of page) if (this.putIfNew(ref)) loaded++;
      if (page.length > 0) {
        const last = page[page.length - 1];
        this.cursor = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
      }
      if (page.length < this.opts.listBatchMax) break;
    }
    this.armTimer();
    return { loaded };
  }

  /** Rows overdue by more than the grace that nothing holds in memory: written by another process, or missed. */
  private async sweepOverdue(untilMs: number): Promise<number> {
    let loaded = 0;
    let after: { dueAt: number; tenantId: string; id: string } | null = null;
    for (;;) {
      const page = await this.deps.store.eventListDue({ shards: this.deps.shards(), after, untilMs, limit: this.opts.listBatchMax });
      for (const ref of page) if (this.putIfNew(ref)) loaded++;
      if (page.length < this.opts.listBatchMax || this.wheel.size >= this.opts.wheelSizeMax) return loaded;
      const last = page[page.length - 1];
      after = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
    }
  }

  private putIfNew(ref: DueRef): boolean {
    if (this.wheel.has(refKey(ref.tenantId, ref.id))) return false;
    this.wheel.put(ref);
    return true;
  }

  /**
   * Follows committed changes made in this process (create, update, cancel, replay): an event
   * that is fireable and due within the look-ahead enters the wheel (replacing an older version);
   * any other leaves it. Events due later are found by the read-ahead.
   */
  notifyEvents(events: EventRecord[]): void {
    if (!this.running) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    for (const e of events) {
      if (FIREABLE_STATES.includes(e.state) && e.dueAt <= horizon && this.ownsShard(e.shard)) {
        this.wheel.put({ tenantId: e.tenantId, id: e.id, version: e.version, dueAt: e.dueAt, shard: e.shard, group: e.group });
      } else {
        this.wheel.remove(e.tenantId, e.id);
      }
    }
    this.armTimer();
  }

  /** Fireable refs made in this process (retries, rescues): into the wheel when due within the look-ahead. */
  notifyDue(refs: DueRef[]): void {
    if (!this.running) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    for (const ref of refs) if (ref.dueAt <= horizon && this.ownsShard(ref.shard)) this.wheel.put(ref);
    this.armTimer();
  }

  /** A group's event became terminal: its next event, if fireable, may go now. */
  async kickGroup(tenantId: string, group: string): Promise<void> {
    const head = await this.deps.store.eventGroupHead({ tenantId, group });
    if (head) this.notifyDue([head]);
  }

  private ownsShard(shard: number): boolean {
    return owns(this.deps.shards(), shard);
  }

  /**
   * The owned shards changed: forget entries of shards lost, and read again from the start so the
   * events of new shards (overdue ones first) are loaded at once.
   */
  shardsChanged(): void {
    const shards = this.deps.shards();
    this.wheel.retain((ref) => owns(shards, ref.shard));
    this.cursor = null;
    this.lastSweepMs = -Infinity;
    if (this.running) void this.runOnce().catch((err) => this.deps.logger.error({ err }, 'read-ahead failed'));
  }

  /** Sets the one timer for the earliest entry (or fires at once when it is already due). */
  private armTimer(): void {
    if (!this.running) return;
    // While a fire pass runs it re-reads the wheel until nothing is due, then re-arms.
    if (this.firing) return;
    const next = this.wheel.peekDueAt();
    if (next === null) return;
    const now = this.deps.clock.now();
    // Keep the armed timer when it is for an earlier or equal entry, unless the wall clock jumped
    // forward past the entry meanwhile (timers run on monotonic time): then fire now.
    if (next >= this.timerAt && this.cancelTimer && next > now) return;
    this.cancelTimer?.();
    this.timerAt = next;
    this.cancelTimer = this.deps.clock.setTimer(next - now, () => {
      this.cancelTimer = null;
      this.timerAt = Infinity;
      void this.fireDue();
    });
  }

  /** Claims every due entry, in batches, and hands the claimed events to the dispatcher. */
  private async fireDue(): Promise<void> {
    if (this.firing || !this.running) return;
    this.firing = true;
    try {
      for (;;) {
        if (this.deps.dispatchBacklog() >= this.opts.dispatchBacklogMax) {
          // Back-pressure: let deliveries drain before claiming more; due entries stay in the wheel.
          await this.deps.clock.sleep(5, this.abort.signal).catch(() => {});
          if (!this.running) break;
          continue;
        }
        const now = this.deps.clock.now();
        const due = this.wheel.popDue(now, this.opts.claimBatchMax);
        if (due.length === 0) break;
        try {
          const claimed = await this.deps.store.eventClaim({
            refs: due.map((r) => ({ tenantId: r.tenantId, id: r.id, version: r.version })),
            now,
            owner: this.deps.owner,
            leaseUntil: now + this.opts.leaseMs,
            fenceByShardOwner: this.opts.fenceClaims,
          });
          this.deps.metrics.eventsFired.inc(claimed.length);
          if (claimed.length > 0) this.deps.onClaimed(claimed);
        } catch (err) {
          // The store is unreachable: keep the entries and try again shortly.
          this.deps.logger.error({ err, count: due.length }, 'claim failed; retrying');
          for (const r of due) if (!this.wheel.has(refKey(r.tenantId, r.id))) this.wheel.put(r);
          await this.deps.clock.sleep(200, this.abort.signal).catch(() => {});
          if (!this.running) break;
        }
        if (!this.running) break;
        // Let I/O (deliveries, API requests) run between batches of a large burst.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.firing = false;
    }
    this.armTimer();
  }
}
