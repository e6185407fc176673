/** Schedule rows as both backends return them, and their mapping to records. */
import type {
  ScheduleMissed,
  ScheduleMutateResult,
  ScheduleRecord,
  ScheduleSpec,
  ScheduleUpdateParams,
} from '../schedules.ts';

export interface ScheduleRow {
  tenant_id: string;
  id: string;
  shard: number;
  version: number;
  spec: string;
  /** SQLite 0/1, PostgreSQL boolean. */
  paused: number | boolean;
  next_at: number | null;
  fired_count: number;
  missed_count: number;
  last_occurrence_at: number | null;
  last_missed: string | null;
  created_at: number;
  updated_at: number;
}

export const SCHEDULE_COLUMNS = `tenant_id, id, shard, version, spec, paused, next_at, fired_count,
  missed_count, last_occurrence_at, created_at, updated_at, last_missed`;

export function scheduleFromRow(r: ScheduleRow): ScheduleRecord {
  return {
    tenantId: r.tenant_id,
    id: r.id,
    shard: r.shard,
    version: r.version,
    spec: JSON.parse(r.spec) as ScheduleSpec,
    paused: r.paused === true || r.paused === 1,
    nextAt: r.next_at,
    firedCount: Number(r.fired_count),
    missedCount: Number(r.missed_count),
    lastOccurrenceAt: r.last_occurrence_at,
    lastMissed: r.last_missed === null ? null : (JSON.parse(r.last_missed) as ScheduleMissed),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The refusal of a mutation of `current` (absent, or at another version), or null when it may apply. */
export function scheduleRefusal(
  current: ScheduleRecord | null,
  expectedVersion: number | undefined,
): ScheduleMutateResult | null {
  if (!current) return { kind: 'not_found' };
  if (expectedVersion !== undefined && current.version !== expectedVersion)
    return { kind: 'version_mismatch', schedule: current };
  return null;
}

/** The record after an update (version + 1), from the current one and the params. */
export function scheduleUpdated(cur: ScheduleRecord, p: ScheduleUpdateParams): ScheduleRecord {
  return {
    ...cur,
    version: cur.version + 1,
    spec: p.spec ?? cur.spec,
    paused: p.paused ?? cur.paused,
    nextAt: p.nextAt !== undefined ? p.nextAt : cur.nextAt,
    updatedAt: p.now,
  };
}

/** Bound on one page of schedules or occurrences. */
export const SCHEDULE_PAGE_MAX = 1_000;

export function checkSchedulePage(limit: number, what: string): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > SCHEDULE_PAGE_MAX)
    throw new RangeError(`${what}: limit must be 1-${SCHEDULE_PAGE_MAX}, got ${limit}`);
}
