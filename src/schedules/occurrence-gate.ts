/**
 * The occurrence gate: the scheduler asks it about the refs it is about to claim. A schedule's
 * occurrence made ahead that reaches its first fire later than its schedule's `missedAfter`
 * follows the schedule's `missed` (core/missed.ts) as if it had been computed at that moment: the
 * ones the rule does not fire are canceled (their trace says why) and counted missed. Every other
 * ref goes on to the claim unchanged.
 *
 *   due refs ──late first fire of an occurrence?──▶ schedule (cached) ──occurrenceFires?──▶ claim
 *                                                                          └── no ──▶ cancel, missed + 1
 *
 * It also counts `fired` (deliveries started): an occurrence claimed for its first attempt. Counts
 * are added up in memory (at most COUNTS_PENDING_MAX schedules) and written every
 * COUNTS_FLUSH_MS, or at once when that many are pending; a crash loses at most those. Each write
 * has an id of its own: one that failed is repeated as it was, under its id, before anything new
 * is written, so a write that committed but whose answer was lost is not counted twice.
 *
 * An occurrence is recognised by its id, `<schedule id>@<UTC time>`, whose schedule exists in its
 * tenant, and by its due time: its first fire is due at that time (a retry is not judged). An
 * ordinary event whose id looks like one and whose schedule does not exist is left alone.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { MISSED_AFTER_MS_MIN, occurrenceFires } from '../core/missed.ts';
import { randomUUID } from 'node:crypto';
import { TtlCache } from '../core/ttl-cache.ts';
import type { ScheduleCountsDelta, ScheduleMissed, ScheduleRecord } from '../store/schedules.ts';
import type { DueRef, Store } from '../store/store.ts';
import { missedRuleOf, parseOccurrenceId, timingOf } from './occurrence.ts';
import type { EventSink } from '../core/event-sink.ts';

/** A late occurrence whose schedule could not be read: neither claimed nor canceled now. */
const UNKNOWN = Symbol('unknown');

/** How long a schedule read for the gate is used before it is read again (its `missed` rule may be that stale). */
const SCHEDULE_CACHE_MS = 5_000;
/** Schedules kept in the cache at most (the one read longest ago is dropped when full). */
const SCHEDULE_CACHE_MAX = 10_000;
/** Schedules with counts not yet written, at most; one more flushes first. */
export const COUNTS_PENDING_MAX = 1_000;
export const COUNTS_FLUSH_MS = 1_000;
/** Schedules' counts per store write at most. */
const COUNTS_PER_WRITE_MAX = 100;

export interface OccurrenceGateDeps {
  store: Pick<Store, 'scheduleGet' | 'scheduleCountsAdd' | 'eventCancel'>;
  clock: Clock;
  logger: Logger;
  /** Told of the occurrences it canceled as missed (timers, group order, pull waiters). */
  events: Pick<EventSink, 'changed'>;
  /** Told of each occurrence missed at its fire (metrics). */
  onMissed?(count: number): void;
  /**
   * The tenant's scheduling rate (limits.ts): null when one more occurrence may
   * fire now, else why not (it is then canceled and counted missed). Synchronous: the claim path
   * of an on-time occurrence reads nothing from the store. Absent: none.
   */
  admitFire?(tenantId: string): string | null;
}

export class OccurrenceGate {
  /** Schedules read (null: none with that id), by tenant and id. */
  private readonly cache: TtlCache<string, ScheduleRecord | null>;
  private readonly pending = new Map<string, ScheduleCountsDelta>();
  /** Writes that failed, to repeat as they were (at most one flush's writes: nothing new is written before them). */
  private unconfirmed: { writeId: string; deltas: ScheduleCountsDelta[] }[] = [];
  /** This gate's writes are `<writerId>:<sequence>`. */
  private readonly writerId = randomUUID();
  private writeSeq = 0;
  private flushing: Promise<void> | null = null;
  private lastFlushMs: number;

  constructor(private readonly deps: OccurrenceGateDeps) {
    this.lastFlushMs = deps.clock.monotonicMs();
    this.cache = new TtlCache({
      ttlMs: SCHEDULE_CACHE_MS,
      entriesMax: SCHEDULE_CACHE_MAX,
      nowMs: () => deps.clock.monotonicMs(),
    });
  }

  /**
   * Of `due`, about to be claimed at `now`: the refs to claim. Late first fires of occurrences
   * that their schedule's `missed` does not fire are canceled here (reason in the trace) and left
   * out. Without a late occurrence among them, `due` itself, with no store read.
   */
  async beforeClaim(due: DueRef[], now: number): Promise<DueRef[]> {
    let judged: { ref: DueRef; scheduleId: string; at: number; reason: string | null }[] | null = null;
    for (const ref of due) {
      // Late first fires are judged by the missed rule (below, their schedule read); every first
      // fire takes one of its tenant's scheduling requests, here, with no store read (an ordinary
      // event whose id merely looks like an occurrence takes one too).
      const late = now - ref.dueAt > MISSED_AFTER_MS_MIN;
      if (!late && !this.deps.admitFire) continue;
      const occ = parseOccurrenceId(ref.id);
      if (occ === null || occ.at !== ref.dueAt) continue;
      const refused = late ? null : this.deps.admitFire!(ref.tenantId);
      if (late || refused !== null) (judged ??= []).push({ ref, ...occ, reason: refused });
    }
    if (judged === null) return due;
    const skipped = new Set<DueRef>();
    const canceled: EventRecord[] = [];
    for (const { ref, scheduleId, at, reason: refused } of judged) {
      const reason = refused ?? (await this.lateRefusal(ref.tenantId, scheduleId, at, now));
      if (reason === null) continue;
      if (reason === UNKNOWN) {
        // Its schedule could not be read: not claimed now, not canceled. It stays scheduled in
        // the store and comes back with the overdue sweep, to be judged then.
        skipped.add(ref);
        continue;
      }
      const r = await this.deps.store.eventCancel({
        tenantId: ref.tenantId,
        id: ref.id,
        expectedVersion: ref.version,
        now,
        reason,
      });
      skipped.add(ref);
      if (r.kind !== 'ok') continue; // changed meanwhile: the claim would have skipped it too
      canceled.push(r.event);
      this.count(ref.tenantId, scheduleId, 0, 1, { at: now, count: 1, reason });
    }
    if (canceled.length > 0) {
      this.deps.onMissed?.(canceled.length);
      this.deps.events.changed(canceled);
    }
    return skipped.size === 0 ? due : due.filter((r) => !skipped.has(r));
  }

  /**
   * Why a late first fire of occurrence `at` of schedule `scheduleId` does not fire at `now` (its
   * schedule's missed rule), null when it fires (or its schedule is gone), UNKNOWN when the
   * schedule cannot be read. Its tenant's rate applies too.
   */
  private async lateRefusal(
    tenantId: string,
    scheduleId: string,
    at: number,
    now: number,
  ): Promise<string | null | typeof UNKNOWN> {
    let schedule: ScheduleRecord | null;
    try {
      schedule = await this.schedule(tenantId, scheduleId);
    } catch {
      return UNKNOWN;
    }
    if (schedule === null) return null;
    const spec = schedule.spec;
    const rule = missedRuleOf(spec);
    if (now - at > rule.missedAfterMs && !occurrenceFires(timingOf(spec), rule, at, now)) {
      return `missed: ${now - at} ms late, more than missedAfter (${rule.missedAfterMs} ms); the schedule's missed is ${rule.missed}`;
    }
    return this.deps.admitFire ? this.deps.admitFire(tenantId) : null;
  }

  /** Claimed events: an occurrence's first attempt counts as fired (a delivery started). */
  afterClaim(claimed: EventRecord[]): void {
    for (const e of claimed) {
      if (e.attempts !== 1) continue;
      const occ = parseOccurrenceId(e.id);
      if (occ !== null && occ.at === e.fireAt) this.count(e.tenantId, occ.scheduleId, 1, 0);
    }
  }

  private count(
    tenantId: string,
    id: string,
    firedAdd: number,
    missedAdd: number,
    lastMissed: ScheduleMissed | null = null,
  ): void {
    const key = `${tenantId}\u0000${id}`;
    const d = this.pending.get(key);
    if (d) {
      d.firedAdd += firedAdd;
      d.missedAdd += missedAdd;
      if (lastMissed)
        d.lastMissed = d.lastMissed ? { ...lastMissed, count: d.lastMissed.count + lastMissed.count } : lastMissed;
    } else if (this.pending.size < 2 * COUNTS_PENDING_MAX) {
      this.pending.set(key, { tenantId, id, firedAdd, missedAdd, lastMissed });
    } else {
      // The store has been refusing writes for long: counts are for display, memory is bounded.
      this.deps.logger.warn({ tenantId, schedule: id }, 'schedule counts dropped: too many waiting to be written');
    }
    const dueToFlush = this.deps.clock.monotonicMs() - this.lastFlushMs >= COUNTS_FLUSH_MS;
    if (this.pending.size >= COUNTS_PENDING_MAX || dueToFlush) void this.flush();
  }

  /**
   * Writes the counts: first the writes that failed before, as they were; then, once none is left,
   * the pending counts as new writes. One write at a time; the first that fails is kept, with the
   * ones after it, for the next flush.
   */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pending.size === 0 && this.unconfirmed.length === 0) return Promise.resolve();
    this.lastFlushMs = this.deps.clock.monotonicMs();
    this.flushing = (async () => {
      if (!(await this.write(this.unconfirmed.splice(0)))) return;
      const deltas = [...this.pending.values()];
      this.pending.clear();
      // In small writes: one write of a thousand schedules' counts held the store's one writer
      // (and every claim waiting on it) for several ms.
      const writes = [];
      for (let i = 0; i < deltas.length; i += COUNTS_PER_WRITE_MAX)
        writes.push({
          writeId: `${this.writerId}:${++this.writeSeq}`,
          deltas: deltas.slice(i, i + COUNTS_PER_WRITE_MAX),
        });
      await this.write(writes);
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Writes each in order; on a failure keeps it and the rest in `unconfirmed` and answers false. */
  private async write(writes: { writeId: string; deltas: ScheduleCountsDelta[] }[]): Promise<boolean> {
    for (let i = 0; i < writes.length; i++) {
      try {
        await this.deps.store.scheduleCountsAdd({ ...writes[i], now: this.deps.clock.now() });
      } catch (err) {
        this.deps.logger.warn(
          { err, writes: writes.length - i },
          'writing schedule counts failed; repeated at the next flush',
        );
        this.unconfirmed = writes.slice(i);
        return false;
      }
    }
    return true;
  }

  private async schedule(tenantId: string, id: string): Promise<ScheduleRecord | null> {
    const key = `${tenantId}\u0000${id}`;
    const hit = this.cache.peek(key);
    if (hit?.fresh) return hit.value;
    const readAtMs = this.deps.clock.monotonicMs();
    const schedule = await this.deps.store.scheduleGet({ tenantId, id });
    this.cache.set(key, schedule, readAtMs);
    return schedule;
  }
}
