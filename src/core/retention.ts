/**
 * Retention: how long a finished event (and its trace) is kept after it became terminal, per
 * terminal state. The node's defaults come from config; a tenant's own periods live in its
 * settings (`settings.retention`, milliseconds by state) and override the defaults one by one.
 *
 * An event is deleted once `updated_at < now - period(state)`: updated_at of a terminal row is
 * the time of its terminal transition, as nothing changes a terminal event but a replay, which
 * makes it live again (and moves updated_at).
 */
import { DURATION_MS_MAX, parseDurationMs } from './duration.ts';
import type { EventState } from './event.ts';
import { overridesOf, type StoredSettings } from './tenant-settings.ts';

/** The states retention applies to: the terminal ones. */
export const RETENTION_STATES = [
  'succeeded',
  'canceled',
  'discarded',
  'archived',
] as const satisfies readonly EventState[];
export type RetentionState = (typeof RETENTION_STATES)[number];

/** Milliseconds kept after the event reached each terminal state. */
export type RetentionPeriods = Record<RetentionState, number>;

/** Shortest period: a second. Shorter would delete a trace before anyone could read it. */
export const RETENTION_MS_MIN = 1_000;
export const RETENTION_MS_MAX = DURATION_MS_MAX;

const DAY_MS = 86_400_000;

/** Delivered and canceled events are kept a week; failures (discarded, archived) a month, to investigate and replay. */
export const RETENTION_DEFAULTS: RetentionPeriods = {
  succeeded: 7 * DAY_MS,
  canceled: 7 * DAY_MS,
  discarded: 30 * DAY_MS,
  archived: 30 * DAY_MS,
};

export function isRetentionState(state: string): state is RetentionState {
  return (RETENTION_STATES as readonly string[]).includes(state);
}

/** A period from JSON or config text; null when it is not a duration from 1s to 10 years. */
export function parseRetentionMs(raw: unknown): number | null {
  const ms = parseDurationMs(raw);
  return ms === null || ms < RETENTION_MS_MIN || ms > RETENTION_MS_MAX ? null : ms;
}

/** The tenant's own periods as stored (`settings.retention`); invalid entries are ignored. */
export function storedRetention(settings: StoredSettings): Partial<RetentionPeriods> {
  const raw = overridesOf(settings, 'retention');
  const out: Partial<RetentionPeriods> = {};
  for (const state of RETENTION_STATES) {
    const ms = parseRetentionMs(raw[state]);
    if (ms !== null) out[state] = ms;
  }
  return out;
}

/** The periods in effect for a tenant: its own over the node's defaults. */
export function resolveRetention(defaults: RetentionPeriods, settings: StoredSettings): RetentionPeriods {
  return { ...defaults, ...storedRetention(settings) };
}
