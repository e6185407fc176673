/**
 * The read-ahead: lists events due within the look-ahead from the store into memory (admission),
 * so that each fires at its due millisecond instead of at the next poll.
 *
 *   store ──eventListDue (keyset cursor, ≤ now + lookahead, skip flooded queues)──▶ admission
 *     ├── every sweepIntervalMs: overdue sweep from the start (bounded pages, resumes where it stopped)
 *     ├── per queue drained below half: refill from its overflow mark (its own index)
 *     └── notifyEvents / notifyDue / kickGroup: rows this process wrote behind the cursor
 *
 * Why a cursor: at 5,000 events/s and a 3 s look-ahead, re-reading everything due within the
 * look-ahead on each poll would re-read 15,000 rows per poll. Instead each poll reads only rows past
 * the last one loaded. Rows that appear behind the cursor (an event created or rescheduled to fire
 * soon, a retry, a rescue, a group's next head) are pushed in by `notify*`/`kickGroup` from this
 * process, and a periodic sweep from the start of time catches anything else (rows written by
 * another process) once it is overdue by `sweepGraceMs` and due before everything in memory.
 *
 * Isolation (the isolation invariant), the memory side: a queue that holds `queueRefsMax` entries
 * is refilled from its overflow mark by a read of its own index (`eventListDue` with `queue`),
 * which never reads another queue's rows. The read-ahead asks the store to leave such a queue's
 * rows out (`skip`, up to EVENT_LIST_DUE_SKIP_MAX queues): otherwise a flood of 200,000 rows due
 * in one second is carried page after page through the read-ahead only to be skipped, and another
 * queue's row due at the end of that second is read (and fires) only when the cursor gets there,
 * seconds late on a loaded PostgreSQL. The overdue sweep reads at most `sweepPagesMax` pages per
 * interval and continues where it stopped, so a queue with a large overdue backlog cannot make
 * every sweep read all of it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { FIREABLE_STATES, isTerminal, type EventRecord } from '../core/event.ts';
import { queueKeyOf } from '../core/queue.ts';
import { owns } from '../core/shard.ts';
import { dueRefOf, EVENT_LIST_DUE_SKIP_MAX, type DueRef, type Store } from '../store/store.ts';
import type { Admission } from './admission.ts';
import type { OverflowMark } from './parked.ts';

/** What the read-ahead reads, and how often. */
export interface ReadAheadOptions {
  /** How far ahead events are loaded into memory. */
  lookaheadMs: number;
  /** Interval of the read-ahead poll. */
  pollIntervalMs: number;
  /** Interval of the overdue sweep, and how overdue a row must be before the sweep takes it. */
  sweepIntervalMs: number;
  sweepGraceMs: number;
  /** Rows per eventListDue page. */
  listBatchMax: number;
  /** Pages the overdue sweep reads per interval at most; the next interval continues after them. */
  sweepPagesMax: number;
}

/** What the read-ahead reads from and tells: the store, admission, and the scheduler around it. */
export interface ReadAheadDeps {
  store: Pick<Store, 'eventListDue' | 'eventGroupHead'>;
  clock: Clock;
  logger: Logger;
  admission: Admission;
  /** Shards this node may fire; null means all (single node). */
  shards(): number[] | null;
  /** Whether the scheduler runs: notifications and refills are ignored once it stopped. */
  isRunning(): boolean;
  /**
   * Queues with events loaded (once per page read ahead): what delivers them may get ready (read
   * their tenant's policy and destination) before they fall due.
   */
  onDueSoon?(queues: Map<string, { tenantId: string; queue: string }>): void;
  /** Refs entered memory (a notification, a refill): the claimer's timer may need an earlier time. */
  onAdmitted(): void;
  /** A pass ended (runOnce): what the scheduler does after each (room, timer, gauges). */
  onPassEnded(): void;
}

/** What one read-ahead pass did. */
export interface RunOnceResult {
  loaded: number;
}

type Cursor = { dueAt: number; tenantId: string; id: string };

const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Whether rows may be due after a page of eventListDue: it was full, or it was read with `skip`
 * (then it sent only the rows not skipped of those it examined, and where it stopped; only an
 * empty page says nothing else is due).
 */
function morePages(page: DueRef[], limit: number, skip: OverflowMark[]): boolean {
  return page.length >= limit || (skip.length > 0 && page.length > 0);
}

/** Lists due events into memory: the cursor's pages, the overdue sweep, per-queue refills, notifications. */
export class ReadAhead {
  private cursor: Cursor | null = null;
  /** Where the overdue sweep continues; null: from the start. */
  private sweepAfter: Cursor | null = null;
  private lastSweepMs = -Infinity;
  /** Queues being refilled from the store now (one read per queue at a time). */
  private readonly refilling = new Set<string>();

  constructor(
    private readonly deps: ReadAheadDeps,
    private readonly opts: ReadAheadOptions,
  ) {}

  /**
   * One read-ahead pass: pages through rows past the cursor that are due within the look-ahead
   * until a page comes back short or memory is full; every `sweepIntervalMs` also sweeps overdue
   * rows from the start. Returns how many entries it loaded.
   */
  async runOnce(): Promise<RunOnceResult> {
    const { admission } = this.deps;
    const now = this.deps.clock.now();
    let loaded = 0;
    if (now - this.lastSweepMs >= this.opts.sweepIntervalMs) {
      this.lastSweepMs = now;
      // Rows due from the heap's earliest entry on wait behind it anyway (the heap fires in due
      // order), so the sweep reads only rows due before it: when the node is behind, the few rows
      // older than everything it holds, not the whole overdue backlog every interval. A row it
      // leaves is read once the heap has drained past its due time.
      const earliest = admission.peekDueAt();
      loaded += await this.sweepOverdue(Math.min(now - this.opts.sweepGraceMs, (earliest ?? Infinity) - 1));
    }
    const horizon = now + this.opts.lookaheadMs;
    while (!admission.memoryFull()) {
      const skip = admission.overflow.some(EVENT_LIST_DUE_SKIP_MAX);
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: this.cursor,
        untilMs: horizon,
        limit: this.opts.listBatchMax,
        skip,
      });
      loaded += this.admitPage(page);
      if (page.length > 0) {
        const last = page[page.length - 1];
        this.cursor = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
      }
      if (!morePages(page, this.opts.listBatchMax, skip)) break;
      // A synchronous store (SQLite) answers without a turn of the event loop: yield between
      // pages so timers and I/O run while a large backlog is read.
      await yieldToIo();
    }
    this.deps.onPassEnded();
    return { loaded };
  }

  /** Admits a page's refs and tells onDueSoon their queues; returns how many entered. */
  private admitPage(page: DueRef[]): number {
    let loaded = 0;
    const queues = new Map<string, { tenantId: string; queue: string }>();
    for (const ref of page) {
      if (!this.deps.admission.admit(ref)) continue;
      loaded++;
      const key = queueKeyOf(ref.tenantId, ref.queue);
      if (!queues.has(key)) queues.set(key, { tenantId: ref.tenantId, queue: ref.queue });
    }
    if (queues.size > 0) this.deps.onDueSoon?.(queues);
    return loaded;
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
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: this.sweepAfter,
        untilMs,
        limit: this.opts.listBatchMax,
      });
      for (const ref of page) if (this.deps.admission.admit(ref)) loaded++;
      if (page.length < this.opts.listBatchMax) {
        this.sweepAfter = null;
        return loaded;
      }
      const last = page[page.length - 1];
      this.sweepAfter = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
      if (this.deps.admission.memoryFull()) return loaded;
      await yieldToIo();
    }
    return loaded;
  }

  /** The owned shards changed: the next pass reads again from the start, sweep included. */
  restart(): void {
    this.cursor = null;
    this.sweepAfter = null;
    this.lastSweepMs = -Infinity;
  }

  /**
   * Follows committed changes made in this process (create, update, cancel, replay): an event
   * that is fireable and due within the look-ahead enters memory (replacing an older version);
   * any other leaves it. Events due later are found by the read-ahead. A grouped event that
   * became terminal (a cancel) lets its group's next event go.
   */
  notifyEvents(events: EventRecord[]): void {
    if (!this.deps.isRunning()) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    // Each group once: a bulk cancel of 500 members of one group is one head read, not 500.
    const kicks = new Map<string, { tenantId: string; group: string; shard: number }>();
    for (const e of events) {
      if (FIREABLE_STATES.includes(e.state) && e.dueAt <= horizon && this.ownsShard(e.shard)) {
        this.deps.admission.upsert(dueRefOf(e));
      } else {
        this.deps.admission.forget(e.tenantId, e.id);
        if (e.group !== null && isTerminal(e.state) && this.ownsShard(e.shard))
          kicks.set(`${e.tenantId}\u0000${e.group}`, { tenantId: e.tenantId, group: e.group, shard: e.shard });
      }
    }
    for (const { tenantId, group, shard } of kicks.values()) {
      this.kickGroup(tenantId, group, shard).catch((err) =>
        this.deps.logger.error({ err, group }, 'group kick failed'),
      );
    }
    this.deps.onAdmitted();
  }

  /** Fireable refs made in this process (retries, rescues): into memory when due within the look-ahead. */
  notifyDue(refs: DueRef[]): void {
    if (!this.deps.isRunning()) return;
    const horizon = this.deps.clock.now() + this.opts.lookaheadMs;
    for (const ref of refs) if (ref.dueAt <= horizon && this.ownsShard(ref.shard)) this.deps.admission.upsert(ref);
    this.deps.onAdmitted();
  }

  /** A group's event (of `shard`, when known) became terminal: its next event, if fireable, may go now. */
  async kickGroup(tenantId: string, group: string, shard?: number): Promise<void> {
    const head = await this.deps.store.eventGroupHead({ tenantId, group, shard });
    if (head) this.notifyDue([head]);
  }

  /** Refills every overflowed queue that drained below half of its memory bound (one read per queue at a time). */
  refillDrained(): void {
    const { overflow } = this.deps.admission;
    if (overflow.size > 0) for (const queueKey of overflow.keys()) this.maybeRefill(queueKey);
  }

  private ownsShard(shard: number): boolean {
    return owns(this.deps.shards(), shard);
  }

  private maybeRefill(queueKey: string): void {
    const { admission } = this.deps;
    if (!this.deps.isRunning() || this.refilling.has(queueKey) || admission.memoryFull()) return;
    if (!admission.needsRefill(queueKey)) return;
    this.refilling.add(queueKey);
    void this.refill(queueKey).finally(() => {
      this.refilling.delete(queueKey);
      this.deps.onAdmitted();
    });
  }

  /** Reads a queue's rows from its overflow mark on, up to its free share of memory. */
  private async refill(queueKey: string): Promise<void> {
    const { admission } = this.deps;
    const mark = admission.overflow.take(queueKey);
    if (!mark) return;
    const limit = Math.min(this.opts.listBatchMax, admission.memoryLeftOf(queueKey));
    try {
      const page = await this.deps.store.eventListDue({
        shards: this.deps.shards(),
        after: null,
        untilMs: this.deps.clock.now() + this.opts.lookaheadMs,
        limit,
        queue: { tenantId: mark.tenantId, queue: mark.queue, from: mark.from },
      });
      if (!this.deps.isRunning()) return;
      for (const ref of page) admission.admit(ref);
      // A full page may have left rows after its last one (read again: it is held, so skipped).
      if (page.length === limit) admission.overflow.mark(queueKey, page[page.length - 1]);
    } catch (err) {
      admission.overflow.mark(queueKey, { tenantId: mark.tenantId, queue: mark.queue, ...mark.from });
      this.deps.logger.error({ err, queue: mark.queue }, 'refilling a queue failed');
    }
  }
}
