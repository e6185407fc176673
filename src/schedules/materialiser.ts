/**
 * The schedule materialiser: turns each recurring schedule's occurrences into ordinary events a
 * short horizon ahead, on the node that owns the schedule's shard (every shard on SQLite). Making
 * ahead is invisible: an occurrence behaves as if computed at its own time.
 *
 *   runOnce: 1. on time first: schedules whose cursor (nextAt) is within [now - 1s, now + horizon]
 *            2. then catch-ups (cursor further back: a node down, a shard moving, a resume), a
 *               tenant at a time, round robin, at most CATCH_UP_ADVANCES_PER_PASS per pass
 *     └─ per schedule, advanceSchedule: core/missed.ts planAdvance (the late stretch in closed
 *        form: counted, only the occurrences `missed` fires made; then those due by the horizon),
 *        then scheduleAdvance: compare-and-swap of (version, cursor) + insert of the events, in
 *        one transaction. Losing the swap (another node, an edit, a pause) writes nothing.
 *
 * Exactly once per occurrence: an occurrence's event id is `<schedule id>@<UTC time with ms>`
 * and its insert is idempotent; the cursor moves only with the insert. A restart, a second node
 * or a race recomputes the same ids from the same cursor. Occurrences made ahead that reach their
 * fire late are judged then, by the same rule (occurrence-gate.ts). What an occurrence is (its
 * event, its timing, its missed rule) is occurrence.ts, pure.
 *
 * Time: the cursor is stored, so a wall clock that goes back makes nothing twice (the cursor is
 * ahead of it; nothing is due until the clock catches up), and one that jumps forward makes the
 * skipped occurrences a late stretch.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { runEvery } from '../core/loop.ts';
import { MISSED_AFTER_MS_MIN, planAdvance } from '../core/missed.ts';
import type {
  ScheduleAdvanceParams,
  ScheduleAdvanceResult,
  ScheduleMissed,
  ScheduleRecord,
  ScheduleSpec,
} from '../store/schedules.ts';
import type { Store } from '../store/store.ts';
import { missedRuleOf, occurrenceEvent, timingOf } from './occurrence.ts';
import type { EventSink } from '../core/event-sink.ts';

/** Schedules read per batch of the due list. */
export const SCHEDULES_PER_BATCH_MAX = 100;
/** On-time occurrences made per schedule per advance; a horizon holding more takes several. */
export const OCCURRENCES_PER_ADVANCE_MAX = 500;
/** Rounds of the on-time part of one pass (each a batch of the due list). */
const ROUNDS_PER_PASS_MAX = 100;
/** Catch-up advances per pass, over all tenants: each is bounded work (a count, at most catchUpMax made). */
export const CATCH_UP_ADVANCES_PER_PASS = 50;
/** Catch-up advances of one tenant per turn of the round robin. */
export const CATCH_UP_PER_TENANT_TURN = 5;
/** Occurrences written in one transaction of advances at most (a schedule's own may exceed it alone). */
export const ADVANCE_EVENTS_PER_TRANSACTION_MAX = 200;
/** Pause between passes while catch-ups are left (instead of intervalMs). */
const CATCH_UP_PAUSE_MS = 50;

export interface MaterialiserOptions {
  /** Occurrences due within this much of now are made into events. */
  horizonMs: number;
  /**
   * A schedule whose cursor comes within the horizon is advanced this much further: it is then
   * left alone for about this long (one transaction per schedule per refill, not per occurrence:
   * 1,000 every-second schedules cost 100 advances a second, not 1,000).
   */
  refillMs: number;
  /** Pause between passes. */
  intervalMs: number;
}

export const MATERIALISER_DEFAULTS: MaterialiserOptions = { horizonMs: 10_000, refillMs: 10_000, intervalMs: 1_000 };

/** How far ahead an advance makes occurrences: the horizon and the refill. */
export function madeAheadMs(opts: Pick<MaterialiserOptions, 'horizonMs' | 'refillMs'>): number {
  return opts.horizonMs + opts.refillMs;
}

export interface MaterialiserDeps {
  store: Pick<Store, 'scheduleListDue' | 'scheduleListCatchUp' | 'scheduleAdvance' | 'scheduleAdvanceMany'>;
  clock: Clock;
  logger: Logger;
  shardCount: number;
  /** The shards this node owns; null: all (a single node). */
  shards(): number[] | null;
  /** Told of the events it created (the scheduler's timer, the cluster's wake-ups, metrics). */
  events: Pick<EventSink, 'changed'>;
  /** Told of each advance's counts (metrics). */
  onAdvanced?(counts: { made: number; missed: number }): void;
  /**
   * The tenant's pending-events quota (limits.ts): occurrences it refuses are counted
   * missed with its reason. Absent: none.
   */
  limits?: {
    admitMade(tenantId: string, n: number): Promise<string | null>;
    made(tenantId: string, n: number): void;
  };
}

export interface PassResult {
  schedules: number;
  made: number;
  missed: number;
  /** Advances that lost their compare-and-swap (an edit, a pause, another node). */
  lost: number;
  /** Schedules with a late stretch were left for the next pass (the pass's catch-up budget ran out). */
  catchUpLeft: boolean;
}

/** The most of `n` occurrences the tenant's limits admit now (n, then halves, down to 0), and why not more. */
async function admitCount(
  limits: NonNullable<MaterialiserDeps['limits']>,
  tenantId: string,
  n: number,
): Promise<{ admitted: number; reason: string | null }> {
  let reason: string | null = null;
  for (let k = n; k > 0; k = Math.floor(k / 2)) {
    const refused = await limits.admitMade(tenantId, k);
    if (refused === null) return { admitted: k, reason };
    reason ??= refused;
  }
  return { admitted: 0, reason };
}

/** Why occurrences a late stretch held were missed. */
function lateReason(spec: ScheduleSpec): string {
  return `late: they could not fire within missedAfter (${spec.missedAfterMs} ms) of their time (the node stopped, their shard moved, or the schedule was paused); missed is ${spec.missed}`;
}

export interface AdvanceResult {
  /** The events it created (or made again). */
  created: EventRecord[];
  missed: number;
  /** The compare-and-swap was lost: nothing written. */
  lost: boolean;
}

type AdvanceDeps = Pick<MaterialiserDeps, 'store' | 'logger' | 'shardCount' | 'limits'>;

/**
 * What advancing schedule `s` from its cursor at `now` writes (planAdvance, then the tenant's
 * pending quota): the occurrences due by `now + aheadMs` and the late ones `missed` fires, with the
 * cursor's compare-and-swap. Null when there is nothing to write.
 */
async function planScheduleAdvance(
  deps: AdvanceDeps,
  s: ScheduleRecord,
  now: number,
  aheadMs: number,
): Promise<ScheduleAdvanceParams | null> {
  if (s.paused || s.nextAt === null) return null;
  const plan = planAdvance(timingOf(s.spec), missedRuleOf(s.spec), s.nextAt, now, aheadMs, OCCURRENCES_PER_ADVANCE_MAX);
  if (plan.make.length === 0 && plan.missed === 0 && plan.nextAt === s.nextAt) return null;
  let make = plan.make;
  let nextAt = plan.nextAt;
  let missed = plan.missed;
  let lastMissed: ScheduleMissed | null = missed > 0 ? { at: now, count: missed, reason: lateReason(s.spec) } : null;
  if (deps.limits && make.length > 0) {
    // The tenant's pending-events quota: as many as it admits are made. Of the others, those
    // whose time has come can wait no longer (missed, with the quota as the reason); the cursor
    // stops at the first that can, and a later pass asks again.
    const { admitted, reason } = await admitCount(deps.limits, s.tenantId, make.length);
    if (admitted < make.length) {
      const rest = make.slice(admitted);
      const waiting = rest.findIndex((at) => at > now);
      const refusedNow = waiting === -1 ? rest.length : waiting;
      if (refusedNow > 0) {
        missed += refusedNow;
        lastMissed = { at: now, count: refusedNow, reason: reason ?? 'refused by a tenant limit' };
      }
      if (waiting !== -1) nextAt = rest[waiting];
      make = make.slice(0, admitted);
    }
  }
  return {
    tenantId: s.tenantId,
    id: s.id,
    version: s.version,
    fromNextAt: s.nextAt,
    nextAt,
    // `fired` counts deliveries started (occurrence-gate.ts), not occurrences made.
    firedAdd: 0,
    missedAdd: missed,
    lastMissed,
    lastOccurrenceAt: make.length > 0 ? make[make.length - 1] : null,
    events: make.map((at) => occurrenceEvent(s, at, deps.shardCount)),
    now,
  };
}

/** What an advance did, from its params and the store's answer. */
function advanceDone(deps: AdvanceDeps, p: ScheduleAdvanceParams, result: ScheduleAdvanceResult): AdvanceResult {
  if (!result.applied) return { created: [], missed: 0, lost: true };
  const created = result.results.filter((r) => r.kind === 'created').map((r) => r.event);
  if (created.length > 0) deps.limits?.made(p.tenantId, created.length);
  const conflicts = result.results.filter((r) => r.kind === 'conflict').length;
  if (conflicts > 0)
    deps.logger.warn(
      { schedule: p.id, tenantId: p.tenantId, conflicts },
      'occurrences already stored with another body were kept as stored',
    );
  if (p.missedAdd > 0)
    deps.logger.info(
      { schedule: p.id, tenantId: p.tenantId, missed: p.missedAdd, reason: p.lastMissed?.reason },
      'schedule occurrences missed',
    );
  return { created, missed: p.missedAdd, lost: false };
}

/**
 * Advances schedule `s` from its cursor at `now` (planAdvance), making its occurrences due by
 * `now + aheadMs` (and the late ones `missed` fires) in the transaction that moves the cursor.
 * Any node may call it for any schedule: the compare-and-swap makes a second caller write nothing.
 */
export async function advanceSchedule(
  deps: AdvanceDeps,
  s: ScheduleRecord,
  now: number,
  aheadMs: number,
): Promise<AdvanceResult> {
  const p = await planScheduleAdvance(deps, s, now, aheadMs);
  if (p === null) return { created: [], missed: 0, lost: false };
  return advanceDone(deps, p, await deps.store.scheduleAdvance(p));
}

/**
 * As advanceSchedule for each of `schedules`, their writes in as few store transactions as
 * ADVANCE_EVENTS_PER_TRANSACTION_MAX allows (each its own compare-and-swap): a commit per batch of
 * schedules instead of one per schedule, and no transaction long enough to hold claims back.
 */
export async function advanceSchedules(
  deps: AdvanceDeps,
  schedules: ScheduleRecord[],
  now: number,
  aheadMs: number,
): Promise<AdvanceResult[]> {
  const plans: (ScheduleAdvanceParams | null)[] = [];
  for (const s of schedules) plans.push(await planScheduleAdvance(deps, s, now, aheadMs));
  const done = new Map<ScheduleAdvanceParams, ScheduleAdvanceResult>();
  let chunk: ScheduleAdvanceParams[] = [];
  let events = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const results = await deps.store.scheduleAdvanceMany({ advances: chunk });
    chunk.forEach((p, i) => done.set(p, results[i]));
    chunk = [];
    events = 0;
  };
  for (const p of plans) {
    if (p === null) continue;
    if (chunk.length > 0 && events + p.events.length > ADVANCE_EVENTS_PER_TRANSACTION_MAX) await flush();
    chunk.push(p);
    events += p.events.length;
  }
  await flush();
  return plans.map((p) => (p === null ? { created: [], missed: 0, lost: false } : advanceDone(deps, p, done.get(p)!)));
}

export class Materialiser {
  readonly opts: MaterialiserOptions;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  /** The round robin's place among tenants with catch-ups: the last tenant served. */
  private catchUpAfter = '';

  constructor(
    private readonly deps: MaterialiserDeps,
    opts: Partial<MaterialiserOptions> = {},
  ) {
    this.opts = { ...MATERIALISER_DEFAULTS, ...opts };
  }

  /** One pass: the on-time schedules of owned shards, then catch-ups within the pass's budget. Bounded. */
  async runOnce(): Promise<PassResult> {
    const total: PassResult = { schedules: 0, made: 0, missed: 0, lost: 0, catchUpLeft: false };
    const shards = this.deps.shards();
    if (shards !== null && shards.length === 0) return total;
    for (let round = 0; round < ROUNDS_PER_PASS_MAX; round++) {
      const now = this.deps.clock.now();
      const due = await this.deps.store.scheduleListDue({
        shards,
        fromMs: now - MISSED_AFTER_MS_MIN,
        untilMs: now + this.opts.horizonMs,
        limit: SCHEDULES_PER_BATCH_MAX,
      });
      const moved = await this.advanceAll(due, now, total);
      if (due.length < SCHEDULES_PER_BATCH_MAX || moved === 0) break;
    }
    total.catchUpLeft = await this.catchUp(shards, total);
    return total;
  }

  /**
   * Catch-ups, a tenant at a time after the last one served (wrapping once), at most
   * CATCH_UP_PER_TENANT_TURN of a tenant per turn and CATCH_UP_ADVANCES_PER_PASS in all. True
   * when the budget ran out with catch-ups left.
   */
  private async catchUp(shards: number[] | null, total: PassResult): Promise<boolean> {
    let budget = CATCH_UP_ADVANCES_PER_PASS;
    // Moves since the round robin last wrapped to the first tenant: none in a whole round (every
    // swap lost: another node, edits) ends the pass.
    let movedThisRound = 0;
    while (budget > 0) {
      const now = this.deps.clock.now();
      const page = await this.deps.store.scheduleListCatchUp({
        shards,
        beforeMs: now - MISSED_AFTER_MS_MIN,
        afterTenantId: this.catchUpAfter,
        limit: CATCH_UP_PER_TENANT_TURN,
      });
      if (page.length === 0) {
        if (this.catchUpAfter === '') return false; // none at all
        this.catchUpAfter = '';
        if (movedThisRound === 0) return false;
        movedThisRound = 0;
        continue;
      }
      const tenantId = page[0].tenantId;
      const turn = page.filter((s) => s.tenantId === tenantId).slice(0, budget);
      movedThisRound += await this.advanceAll(turn, now, total);
      budget -= turn.length;
      this.catchUpAfter = tenantId;
    }
    return true;
  }

  /** Advances the schedules (one store transaction); returns how many moved (did not lose their swap). */
  private async advanceAll(schedules: ScheduleRecord[], now: number, total: PassResult): Promise<number> {
    if (schedules.length === 0) return 0;
    const results = await advanceSchedules(this.deps, schedules, now, madeAheadMs(this.opts)).catch(
      (err: unknown): AdvanceResult[] => {
        // The batch could not be written (a store that is down, a bug): the next pass tries again.
        this.deps.logger.error({ err, schedules: schedules.length }, 'advancing schedules failed');
        return schedules.map(() => ({ created: [], missed: 0, lost: true }));
      },
    );
    let moved = 0;
    for (const r of results) {
      total.schedules += 1;
      total.made += r.created.length;
      total.missed += r.missed;
      if (r.lost) total.lost += 1;
      else moved += 1;
      if (r.created.length > 0) this.deps.events.changed(r.created);
      if (!r.lost) this.deps.onAdvanced?.({ made: r.created.length, missed: r.missed });
    }
    return moved;
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(
      this.deps.clock,
      (r: PassResult | undefined) => (r?.catchUpLeft ? CATCH_UP_PAUSE_MS : this.opts.intervalMs),
      this.abort.signal,
      () => this.runOnce(),
      { onError: (err) => this.deps.logger.error({ err }, 'materialising schedules failed') },
    );
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
