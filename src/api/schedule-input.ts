/**
 * Schedule bodies: checked into a ScheduleSpec (every rule names its field in a 400; nothing is
 * written before all pass), and a stored schedule back into its JSON.
 *
 * The template is checked by building the event of the schedule's first occurrence with the same
 * function that checks POST /v1/events (toNewEvent), so a template is accepted exactly when its
 * events would be.
 */
import { formatDuration, parseDurationMs, parseTimeMs, TIME_MS_MAX } from '../core/duration.ts';
import { invalid } from '../core/errors.ts';
import { CronSyntaxError, nextOccurrences, parseCron } from '../core/occurrences.ts';
import { MISSED_AFTER_MS_DEFAULT, MISSED_AFTER_MS_MIN } from '../core/missed.ts';
import { isTimeZone, wallOf } from '../core/zone.ts';
import { timingOf } from '../schedules/index.ts';
import { occurrenceId, type MissedPolicy, type ScheduleRecord, type ScheduleSpec } from '../store/schedules.ts';
import type { EventInputContext } from './event-input.ts';
import { toNewEvent } from './event-input.ts';
import { destinationRefForDisplay, headersForDisplay, retryJson } from './event-json.ts';
import type { ScheduleJsonOutput } from './schemas/schedules.ts';

/** `every` below this is refused: a schedule is not a busy loop. */
export const EVERY_MS_MIN = 1_000;
export const CATCH_UP_MAX_DEFAULT = 100;
/** The largest `missedAfter`: a day late is missed whatever the schedule says. */
export const MISSED_AFTER_MS_MAX = 86_400_000;
/** Occurrences shown in a schedule's `next`. */
export const NEXT_SHOWN = 5;

/** The fields of a schedule body (create, or a stored body merged with a patch). */
export interface ScheduleInput {
  cron?: string;
  every?: string | number;
  timezone?: string;
  startAt?: string | number;
  endAt?: string | number | null;
  missed?: MissedPolicy;
  catchUpMax?: number;
  missedAfter?: string | number;
  destination?: string | { url: string };
  payload?: unknown;
  headers?: Record<string, string>;
  group?: string;
  retry?: { maxAttempts?: number; minBackoff?: string | number; maxBackoff?: string | number; coefficient?: number };
  expireAfter?: string | number;
  tags?: Record<string, string>;
  type?: string;
}

type Timing = Pick<
  ScheduleSpec,
  'cron' | 'everyMs' | 'timezone' | 'startAt' | 'endAt' | 'missed' | 'catchUpMax' | 'missedAfterMs'
>;

/** The timing of a body, checked; `now` is the default startAt. */
export function checkTiming(input: ScheduleInput, now: number): Timing {
  if (input.cron !== undefined && input.every !== undefined) throw invalid('every', 'give cron or every, not both');
  if (input.cron === undefined && input.every === undefined)
    throw invalid('cron', 'give cron (e.g. "0 9 * * MON-FRI") or every (e.g. "15m")');
  const timezone = input.timezone ?? 'UTC';
  if (!isTimeZone(timezone))
    throw invalid(
      'timezone',
      `"${timezone}" is not an IANA time zone (e.g. "Europe/Paris", "America/New_York", "UTC")`,
    );
  let cron: string | null = null;
  let everyMs: number | null = null;
  if (input.cron !== undefined) {
    try {
      parseCron(input.cron);
    } catch (err) {
      if (!(err instanceof CronSyntaxError)) throw err;
      throw invalid('cron', err.message);
    }
    cron = input.cron.trim().split(/\s+/).join(' ');
  } else {
    everyMs = parseDurationMs(input.every);
    if (everyMs === null) throw invalid('every', 'must be a duration such as "30s", "15m", "1h" or milliseconds');
    if (everyMs < EVERY_MS_MIN) throw invalid('every', `must be at least ${formatDuration(EVERY_MS_MIN)}`);
  }
  const startAt = input.startAt === undefined ? now : parseTimeMs(input.startAt);
  if (startAt === null)
    throw invalid('startAt', 'must be an RFC 3339 time with a zone or epoch milliseconds, in years 2000 to 9999');
  let endAt: number | null = null;
  if (input.endAt !== undefined && input.endAt !== null) {
    endAt = parseTimeMs(input.endAt);
    if (endAt === null)
      throw invalid('endAt', 'must be an RFC 3339 time with a zone or epoch milliseconds, in years 2000 to 9999');
    if (endAt <= startAt) throw invalid('endAt', 'must be after startAt');
  }
  let missedAfterMs = MISSED_AFTER_MS_DEFAULT;
  if (input.missedAfter !== undefined) {
    const ms = parseDurationMs(input.missedAfter);
    if (ms === null) throw invalid('missedAfter', 'must be a duration such as "1s", "30s", "5m" or milliseconds');
    if (ms < MISSED_AFTER_MS_MIN || ms > MISSED_AFTER_MS_MAX)
      throw invalid(
        'missedAfter',
        `must be between ${formatDuration(MISSED_AFTER_MS_MIN)} and ${formatDuration(MISSED_AFTER_MS_MAX)}`,
      );
    missedAfterMs = ms;
  }
  return {
    cron,
    everyMs,
    timezone,
    startAt,
    endAt,
    missed: input.missed ?? 'skip',
    catchUpMax: input.catchUpMax ?? CATCH_UP_MAX_DEFAULT,
    missedAfterMs,
  };
}

/** A whole body as a spec: timing, then the template as the event of an occurrence would be checked. */
export async function toScheduleSpec(ctx: EventInputContext, id: string, input: ScheduleInput): Promise<ScheduleSpec> {
  const timing = checkTiming(input, ctx.now);
  if (input.destination === undefined) throw invalid('destination', 'is required');
  const at = Math.min(Math.max(timing.startAt, ctx.now), TIME_MS_MAX);
  const event = await toNewEvent(ctx, {
    id: occurrenceId(id, at),
    // Now, not the occurrence: the tenant's scheduleAheadMax bounds single events, not schedules.
    fireAt: ctx.now,
    destination: input.destination,
    payload: input.payload,
    headers: input.headers,
    group: input.group,
    retry: input.retry,
    expireAfter: input.expireAfter,
    tags: input.tags,
    type: input.type,
  });
  const template = {
    destination: event.destination,
    payload: event.payload,
    headers: event.headers,
    group: event.group,
    retry: event.retry,
    expireAfterMs: event.expireAt === null ? null : event.expireAt - event.fireAt,
    tags: event.tags,
    type: event.type ?? null,
  };
  const stored: Record<string, unknown> = { ...input };
  for (const k of Object.keys(stored)) if (stored[k] === undefined) delete stored[k];
  return { ...timing, template, input: stored };
}

/** The instant `at` in `zone` as local RFC 3339 with the zone's offset then. */
export function localTime(zone: string, at: number): string {
  const wall = wallOf(zone, at);
  const offsetMin = Math.round((wall - at) / 60_000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${new Date(wall).toISOString().slice(0, -1)}${sign}${hh}:${mm}`;
}

export function occurrencesJson(spec: Pick<ScheduleSpec, 'timezone'>, at: number[]): { at: string; local: string }[] {
  return at.map((t) => ({ at: new Date(t).toISOString(), local: localTime(spec.timezone, t) }));
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function toScheduleJson(s: ScheduleRecord, now: number, nextCount = NEXT_SHOWN): ScheduleJsonOutput {
  const spec = s.spec;
  const t = spec.template;
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: s.id,
    cron: spec.cron,
    every: spec.everyMs === null ? null : formatDuration(spec.everyMs),
    timezone: spec.timezone,
    startAt: iso(spec.startAt),
    endAt: spec.endAt === null ? null : iso(spec.endAt),
    missed: spec.missed,
    catchUpMax: spec.catchUpMax,
    missedAfter: formatDuration(spec.missedAfterMs),
    paused: s.paused,
    destination: destinationRefForDisplay(t.destination),
    payload: parsePayload(t.payload),
    headers: headersForDisplay(t.headers),
    group: t.group,
    retry: retryJson(t.retry),
    expireAfter: t.expireAfterMs === null ? null : formatDuration(t.expireAfterMs),
    tags: t.tags,
    type: t.type,
    version: s.version,
    fired: s.firedCount,
    missedCount: s.missedCount,
    lastOccurrenceAt: s.lastOccurrenceAt === null ? null : iso(s.lastOccurrenceAt),
    lastMissed: s.lastMissed
      ? { at: iso(s.lastMissed.at), count: s.lastMissed.count, reason: s.lastMissed.reason }
      : null,
    next: occurrencesJson(spec, nextOccurrences(timingOf(spec), now, nextCount)),
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}
