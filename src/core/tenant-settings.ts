/**
 * A tenant's settings as stored (the tenant row's `settings`, JSON the admin API writes): the one
 * description of each key, and the readers every layer uses, so the API that writes them, the
 * dispatcher's policy, the limits and the retention read them the same way. A value that is not
 * valid (stored by an older version) reads as absent.
 *
 *   durability   'strict' | 'relaxed'            how its writes are made durable (default strict)
 *   missedAfter  ms                               a first fire later than this is archived (absent: never)
 *   limits       { <limit's JSON name>: value }   its own limits (tenant-limits.ts), over the node's
 *   retention    { <terminal state>: ms }          its own retention periods (retention.ts), over the node's
 */
import { parseDurationMs } from './duration.ts';

export type TenantDurability = 'strict' | 'relaxed';

export interface TenantSettings {
  durability?: TenantDurability;
  /** Milliseconds (any duration parseDurationMs reads is accepted when read). */
  missedAfter?: number | string;
  /** Overrides by the limit's JSON name (LIMIT_SPECS' `name`): a number, or a duration for durations. */
  limits?: Record<string, number | string>;
  /** Overrides by terminal state, in ms. */
  retention?: Record<string, number>;
}

/** The stored settings as the store hands them (free-form JSON). */
export type StoredSettings = Record<string, unknown> | undefined;

export function durabilityOf(settings: StoredSettings): TenantDurability {
  return settings?.durability === 'relaxed' ? 'relaxed' : 'strict';
}

/** The tenant's missedAfter in ms, or null when it has none. */
export function missedAfterOf(settings: StoredSettings): number | null {
  const raw = settings?.missedAfter;
  return raw === undefined || raw === null ? null : parseDurationMs(raw);
}

/** An object-valued key (`limits`, `retention`) as stored, or {} when it is absent or not an object. */
export function overridesOf(settings: StoredSettings, key: 'limits' | 'retention'): Record<string, unknown> {
  const o = settings?.[key];
  return typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>) : {};
}
