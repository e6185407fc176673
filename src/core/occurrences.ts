/**
 * When a recurring schedule's occurrences happen. Pure functions of the schedule's timing and an
 * instant; no clock, no process time zone.
 *
 * - `cron`: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), matched
 *   against the wall time of the schedule's IANA zone. cron-parser parses and checks the fields;
 *   the matching and every conversion between wall time and instants are here and in zone.ts.
 *   A wall time the zone skips (spring forward) fires once at the first instant after it (the
 *   transition); a wall time the zone shows twice (fall back) fires once, at its first instant.
 *   Day-of-month and day-of-week: when both are restricted (neither starts with `*`), a day
 *   matching either matches (Vixie cron); otherwise both must match.
 * - `every`: elapsed time, startAt + k × every, whatever the zone does.
 * Occurrences are ≥ startAt and < endAt.
 */
import { CronExpressionParser } from 'cron-parser';
import { instantOf, repeatedUntilWall, wallOf } from './zone.ts';

export type ScheduleTiming =
  | { kind: 'cron'; cron: string; zone: string; startAt: number; endAt: number | null }
  | { kind: 'every'; everyMs: number; startAt: number; endAt: number | null };

/** A parsed cron expression: the allowed values of each field. */
export interface CronFields {
  seconds: Set<number>;
  minutes: Set<number>;
  hours: Set<number>;
  daysOfMonth: Set<number>;
  months: Set<number>;
  /** 0 = Sunday. */
  daysOfWeek: Set<number>;
  /** Both day fields restricted: a day matching either matches. */
  dayEither: boolean;
}

export class CronSyntaxError extends Error {
  override name = 'CronSyntaxError';
}

const NAMES = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)\b/gi;
const CRON_LENGTH_MAX = 200;
/** How far ahead a cron is searched for a match (it may match only on 29 February, or never). */
const CRON_SEARCH_MS_MAX = 9 * 366 * 86_400_000;

const cache = new Map<string, CronFields>();
const CACHE_MAX = 10_000;

/**
 * Parses a 5- or 6-field cron expression. Plain numbers, names (MON, JAN), ranges, lists and
 * steps; the Quartz extensions (L, W, #, ?) and hashes (H) are refused, so what is accepted is
 * what every cron reader means by it.
 */
export function parseCron(expression: string): CronFields {
  const hit = cache.get(expression);
  if (hit) return hit;
  if (expression.length > CRON_LENGTH_MAX) throw new CronSyntaxError(`at most ${CRON_LENGTH_MAX} characters`);
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6)
    throw new CronSyntaxError(
      `must have 5 fields (minute hour day month weekday) or 6 (seconds first), not ${parts.length}`,
    );
  for (const p of parts) {
    if (!/^[0-9A-Za-z*,/-]+$/.test(p) || /[A-Za-z]/.test(p.replace(NAMES, ''))) {
      throw new CronSyntaxError(
        `field "${p}": only numbers, names (MON, JAN), *, ranges (a-b), lists (a,b) and steps (/n)`,
      );
    }
  }
  const six = parts.length === 6 ? parts : ['0', ...parts];
  let fields: ReturnType<typeof CronExpressionParser.parse>['fields'];
  try {
    fields = CronExpressionParser.parse(six.join(' '), { tz: 'UTC', currentDate: 0 }).fields;
  } catch (err) {
    throw new CronSyntaxError((err as Error).message);
  }
  const nums = (v: readonly (number | string)[]) => new Set(v.filter((x): x is number => typeof x === 'number'));
  const dow = nums(fields.dayOfWeek.values);
  if (dow.has(7)) dow.add(0);
  const restricted = (raw: string) => !raw.startsWith('*');
  const parsed: CronFields = {
    seconds: nums(fields.second.values),
    minutes: nums(fields.minute.values),
    hours: nums(fields.hour.values),
    daysOfMonth: nums(fields.dayOfMonth.values),
    months: nums(fields.month.values),
    daysOfWeek: dow,
    dayEither: restricted(six[3]) && restricted(six[5]),
  };
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(expression, parsed);
  return parsed;
}

function dayMatches(c: CronFields, d: Date): boolean {
  const dom = c.daysOfMonth.has(d.getUTCDate());
  const dow = c.daysOfWeek.has(d.getUTCDay());
  return c.dayEither ? dom || dow : dom && dow;
}

/** The first wall time after `wall` (strictly, to the second) that the fields match; null if none within ~9 years. */
export function cronNextWall(c: CronFields, wall: number): number | null {
  const d = new Date(Math.ceil((wall + 1) / 1000) * 1000);
  const limit = d.getTime() + CRON_SEARCH_MS_MAX;
  while (d.getTime() <= limit) {
    if (!c.months.has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(c, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!c.hours.has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0, 0);
    } else if (!c.minutes.has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0, 0);
    } else if (!c.seconds.has(d.getUTCSeconds())) {
      d.setUTCSeconds(d.getUTCSeconds() + 1, 0);
    } else {
      return d.getTime();
    }
  }
  return null;
}

/** The first cron occurrence strictly after instant `after`, in `zone`. */
function cronNext(c: CronFields, zone: string, after: number): number | null {
  let wall = wallOf(zone, after);
  // In the second pass through a repeated hour, those wall times already had their (first) instant.
  const repeatedUntil = repeatedUntilWall(zone, after);
  if (repeatedUntil !== null) wall = Math.max(wall, repeatedUntil - 1);
  // Instants grow with wall times (first-instant and gap rules keep the order), so the first
  // matching wall time whose instant is after `after` is the answer; the loop is a guard.
  for (let i = 0; i < 10; i++) {
    const next = cronNextWall(c, wall);
    if (next === null) return null;
    const at = instantOf(zone, next);
    if (at > after) return at;
    wall = next;
  }
  return null;
}

/** The schedule's first occurrence strictly after instant `after`; null when there is none (endAt, or a cron that never matches). */
export function nextOccurrence(timing: ScheduleTiming, after: number): number | null {
  const from = Math.max(after, timing.startAt - 1);
  let at: number | null;
  if (timing.kind === 'every') {
    const k = Math.floor((from - timing.startAt) / timing.everyMs) + 1;
    at = timing.startAt + Math.max(0, k) * timing.everyMs;
  } else {
    at = cronNext(parseCron(timing.cron), timing.zone, from);
  }
  if (at === null || (timing.endAt !== null && at >= timing.endAt)) return null;
  return at;
}

/** Up to `count` occurrences strictly after `after`, in order. */
export function nextOccurrences(timing: ScheduleTiming, after: number, count: number): number[] {
  const out: number[] = [];
  let t = after;
  while (out.length < count) {
    const next = nextOccurrence(timing, t);
    if (next === null) break;
    out.push(next);
    t = next;
  }
  return out;
}
