/**
 * The schedule materialiser: turns each recurring schedule's occurrences into ordinary events a
 * short horizon ahead, on the node that owns the schedule's shard (every shard on SQLite).
 *
 *   runOnce: schedules whose cursor (nextAt) ≤ now + horizon, of owned shards
 *     └─ per schedule: walk occurrences from the cursor up to the horizon (at most
 *        OCCURRENCES_PER_ADVANCE_MAX), each one either made into an event or counted missed,
 *        then scheduleAdvance: compare-and-swap of (version, cursor) + insert of the events, in
 *        one transaction. Losing the swap (another node, an edit, a pause) writes nothing.
 *
 * Exactly once per occurrence: an occurrence's event id is `<schedule id>@<UTC time with ms>`
 * and its insert is idempotent; the cursor moves only with the insert. A restart, a second
 * node or a race recomputes the same ids from the same cursor.
 *
 * Missed occurrences: one whose time is more than `missedAfterMs` before now when the walk
 * reaches it (node down, shard moving, schedule paused) follows the schedule's `missed`:
 *   skip       counted, not made;
 *   fire-once  only the latest missed one is made (it fires at once), the others counted;
 *   fire-all   made, oldest first, up to catchUpMax per catch-up (catchUpLeft, kept in the row
 *              and reset once an occurrence is on time again); beyond it, counted.
 *
 * Time: the cursor is stored, so a wall clock that goes back makes nothing twice (the cursor is
 * ahead of it; nothing is due until the clock catches up), and one that jumps forward makes the
 * skipped occurrences missed.
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { TIME_MS_MAX } from '../core/duration.ts';
import type { EventRecord } from '../core/event.ts';
import { canonicalJson, sha256Hex } from '../core/ids.ts';
import { nextOccurrence, type ScheduleTiming } from '../core/occurrences.ts';
import { shardOf } from '../core/shard.ts';
import { occurrenceId, type ScheduleRecord, type ScheduleSpec } from '../store/schedules.ts';
import type { NewEvent, Store } from '../store/store.ts';

/** Schedules read per batch of the due list. */
export const SCHEDULES_PER_BATCH_MAX = 100;
/** Occurrences walked per schedule per advance (made or counted missed); a long catch-up takes several. */
export const OCCURRENCES_PER_ADVANCE_MAX = 500;
/** Rounds of one pass (each a batch of the due list). */
const ROUNDS_PER_PASS_MAX = 100;

export interface MaterialiserOptions {
  /** Occurrences due within this much of now are made into events. */
  horizonMs: number;
  /** Pause between passes. */
  intervalMs: number;
  /** An occurrence reached more than this late is missed (follows `missed`). */
  missedAfterMs: number;
}

export const MATERIALISER_DEFAULTS: MaterialiserOptions = { horizonMs: 10_000, intervalMs: 1_000, missedAfterMs: 1_000 };

export interface MaterialiserDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  shardCount: number;
  /** The shards this node owns; null: all (a single node). */
  shards(): number[] | null;
  /** Told of the events it created (the scheduler's timer, the cluster's wake-ups, metrics). */
  onEventsCreated(events: EventRecord[]): void;
  /** Told of each advance's counts (metrics). */
  onAdvanced?(counts: { made: number; missed: number }): void;
}

export interface PassResult {
  schedules: number;
  made: number;
  missed: number;
  /** Advances that lost their compare-and-swap (an edit, a pause, another node). */
  lost: number;
}

/** The timing part of a spec. */
export function timingOf(spec: Pick<ScheduleSpec, 'cron' | 'everyMs' | 'timezone' | 'startAt' | 'endAt'>): ScheduleTiming {
  if (spec.everyMs !== null) return { kind: 'every', everyMs: spec.everyMs, startAt: spec.startAt, endAt: spec.endAt };
  return { kind: 'cron', cron: spec.cron ?? '', zone: spec.timezone, startAt: spec.startAt, endAt: spec.endAt };
}

/**
 * The event of one occurrence. Its request hash depends only on the template and the instant,
 * so every node (and every restart) builds the same event for it: a repeat is `existing`.
 */
export function occurrenceEvent(s: Pick<ScheduleRecord, 'tenantId' | 'id' | 'spec'>, at: number, shardCount: number): NewEvent {
  const t = s.spec.template;
  const id = occurrenceId(s.id, at);
  return {
    tenantId: s.tenantId,
    id,
    shard: shardOf(s.tenantId, t.group ?? id, shardCount),
    fireAt: at,
    destination: t.destination,
    payload: t.payload,
    headers: t.headers,
    group: t.group,
    retry: t.retry,
    expireAt: t.expireAfterMs === null ? null : Math.min(at + t.expireAfterMs, TIME_MS_MAX),
    tags: t.tags,
    type: t.type ?? null,
    requestHash: sha256Hex(canonicalJson({ occurrence: id, template: t })),
  };
}

export class Materialiser {
  readonly opts: MaterialiserOptions;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: MaterialiserDeps,
    opts: Partial<MaterialiserOptions> = {},
  ) {
    this.opts = { ...MATERIALISER_DEFAULTS, ...opts };
  }

  /**
   * One pass: every due schedule of owned shards, in batches, again while a batch came back full
   * or a schedule's walk stopped at its bound (a long catch-up), and something moved. Bounded.
   */
  async runOnce(): Promise<PassResult> {
    const total: PassResult = { schedules: 0, made: 0, missed: 0, lost: 0 };
    const shards = this.deps.shards();
    if (shards !== null && shards.length === 0) return total;
    for (let round = 0; round < ROUNDS_PER_PASS_MAX; round++) {
      const now = this.deps.clock.now();
      const due = await this.deps.store.scheduleListDue({ shards, untilMs: now + this.opts.horizonMs, limit: SCHEDULES_PER_BATCH_MAX });
      let moved = 0;
      let more = due.length === SCHEDULES_PER_BATCH_MAX;
      for (const s of due) {
        const r = await this.advance(s, now).catch((err: unknown) => {
          // One schedule that cannot advance (its row unreadable, a bug) must not stop the others;
          // a store that is down fails them all, and the next pass tries again.
          this.deps.logger.error({ err, schedule: s.id, tenantId: s.tenantId }, 'advancing a schedule failed');
          return { made: 0, missed: 0, lost: true, more: false };
        });
        total.schedules += 1;
        total.made += r.made;
        total.missed += r.missed;
        if (r.lost) total.lost += 1;
        else moved += 1;
        more ||= r.more;
      }
      if (!more || moved === 0) break;
    }
    return total;
  }

  /** Walks one schedule's occurrences from its cursor and advances it; returns what it did. */
  private async advance(s: ScheduleRecord, now: number): Promise<{ made: number; missed: number; lost: boolean; more: boolean }> {
    const spec = s.spec;
    const timing = timingOf(spec);
    const cutoff = now - this.opts.missedAfterMs;
    const horizon = now + this.opts.horizonMs;
    const events: NewEvent[] = [];
    let at: number | null = s.nextAt;
    let catchUpLeft = s.catchUpLeft;
    let missed = 0;
    let last: number | null = null;
    let steps = 0;
    const make = (t: number) => {
      events.push(occurrenceEvent(s, t, this.deps.shardCount));
      last = t;
    };
    while (at !== null && at <= horizon && steps < OCCURRENCES_PER_ADVANCE_MAX) {
      steps += 1;
      if (at >= cutoff) {
        make(at);
        catchUpLeft = spec.catchUpMax; // on time again: the next outage gets a full catch-up
        at = nextOccurrence(timing, at);
        continue;
      }
      if (timing.kind === 'every' && !(spec.missed === 'fire-all' && catchUpLeft > 0)) {
        // Elapsed time: count the missed run in one step, leaving its last one to the rules below.
        const end = timing.endAt === null ? cutoff : Math.min(cutoff, timing.endAt);
        const before = Math.ceil((end - at) / timing.everyMs) - 1;
        if (before > 0) {
          missed += before;
          at += before * timing.everyMs;
        }
      }
      const next = nextOccurrence(timing, at);
      if (spec.missed === 'fire-all' && catchUpLeft > 0) {
        catchUpLeft -= 1;
        make(at);
      } else if (spec.missed === 'fire-once' && (next === null || next >= cutoff)) {
        make(at);
      } else {
        missed += 1;
      }
      at = next;
    }
    const result = await this.deps.store.scheduleAdvance({
      tenantId: s.tenantId,
      id: s.id,
      version: s.version,
      fromNextAt: s.nextAt as number,
      nextAt: at,
      catchUpLeft,
      firedAdd: events.length,
      missedAdd: missed,
      lastOccurrenceAt: last,
      events,
      now,
    });
    if (!result.applied) return { made: 0, missed: 0, lost: true, more: false };
    const created = result.results.filter((r) => r.kind === 'created').map((r) => r.event);
    if (created.length > 0) this.deps.onEventsCreated(created);
    const conflicts = result.results.filter((r) => r.kind === 'conflict').length;
    if (conflicts > 0) this.deps.logger.warn({ schedule: s.id, tenantId: s.tenantId, conflicts }, 'occurrences already stored with another body were kept as stored');
    if (missed > 0) this.deps.logger.info({ schedule: s.id, tenantId: s.tenantId, missed, made: events.length }, 'schedule occurrences missed');
    this.deps.onAdvanced?.({ made: created.length, missed });
    return { made: created.length, missed, lost: false, more: steps >= OCCURRENCES_PER_ADVANCE_MAX };
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.opts.intervalMs, this.abort.signal, () =>
      this.runOnce().catch((err) => this.deps.logger.error({ err }, 'materialising schedules failed')),
    );
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
