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
 *
 * Isolation (DESIGN.md "Isolation"): every virtual queue's share is bounded twice.
 *   - Claims: a due entry leaves the timer for its queue's line, and claims take from the lines
 *     in turn (deficit round robin), each queue only while it has room (`queueRoom`: fewer
 *     claimed-but-unrecorded events than its bound) and the node has room (`dispatchBacklogMax`).
 *     What has no room stays in its line (parked), unclaimed, until the dispatcher records
 *     outcomes (`roomFreed`). A claim is small (claimBatchMax) and each queue with due events
 *     gets its share of it, so one tenant's flood neither takes the node's bound nor makes another
 *     queue's due event wait for more than the claim in progress.
 *   - Memory: a queue holds at most `queueRefsMax` entries (timer plus parked); further rows of
 *     it stay in the store, and the first of them is remembered. When the queue has drained to
 *     half, it is refilled from that row on by a read of its own index (`eventListDue` with
 *     `queue`), which never reads another queue's rows. The read-ahead asks the store to leave
 *     such a queue's rows out (`skip`, up to EVENT_LIST_DUE_SKIP_MAX queues):
 *     otherwise a flood of 200,000 rows due in one second is carried page after page through the
 *     read-ahead only to be skipped, and another queue's row due at the end of that second is
 *     read (and fires) only when the cursor gets there, seconds late on a loaded PostgreSQL.
 * The overdue sweep reads at most `sweepPagesMax` pages per interval and continues where it
 * stopped, so a queue with a large overdue backlog cannot make every sweep read all of it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { FIREABLE_STATES, isTerminal, type EventRecord } from '../core/event.ts';
import { runEvery } from '../core/loop.ts';
import { queueKeyOf } from '../core/queue.ts';
import type { Metrics } from '../node/metrics.ts';
import { dueRefOf, EVENT_LIST_DUE_SKIP_MAX, type DueRef, type Store } from '../store/store.ts';
import { OverflowMarks, ParkedQueues, type OverflowMark } from './parked.ts';
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
  /** Bound on the events held in memory (timer plus parked); the read-ahead pauses when full. */
  wheelSizeMax: number;
  /** Bound on one virtual queue's events in memory (timer plus parked); its other rows wait in the store. */
  queueRefsMax: number;
  /** Pages the overdue sweep reads per interval at most; the next interval continues after them. */
  sweepPagesMax: number;
  /** How long a claimed event stays leased to this node. */
  leaseMs: number;
  /** The node's bound on claimed-but-unrecorded events, over all queues (memory bound). */
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
  claimBatchMax: 250,
  wheelSizeMax: 500_000,
  queueRefsMax: 10_000,
  sweepPagesMax: 4,
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

/**
 * Whether rows may be due after a page of eventListDue: it was full, or it was read with `skip`
 * (then it sent only the rows not skipped of those it examined, and where it stopped; only an
 * empty page says nothing else is due).
 */
function morePages(page: DueRef[], limit: number, skip: OverflowMark[]): boolean {
  return page.length >= limit || (skip.length > 0 && page.length > 0);
}

/** Whether `shard` is among `shards` (null: all). */
function owns(shards: number[] | null, shard: number): boolean {
  return shards === null || shards.includes(shard);
}

export interface RunOnceResult {
  loaded: number;
}

type Cursor = { dueAt: number; tenantId: string; id: string };

/** Distinct lease-end marks of a node's claims (see claim); far more than claims in flight at once. */
const CLAIM_MARKS = 997;
/** A backlogged queue is topped up in chunks of at most this many claims. */
const UNPARK_CHUNK_MAX = 200;
/** Least share of a claim each queue with due events gets before others fill it. */
const CLAIM_SHARE_MIN = 16;
/** Entries moved from the timer to the lines per turn of the claim loop (the move is cheap; the bound keeps it incremental). */
const LINE_UP_MAX = 5_000;
/**
 * Least time between the starts of two claims while events keep falling due (monotonic ms): a
 * claim is mostly per-statement cost, so events due at distinct milliseconds share one. An event
 * due after a quiet spell is claimed at once; under load, one waits at most this long.
 */
const CLAIM_SPACING_MS = 2;
/**
 * Claim statements in flight at once (each of up to claimBatchMax refs), plus one small claim for
 * queues that have none in flight (waitForClaimSlot, splitLightQueues).
 */
const CLAIMS_IN_FLIGHT_MAX = 4;
/**
 * While every claim slot is taken, how often the claim loop looks for due events of queues with
 * no claim in flight (monotonic ms): those take the one spare slot (see waitForClaimSlot).
 */
const SPARE_CLAIM_POLL_MS = 2;

const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Counts per key, entries at zero removed. */
class Counts {
  private readonly map = new Map<string, number>();
  total = 0;

  countOf(key: string): number {
    return this.map.get(key) ?? 0;
  }

  add(key: string): void {
    this.map.set(key, this.countOf(key) + 1);
    this.total++;
  }

  remove(key: string): void {
    const n = this.countOf(key) - 1;
    if (n > 0) this.map.set(key, n);
    else this.map.delete(key);
    this.total--;
  }
}

export class Scheduler {
  private readonly wheel = new TimerWheel();
  private readonly parked = new ParkedQueues();
  private readonly overflow = new OverflowMarks();
  /** Queues being refilled from the store now (one read per queue at a time). */
  private readonly refilling = new Set<string>();
  /** Counts claims, for their lease-end marks. */
  private claimSeq = 0;
  private readonly opts: SchedulerOptions;
  private cursor: Cursor | null = null;
  /** Where the overdue sweep continues; null: from the start. */
  private sweepAfter: Cursor | null = null;
  private cancelTimer: (() => void) | null = null;
  private timerAt = Infinity;
  private firing = false;
  /** Claims started and not finished, and the refs in them per queue. */
  private readonly claimsInFlight = new Set<Promise<void>>();
  private readonly claiming = new Counts();
  private lastClaimAtMs = -Infinity;
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

  /** Events waiting in memory for their due time, or parked for room in their queue. */
  get pending(): number {
    return this.wheel.size + this.parked.size;
  }

  /** Due events held back (unclaimed) because their queue or the node is at its bound. */
  get parkedCount(): number {
    return this.parked.size;
  }

  /** Queues with due rows left in the store because they did not fit in memory. */
  get overflowedQueues(): number {
    return this.overflow.size;
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
    await Promise.allSettled([...this.claimsInFlight]);
    this.wheel.clear();
    this.parked.clear();
    this.overflow.clear();
  }

  private runLoop(): Promise<void> {
    return runEvery(this.deps.clock, this.opts.pollIntervalMs, this.abort.signal, () => this.runOnce(), {
      onError: (err) => this.deps.logger.error({ err }, 'read-ahead failed'),
    });
  }

  /**
   * One read-ahead pass: pages through rows past the cursor that are due within the look-ahead
   * until a page comes back short or memory is full; every `sweepIntervalMs` also sweeps overdue
   * rows from the start; refills queues that drained below half. Returns how many entries it loaded.
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
    while (!this.memoryFull()) {
      const skip = this.overflow.some(EVENT_LIST_DUE_SKIP_MAX);
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: this.cursor,
        untilMs: horizon,
        limit: this.opts.listBatchMax,
        skip,
      });
      const queues = new Map<string, { tenantId: string; queue: string }>();
      for (const ref of page) {
        if (!this.admit(ref)) continue;
        loaded++;
        const key = queueKeyOf(ref.tenantId, ref.queue);
        if (!queues.has(key)) queues.set(key, { tenantId: ref.tenantId, queue: ref.queue });
      }
      if (queues.size > 0) this.deps.onDueSoon?.(queues);
      if (page.length > 0) {
        const last = page[page.length - 1];
        this.cursor = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
      }
      if (!morePages(page, this.opts.listBatchMax, skip)) break;
      // A synchronous store (SQLite) answers without a turn of the event loop: yield between
      // pages so timers and I/O run while a large backlog is read.
      await yieldToIo();
    }
    // Room freed is signalled by recorded outcomes; asking again each pass bounds any lost signal.
    this.roomFreed();
    this.armTimer();
    this.deps.metrics.eventsParked.set(this.parked.size);
    this.deps.metrics.eventsClaimed.set(this.deps.dispatchBacklog());
    this.deps.metrics.queuesOverflowed.set(this.overflow.size);
    return { loaded };
  }

  private memoryFull(): boolean {
    return this.wheel.size + this.parked.size >= this.opts.wheelSizeMax;
  }

  /**
   * Rows overdue by more than the grace that nothing holds in memory: written by another process,
   * or missed. At most `sweepPagesMax` pages per call; the next call continues after them.
   */
  private async sweepOverdue(untilMs: number): Promise<number> {
    let loaded = 0;
    for (let pages = 0; pages < this.opts.sweepPagesMax; pages++) {
      // No skip here: a page with skip examines several times more rows (to step over a flood
      // once); the sweep reads the same overdue range every interval, so it reads plain pages.
      const page = await this.deps.store.eventListDue({ shards: this.deps.shards(), after: this.sweepAfter, untilMs, limit: this.opts.listBatchMax });
      for (const ref of page) if (this.admit(ref)) loaded++;
      if (page.length < this.opts.listBatchMax) {
        this.sweepAfter = null;
        return loaded;
      }
      const last = page[page.length - 1];
      this.sweepAfter = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
      if (this.memoryFull()) return loaded;
      await yieldToIo();
    }
    return loaded;
  }

  private inMemory(queueKey: string): number {
    return this.wheel.countOf(queueKey) + this.parked.countOf(queueKey);
  }

  /**
   * A ref read from the store enters the wheel unless it is already held (timer or parked) or its
   * queue holds `queueRefsMax` already: then it stays in the store and its queue is marked for a
   * refill from it. A ref after the mark of a queue with rows left in the store stays there too,
   * so the queue's events go in due order (a queue over its capacity cannot starve its oldest
   * events with new ones). Returns whether it entered.
   */
  private admit(ref: DueRef): boolean {
    const key = refKey(ref.tenantId, ref.id);
    if (this.wheel.has(key) || this.parked.has(key)) return false;
    const queueKey = queueKeyOf(ref.tenantId, ref.queue);
    if (this.overflow.covers(queueKey, ref)) return false;
    if (this.inMemory(queueKey) >= this.opts.queueRefsMax) {
      this.overflow.mark(queueKey, ref);
      return false;
    }
    this.wheel.put(ref);
    return true;
  }

  /** A newer version of a ref made in this process: replaces the held one, or is admitted. */
  private upsert(ref: DueRef): void {
    if (this.parked.replace(ref)) return;
    if (this.wheel.has(refKey(ref.tenantId, ref.id))) this.wheel.put(ref);
    else this.admit(ref);
  }

  private forget(tenantId: string, id: string): void {
    this.wheel.remove(tenantId, id);
    this.parked.remove(refKey(tenantId, id));
  }

  /**
   * Follows committed changes made in this process (create, update, cancel, replay): an event
   * that is fireable and due within the look-ahead enters the wheel (replacing an older version);
   * any other leaves it. Events due later are found by the read-ahead. A grouped event that
   * became terminal (a cancel) lets its group's next event go.
   */
  notifyEvents(events: EventRecord[]): void {
    if (!this.running) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    for (const e of events) {
      if (FIREABLE_STATES.includes(e.state) && e.dueAt <= horizon && this.ownsShard(e.shard)) {
        this.upsert(dueRefOf(e));
      } else {
        this.forget(e.tenantId, e.id);
        if (e.group !== null && isTerminal(e.state) && this.ownsShard(e.shard)) {
          this.kickGroup(e.tenantId, e.group).catch((err) => this.deps.logger.error({ err, group: e.group }, 'group kick failed'));
        }
      }
    }
    this.armTimer();
  }

  /** Fireable refs made in this process (retries, rescues): into the wheel when due within the look-ahead. */
  notifyDue(refs: DueRef[]): void {
    if (!this.running) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    for (const ref of refs) if (ref.dueAt <= horizon && this.ownsShard(ref.shard)) this.upsert(ref);
    this.armTimer();
  }

  /** A group's event became terminal: its next event, if fireable, may go now. */
  async kickGroup(tenantId: string, group: string): Promise<void> {
    const head = await this.deps.store.eventGroupHead({ tenantId, group });
    if (head) this.notifyDue([head]);
  }

  /**
   * The dispatcher recorded outcomes, so queues (and the node) have room again: the claim loop
   * runs to take waiting due refs. Queues that drained below half of their memory bound are
   * refilled from the store.
   */
  roomFreed(): void {
    if (!this.running) return;
    // While the claim loop runs it looks at the lines again after each of its waits.
    if (this.parked.size > 0 && !this.firing) {
      const now = this.deps.clock.now();
      // A timer already due fires the claim loop anyway.
      if (!(this.cancelTimer && this.timerAt <= now)) this.setFireTimer(now, now);
    }
    if (this.overflow.size > 0) for (const queueKey of this.overflow.keys()) this.maybeRefill(queueKey);
  }

  private unparkChunk(queueKey: string): number {
    const bound = this.deps.queueBound?.(queueKey) ?? 0;
    return Math.max(1, Math.min(UNPARK_CHUNK_MAX, Math.floor(bound / 4)));
  }

  private globalRoom(): number {
    return this.opts.dispatchBacklogMax - this.deps.dispatchBacklog();
  }

  /**
   * How many of a queue's lined-up refs a claim may take now: its room (its bound minus what it
   * has claimed or is claiming), or 0 while that room is under a chunk and the queue has more
   * lined up (a claim's cost is mostly per statement).
   */
  private roomToTake(queueKey: string): number {
    const room = this.queueRoom(queueKey) - this.claiming.countOf(queueKey);
    return room <= 0 || room < Math.min(this.unparkChunk(queueKey), this.parked.countOf(queueKey)) ? 0 : room;
  }

  private queueRoom(queueKey: string): number {
    return this.deps.queueRoom ? this.deps.queueRoom(queueKey) : Infinity;
  }

  private maybeRefill(queueKey: string): void {
    if (!this.running || this.refilling.has(queueKey) || this.memoryFull()) return;
    if (this.inMemory(queueKey) * 2 >= this.opts.queueRefsMax || !this.overflow.has(queueKey)) return;
    this.refilling.add(queueKey);
    void this.refill(queueKey).finally(() => {
      this.refilling.delete(queueKey);
      this.armTimer();
    });
  }

  /** Reads a queue's rows from its overflow mark on, up to its free share of memory. */
  private async refill(queueKey: string): Promise<void> {
    const mark = this.overflow.take(queueKey);
    if (!mark) return;
    const limit = Math.min(this.opts.listBatchMax, this.opts.queueRefsMax - this.inMemory(queueKey));
    try {
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: null,
        untilMs: this.deps.clock.now() + this.opts.lookaheadMs,
        limit,
        queue: { tenantId: mark.tenantId, queue: mark.queue, from: mark.from },
      });
      if (!this.running) return;
      for (const ref of page) this.admit(ref);
      // A full page may have left rows after its last one (read again: it is held, so skipped).
      if (page.length === limit) this.overflow.mark(queueKey, page[page.length - 1]);
    } catch (err) {
      this.overflow.mark(queueKey, { tenantId: mark.tenantId, queue: mark.queue, ...mark.from });
      this.deps.logger.error({ err, queue: mark.queue }, 'refilling a queue failed');
    }
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
    this.parked.retain((ref) => owns(shards, ref.shard));
    this.cursor = null;
    this.sweepAfter = null;
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
    this.setFireTimer(next, now);
  }

  /** Replaces the one timer with one that runs the claim loop at `at`. */
  private setFireTimer(at: number, now: number): void {
    this.cancelTimer?.();
    this.timerAt = at;
    this.cancelTimer = this.deps.clock.setTimer(at - now, () => {
      this.cancelTimer = null;
      this.timerAt = Infinity;
      void this.fireDue();
    });
  }

  /**
   * Moves entries due by `now` from the timer to their queues' lines (due order within a queue),
   * at most LINE_UP_MAX per call, so a burst of hundreds of thousands moves between claims.
   */
  private lineUpDue(now: number): void {
    for (const ref of this.wheel.popDue(now, LINE_UP_MAX)) this.parked.park(queueKeyOf(ref.tenantId, ref.queue), ref);
  }

  /**
   * Takes up to `max` due refs for one claim from the queues' lines, in turn (deficit round
   * robin): each queue first gets an even share of the claim, then what others left, never more
   * than its room (its bound minus what it has claimed or is claiming) nor, over all queues, the
   * node's. A queue at its bound with a backlog waits until its room is a chunk (a quarter of its
   * bound, at most UNPARK_CHUNK_MAX): a claim's cost is mostly per statement. So a flooded queue
   * fills a claim only with what no other queue has due, and an event due in another queue waits
   * for at most the one claim in progress, whatever the flood.
   */
  private takeInTurn(max: number, idleQueuesOnly = false): DueRef[] {
    let budget = Math.min(max, this.globalRoom() - this.claiming.total);
    const out: DueRef[] = [];
    if (budget <= 0 || this.parked.size === 0) return out;
    const queues: { key: string; room: number }[] = [];
    for (const key of this.parked.queuesInTurn()) {
      if (idleQueuesOnly && this.claiming.countOf(key) > 0) continue;
      const room = this.roomToTake(key);
      if (room > 0) queues.push({ key, room });
    }
    const share = Math.max(CLAIM_SHARE_MIN, Math.ceil(budget / Math.max(1, queues.length)));
    for (const pass of [share, Infinity]) {
      for (const q of queues) {
        if (budget <= 0) return out;
        const refs = this.parked.take(q.key, Math.min(q.room, pass, budget));
        q.room -= refs.length;
        budget -= refs.length;
        for (const ref of refs) out.push(ref);
      }
    }
    return out;
  }

  /**
   * Moves due entries to their queues' lines and claims from the lines in turn, in claims of at
   * most claimBatchMax refs, and hands what was claimed to the dispatcher. Refs beyond their
   * queue's room stay in the line, unclaimed (they stay scheduled in the store and spend no
   * attempt). Up to CLAIMS_IN_FLIGHT_MAX claims run at once (one more for quiet queues), so an
   * event due now is not held behind one claim's round trip (to PostgreSQL or the SQLite thread).
   */
  private async fireDue(): Promise<void> {
    if (this.firing || !this.running) return;
    this.firing = true;
    try {
      for (;;) {
        const spare = await this.waitForClaimSlot();
        if (!this.running) break;
        let now = this.deps.clock.now();
        this.lineUpDue(now);
        const refs = this.takeInTurn(this.opts.claimBatchMax, spare);
        if (refs.length === 0) {
          // Nothing has room; due entries left in the timer (beyond LINE_UP_MAX) wait in lines too.
          const next = this.wheel.peekDueAt();
          if (next === null || next > now) break;
          await yieldToIo();
          continue;
        }
        // Events due at many distinct milliseconds would each make a claim of their own (a
        // transaction: most of a claim's cost). While claims follow each other closely, wait for
        // the spacing and take what fell due meanwhile into the same claim.
        const sinceMs = this.deps.clock.monotonicMs() - this.lastClaimAtMs;
        if (!spare && refs.length < this.opts.claimBatchMax / 4 && sinceMs < CLAIM_SPACING_MS) {
          await this.deps.clock.sleep(CLAIM_SPACING_MS - sinceMs, this.abort.signal).catch(() => {});
          if (!this.running) {
            for (const ref of refs) this.wheel.put(ref);
            break;
          }
          now = this.deps.clock.now();
          this.lineUpDue(now);
          for (const ref of this.takeInTurn(this.opts.claimBatchMax - refs.length)) refs.push(ref);
        }
        // The wall clock may have gone back meanwhile: what is not due by it waits again.
        const claimable: DueRef[] = [];
        for (const ref of refs) {
          if (ref.dueAt <= now) claimable.push(ref);
          else this.wheel.put(ref);
        }
        if (claimable.length > 0) {
          this.lastClaimAtMs = this.deps.clock.monotonicMs();
          for (const part of this.splitLightQueues(claimable, spare)) this.startClaim(part, now);
        }
        // Let I/O (deliveries, API requests) and timers run between claims.
        await yieldToIo();
        if (!this.running) break;
      }
    } finally {
      this.firing = false;
    }
    this.armTimer();
  }

  /**
   * Waits until a claim may start. Up to CLAIMS_IN_FLIGHT_MAX claims run at once; while all of
   * them are taken (by a flooded queue, typically), one more may start for queues with no claim
   * in flight and events due: true then, and that claim takes only from those queues. So an event
   * of a quiet queue waits for a small claim of its own, not for a flood's claims to finish.
   */
  private async waitForClaimSlot(): Promise<boolean> {
    while (this.running && this.claimsInFlight.size >= CLAIMS_IN_FLIGHT_MAX) {
      if (this.claimsInFlight.size === CLAIMS_IN_FLIGHT_MAX) {
        this.lineUpDue(this.deps.clock.now());
        if (this.idleQueueHasDue()) return true;
      }
      // A sleep that loses the race ends by itself within SPARE_CLAIM_POLL_MS (and at stop).
      await Promise.race([...this.claimsInFlight, this.deps.clock.sleep(SPARE_CLAIM_POLL_MS, this.abort.signal).catch(() => {})]);
    }
    return false;
  }

  /** Some queue with no claim in flight has due events and room. */
  private idleQueueHasDue(): boolean {
    if (this.globalRoom() - this.claiming.total <= 0) return false;
    for (const key of this.parked.queuesInTurn()) {
      if (this.claiming.countOf(key) === 0 && this.roomToTake(key) > 0) return true;
    }
    return false;
  }

  /**
   * A claim's duration follows its size (on PostgreSQL under load, tens of ms for 250 rows): the
   * refs of light queues (all they had due, at most CLAIM_SHARE_MIN) go in a small claim of their
   * own, started first, when a slot is left for it. One claim otherwise.
   */
  private splitLightQueues(refs: DueRef[], spare: boolean): DueRef[][] {
    if (spare || this.claimsInFlight.size + 2 > CLAIMS_IN_FLIGHT_MAX + 1) return [refs];
    const keys = refs.map((r) => queueKeyOf(r.tenantId, r.queue));
    const perQueue = new Map<string, number>();
    for (const key of keys) perQueue.set(key, (perQueue.get(key) ?? 0) + 1);
    if (perQueue.size < 2) return [refs];
    const light: DueRef[] = [];
    const heavy: DueRef[] = [];
    refs.forEach((r, i) => (perQueue.get(keys[i])! <= CLAIM_SHARE_MIN && this.parked.countOf(keys[i]) === 0 ? light : heavy).push(r));
    return light.length === 0 || heavy.length === 0 ? [refs] : [light, heavy];
  }

  private startClaim(refs: DueRef[], now: number): void {
    const keys = refs.map((r) => queueKeyOf(r.tenantId, r.queue));
    for (const key of keys) this.claiming.add(key);
    const claim: Promise<void> = this.claim(refs, now).finally(() => {
      for (const key of keys) this.claiming.remove(key);
      this.claimsInFlight.delete(claim);
      // Refs a claim did not take (changed meanwhile) leave room; nothing else signals it.
      if (this.parked.size > 0) this.roomFreed();
    });
    this.claimsInFlight.add(claim);
  }

  private async claim(due: DueRef[], now: number): Promise<void> {
    let claimed: EventRecord[];
    // The lease end this claim writes doubles as its mark: a few ms added by a counter, so two
    // claims of this node never write the same one (recoverClaim tells them apart by it).
    const leaseUntil = now + this.opts.leaseMs + (this.claimSeq++ % CLAIM_MARKS);
    try {
      const refs = this.deps.occurrences ? await this.deps.occurrences.beforeClaim(due, now) : due;
      claimed = await this.deps.store.eventClaim({
        refs: refs.map((r) => ({ tenantId: r.tenantId, id: r.id, version: r.version, group: r.group })),
        now,
        owner: this.deps.owner,
        leaseUntil,
        fenceByShardOwner: this.opts.fenceClaims,
      });
    } catch (err) {
      // The store is unreachable, or it committed the claim and its answer was lost. Read the
      // events back (holding this claim's slot meanwhile, so a store that is down is not asked
      // in a loop): those this claim took are delivered, the others wait in the timer again.
      this.deps.logger.error({ err, count: due.length }, 'claim failed; reading its events back');
      await this.recoverClaim(due, leaseUntil);
      this.armTimer();
      return;
    }
    this.deps.metrics.eventsFired.inc(claimed.length);
    this.deps.occurrences?.afterClaim(claimed);
    if (claimed.length > 0) this.deps.onClaimed(claimed);
  }

  /**
   * After a claim that failed: each ref's event as it stands. One executing under this owner at
   * the version and with the lease end (`leaseUntil`, the claim's mark) that claim would have
   * written was claimed by it (the answer was lost): it goes to the dispatcher, else it would
   * stay executing, its lease renewed, for as long as this node lives. (One claimed meanwhile by
   * another claim of this node, the ref having come back through the sweep, has another mark.)
   * The others go back to the timer. Tries again while the store does not answer, until stop.
   */
  private async recoverClaim(due: DueRef[], leaseUntil: number): Promise<void> {
    for (;;) {
      await this.deps.clock.sleep(200, this.abort.signal).catch(() => {});
      if (!this.running) return;
      try {
        const events = await Promise.all(due.map((r) => this.deps.store.eventGet({ tenantId: r.tenantId, id: r.id })));
        const claimed = events.filter((e, i): e is EventRecord =>
          e !== null && e.state === 'executing' && e.leaseOwner === this.deps.owner && e.version === due[i].version + 1 && e.leaseUntil === leaseUntil);
        if (claimed.length > 0) {
          this.deps.logger.warn({ count: claimed.length }, 'a claim committed though its answer was lost: delivering what it took');
          this.deps.metrics.eventsFired.inc(claimed.length);
          this.deps.occurrences?.afterClaim(claimed);
          this.deps.onClaimed(claimed);
        }
        const taken = new Set(claimed.map((e) => refKey(e.tenantId, e.id)));
        for (const r of due) if (!taken.has(refKey(r.tenantId, r.id)) && !this.wheel.has(refKey(r.tenantId, r.id))) this.wheel.put(r);
        return;
      } catch (err) {
        this.deps.logger.error({ err, count: due.length }, 'reading a failed claim back failed; retrying');
      }
    }
  }
}
