/**
 * What an occurrence of a schedule is, pure: its timing and its `missed` rule from a spec, the
 * event it becomes (the same on every node and at every restart), and the instant in its id.
 * The materialiser, the occurrence gate and the schedule service all read them from here.
 */
import { TIME_MS_MAX } from '../core/duration.ts';
import { canonicalJson, sha256Hex } from '../core/ids.ts';
import type { MissedRule } from '../core/missed.ts';
import { nextOccurrence, type ScheduleTiming } from '../core/occurrences.ts';
import { shardOf } from '../core/shard.ts';
import { occurrenceId, type ScheduleRecord, type ScheduleSpec } from '../store/schedules.ts';
import type { NewEvent } from '../store/store.ts';

/** The timing part of a spec. */
export function timingOf(
  spec: Pick<ScheduleSpec, 'cron' | 'everyMs' | 'timezone' | 'startAt' | 'endAt'>,
): ScheduleTiming {
  if (spec.everyMs !== null) return { kind: 'every', everyMs: spec.everyMs, startAt: spec.startAt, endAt: spec.endAt };
  return { kind: 'cron', cron: spec.cron ?? '', zone: spec.timezone, startAt: spec.startAt, endAt: spec.endAt };
}

/** The `missed` rule of a spec. */
export function missedRuleOf(spec: Pick<ScheduleSpec, 'missed' | 'catchUpMax' | 'missedAfterMs'>): MissedRule {
  return {
    missed: spec.missed,
    catchUpMax: spec.catchUpMax,
    missedAfterMs: spec.missedAfterMs,
  };
}

/**
 * The event of one occurrence. Its request hash depends only on the template and the instant,
 * so every node (and every restart) builds the same event for it: a repeat is `existing`.
 */
export function occurrenceEvent(
  s: Pick<ScheduleRecord, 'tenantId' | 'id' | 'spec'>,
  at: number,
  shardCount: number,
): NewEvent {
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
    type: t.type,
    requestHash: sha256Hex(canonicalJson({ occurrence: id, template: t })),
  };
}

/** The schedule id and time of an occurrence id, or null when `id` is not shaped like one. */
export function parseOccurrenceId(id: string): { scheduleId: string; at: number } | null {
  const sep = id.lastIndexOf('@');
  // `<id>@YYYY-MM-DDTHH:MM:SS.mmmZ`: 24 characters after the '@'.
  if (sep <= 0 || id.length - sep - 1 !== 24 || id.charCodeAt(id.length - 1) !== 90 /* Z */) return null;
  const at = Date.parse(id.slice(sep + 1));
  return Number.isFinite(at) ? { scheduleId: id.slice(0, sep), at } : null;
}

/** The occurrence instant of an event id `<schedule>@<time>`, or null. */
export function occurrenceAt(scheduleId: string, eventId: string): number | null {
  const at = Date.parse(eventId.slice(scheduleId.length + 1));
  return Number.isFinite(at) ? at : null;
}

/** The schedule's first occurrence at or after max(startAt, now): where a new (or re-timed) schedule's cursor starts. */
export function firstOccurrence(timing: ScheduleTiming, now: number): number | null {
  return nextOccurrence(timing, Math.max(timing.startAt, now) - 1);
}

/** What decides a spec's occurrences: two specs with the same key have the same ones. */
export function timingKey(spec: ScheduleSpec): string {
  return canonicalJson([spec.cron, spec.everyMs, spec.timezone, spec.startAt, spec.endAt]);
}

/** What an occurrence's event carries from the template (an edit that changes it updates those made). */
export function templateKey(spec: ScheduleSpec): string {
  const t = spec.template;
  return canonicalJson([t.destination, t.payload, t.headers, t.type]);
}
