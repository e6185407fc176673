/**
 * Missed occurrences of a recurring schedule: which late occurrences fire, and how many a late
 * stretch holds, without walking it. Pure functions of a timing, the schedule's `missed` rule and
 * two instants.
 *
 * An occurrence at `at` reaching its fire at `now` is late when `now - at > missedAfterMs`. Late
 * ones follow `missed`:
 *   skip       none fires;
 *   fire-once  the latest late one fires (its next occurrence is not late);
 *   fire-all   the latest `catchUpMax` late ones fire (fewer than catchUpMax later ones are late).
 * The rule depends on the timing and `now` only, so the materialiser (occurrences it has not made)
 * and the scheduler (occurrences made ahead, judged when they fire) decide alike, on any node and
 * after any restart, and neither needs state of its own.
 */
import { nextOccurrence, parseCron, type CronFields, type ScheduleTiming } from './occurrences.ts';
import { wallOf } from './zone.ts';

export type MissedPolicy = 'skip' | 'fire-once' | 'fire-all';

export interface MissedRule {
  missed: MissedPolicy;
  catchUpMax: number;
  missedAfterMs: number;
}

/** The least `missedAfter` a schedule may set: below it, ordinary firing jitter would count as missed. */
export const MISSED_AFTER_MS_MIN = 1_000;
/** The default `missedAfter`. */
export const MISSED_AFTER_MS_DEFAULT = 1_000;
/** A late stretch longer than this is counted as if it ended here (a bound on the day walk of a cron count). */
const COUNT_SPAN_MS_MAX = 100 * 366 * 86_400_000;

/** How many of the late ones the rule lets fire, at most. */
export function lateFiresMax(rule: Pick<MissedRule, 'missed' | 'catchUpMax'>): number {
  return rule.missed === 'skip' ? 0 : rule.missed === 'fire-once' ? 1 : rule.catchUpMax;
}

/** Whether occurrence `at` fires when it reaches its fire at `now` (see the file comment). */
export function occurrenceFires(timing: ScheduleTiming, rule: MissedRule, at: number, now: number): boolean {
  const cutoff = now - rule.missedAfterMs;
  if (at >= cutoff) return true;
  const keep = lateFiresMax(rule);
  if (keep === 0) return false;
  if (keep === 1) {
    const next = nextOccurrence(timing, at);
    return next === null || next >= cutoff;
  }
  return countOccurrences(timing, at + 1, cutoff) < keep;
}

/**
 * The occurrences in [from, to), counted without walking them: arithmetic for `every`; for a
 * cron, per day of the zone's wall time (a day that matches holds |hours| × |minutes| × |seconds|
 * of them), with the first and last day counted in part. Exact but at a DST transition inside the
 * stretch, where wall times that the zone skips (several of which fire as one) or repeats may be
 * counted once each.
 */
export function countOccurrences(timing: ScheduleTiming, from: number, to: number): number {
  const lo = Math.max(from, timing.startAt);
  const hi = Math.min(to, timing.endAt ?? Infinity, lo + COUNT_SPAN_MS_MAX);
  if (!(hi > lo)) return 0;
  if (timing.kind === 'every') {
    // Occurrences are startAt + k·every: those with k in [ceil((lo - s)/e), ceil((hi - s)/e)).
    const k0 = Math.ceil((lo - timing.startAt) / timing.everyMs);
    const k1 = Math.ceil((hi - timing.startAt) / timing.everyMs);
    return Math.max(0, k1 - k0);
  }
  const c = parseCron(timing.cron);
  const a = Math.ceil(wallOf(timing.zone, lo) / 1000);
  const b = Math.ceil(wallOf(timing.zone, hi) / 1000);
  return b > a ? cronCountWallSeconds(c, a, b) : 0;
}

const DAY_S = 86_400;

/** Matching wall seconds in [a, b) (seconds since the epoch, wall time as if UTC). */
export function cronCountWallSeconds(c: CronFields, a: number, b: number): number {
  const dayA = Math.floor(a / DAY_S);
  const dayB = Math.floor(b / DAY_S);
  const perDay = c.hours.size * c.minutes.size * c.seconds.size;
  if (dayA === dayB) return dayMatches(c, dayA) ? tuplesFrom(c, a - dayA * DAY_S) - tuplesFrom(c, b - dayB * DAY_S) : 0;
  let n = dayMatches(c, dayA) ? tuplesFrom(c, a - dayA * DAY_S) : 0;
  for (let d = dayA + 1; d < dayB; d++) if (dayMatches(c, d)) n += perDay;
  if (dayMatches(c, dayB)) n += perDay - tuplesFrom(c, b - dayB * DAY_S);
  return n;
}

function dayMatches(c: CronFields, day: number): boolean {
  const d = new Date(day * DAY_S * 1000);
  if (!c.months.has(d.getUTCMonth() + 1)) return false;
  const dom = c.daysOfMonth.has(d.getUTCDate());
  const dow = c.daysOfWeek.has(d.getUTCDay());
  return c.dayEither ? dom || dow : dom && dow;
}

/** Matching (hour, minute, second) tuples at or after second `tod` of a day. */
function tuplesFrom(c: CronFields, tod: number): number {
  const h0 = Math.floor(tod / 3600);
  const m0 = Math.floor((tod % 3600) / 60);
  const s0 = tod % 60;
  const perHour = c.minutes.size * c.seconds.size;
  let n = 0;
  for (const h of c.hours) if (h > h0) n += perHour;
  if (!c.hours.has(h0)) return n;
  for (const m of c.minutes) if (m > m0) n += c.seconds.size;
  if (!c.minutes.has(m0)) return n;
  for (const s of c.seconds) if (s >= s0) n += 1;
  return n;
}

/**
 * The last `k` occurrences in [from, to), in order. `every`: arithmetic. A cron: the start of the
 * walk is found by bisection on countOccurrences, then at most about k occurrences are walked.
 */
export function lastOccurrences(timing: ScheduleTiming, from: number, to: number, k: number): number[] {
  if (k <= 0) return [];
  const end = Math.min(to, timing.endAt ?? Infinity);
  if (timing.kind === 'every') {
    const last = nextOccurrenceBefore(timing, end);
    const out: number[] = [];
    for (
      let t = last;
      t !== null && t >= from && out.length < k;
      t = t - timing.everyMs >= timing.startAt ? t - timing.everyMs : null
    )
      out.unshift(t);
    return out;
  }
  // Where a DST gap inside the stretch made the count high, the walk finds fewer than k: start
  // further back (twice the target) and walk again; at most a few rounds, each about k steps.
  for (let target = k; ; target *= 2) {
    const start = walkStart(timing, from, end, target);
    const found: number[] = [];
    for (let t = nextOccurrence(timing, start - 1); t !== null && t < end; t = nextOccurrence(timing, t)) {
      found.push(t);
      if (found.length > 2 * target + 64) found.splice(0, found.length - target);
    }
    if (found.length >= k || start <= from) return found.slice(-k);
  }
}

/** The latest instant s in [from, end) with at least `target` occurrences counted in [s, end); `from` when there are fewer. */
function walkStart(timing: ScheduleTiming, from: number, end: number, target: number): number {
  if (countOccurrences(timing, from, end) <= target) return from;
  // count(s, end) falls as s grows: bisect to the second.
  let lo = from;
  let hi = end;
  while (hi - lo > 1_000) {
    const mid = Math.floor((lo + hi) / 2);
    if (countOccurrences(timing, mid, end) >= target) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The last `every` occurrence strictly before `before`, or null. */
function nextOccurrenceBefore(timing: Extract<ScheduleTiming, { kind: 'every' }>, before: number): number | null {
  if (before <= timing.startAt) return null;
  const k = Math.ceil((before - timing.startAt) / timing.everyMs) - 1;
  return timing.startAt + k * timing.everyMs;
}

/** What one advance of a schedule's cursor does (planAdvance). */
export interface AdvancePlan {
  /** Occurrences to make into events, in order: the late ones that fire, then those due by the horizon. */
  make: number[];
  /** How many of `make` are late (they fire at once). */
  lateMade: number;
  /** Late occurrences that do not fire (counted missed). */
  missed: number;
  /** The new cursor: the first occurrence not made; null when none is left. */
  nextAt: number | null;
}

/**
 * One advance of a schedule from its cursor at `now`: the late stretch before `now - missedAfter`
 * in closed form (counted, and only the ones `missed` lets fire made), then the occurrences due by
 * `now + horizonMs`, at most `onTimeMax` of them. Bounded work whatever the stretch: a count by
 * days and a walk of at most catchUpMax (or about it) occurrences.
 */
export function planAdvance(
  timing: ScheduleTiming,
  rule: MissedRule,
  cursor: number | null,
  now: number,
  horizonMs: number,
  onTimeMax: number,
): AdvancePlan {
  const cutoff = now - rule.missedAfterMs;
  const make: number[] = [];
  let missed = 0;
  let at = cursor;
  if (at !== null && at < cutoff) {
    const total = countOccurrences(timing, at, cutoff);
    const firing = lastOccurrences(timing, at, cutoff, Math.min(lateFiresMax(rule), total));
    missed = Math.max(0, total - firing.length);
    make.push(...firing);
    at = nextOccurrence(timing, cutoff - 1);
  }
  const lateMade = make.length;
  while (at !== null && at <= now + horizonMs && make.length - lateMade < onTimeMax) {
    make.push(at);
    at = nextOccurrence(timing, at);
  }
  return { make, lateMade, missed, nextAt: at };
}
