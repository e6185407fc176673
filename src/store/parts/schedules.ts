/**
 * The Store's part for recurring schedules: the records, the params and the schedule methods
 * (implemented by each backend's schedule-store.ts).
 *
 * A schedule row carries its cursor, `nextAt`: the first occurrence not yet materialised (null
 * when none is left). The materialiser moves it with scheduleAdvance, a compare-and-swap on
 * (version, nextAt) in the same transaction as the insert of the occurrences it made, so two
 * nodes, a restart or a race never make an occurrence twice and never skip one: whoever loses the
 * swap wrote nothing. User edits (scheduleUpdate) bump `version`; the cursor's moves do not.
 */
import type { RetryPolicy } from '../../core/backoff.ts';
import type { DestinationRef, EventRecord } from '../../core/event.ts';
import type { MissedPolicy } from '../../core/missed.ts';
import type { EventInsertResult, NewEvent } from './events.ts';

export type { MissedPolicy };

/** What each occurrence's event is made of (resolved and checked when the schedule was written). */
export interface ScheduleTemplate {
  destination: DestinationRef;
  /** The payload's JSON text. */
  payload: string;
  headers: Record<string, string>;
  group: string | null;
  retry: RetryPolicy | null;
  expireAfterMs: number | null;
  tags: Record<string, string>;
  /** The events' kind (EventRecord.type); null: none. */
  type: string | null;
}

export interface ScheduleSpec {
  /** Exactly one of cron and everyMs. */
  cron: string | null;
  everyMs: number | null;
  timezone: string;
  startAt: number;
  endAt: number | null;
  missed: MissedPolicy;
  catchUpMax: number;
  /** An occurrence that reaches its fire later than this after its time is missed. */
  missedAfterMs: number;
  template: ScheduleTemplate;
  /** The body as the client sent it (its fields after validation), to show back. */
  input: Record<string, unknown>;
}

export interface ScheduleRecord {
  tenantId: string;
  id: string;
  /** The shard of the schedule (by its id): the node owning it materialises it. */
  shard: number;
  version: number;
  spec: ScheduleSpec;
  paused: boolean;
  /** The first occurrence not yet materialised; null when none is left. */
  nextAt: number | null;
  /** Occurrences made into events. */
  firedCount: number;
  /** Occurrences not made because they were missed (policy skip or fire-once, or past catchUpMax). */
  missedCount: number;
  /** The latest occurrence made into an event. */
  lastOccurrenceAt: number | null;
  /** Why the latest missed occurrences were missed; null when none was. */
  lastMissed: ScheduleMissed | null;
  createdAt: number;
  updatedAt: number;
}

/** Occurrences counted missed together, and why. */
export interface ScheduleMissed {
  /** When they were counted. */
  at: number;
  count: number;
  reason: string;
}

export type ScheduleCreateResult =
  | { kind: 'created'; schedule: ScheduleRecord }
  | { kind: 'exists'; schedule: ScheduleRecord }
  /** The tenant has `perTenantMax` schedules already. */
  | { kind: 'limit' };

export interface ScheduleUpdateParams {
  tenantId: string;
  id: string;
  /** If given, applies only at this version (If-Match). */
  expectedVersion?: number;
  spec?: ScheduleSpec;
  paused?: boolean;
  /** The new cursor (the caller recomputes it when the timing changes or the schedule resumes). */
  nextAt?: number | null;
  now: number;
}

export type ScheduleMutateResult =
  | { kind: 'ok'; schedule: ScheduleRecord }
  | { kind: 'not_found' }
  | { kind: 'version_mismatch'; schedule: ScheduleRecord };

export interface ScheduleListDueParams {
  /** Only these shards; null: all. */
  shards: number[] | null;
  /** Schedules not paused with nextAt ≤ untilMs (and ≥ fromMs when given), earliest first. */
  untilMs: number;
  fromMs?: number;
  limit: number;
}

export interface ScheduleListCatchUpParams {
  /** Only these shards; null: all. */
  shards: number[] | null;
  /** Schedules not paused whose cursor is before this (they have a late stretch to catch up). */
  beforeMs: number;
  /** Only tenants after this one (by id): the round robin's place; '' for the first. */
  afterTenantId: string;
  limit: number;
}

/** What to add to a schedule's counts (fired: deliveries started; missed). */
/**
 * How long a store remembers the id of a counts write (scheduleCountsAdd): a write repeated within
 * this time adds nothing again. A writer repeats a write whose answer it did not hear at its next
 * flush, a second or so later; one that cannot reach the store for longer than this may count twice.
 */
export const SCHEDULE_COUNT_WRITE_KEEP_MS = 3_600_000;
/** Forgotten write ids deleted per write at most (the table is pruned as it is written, in bounded steps). */
export const SCHEDULE_COUNT_WRITES_PRUNE_MAX = 100;

export interface ScheduleCountsAddParams {
  /**
   * Names the write, unique per writer and write (`<random per process>:<sequence>`): a write
   * repeated under the same id, because its answer was lost after it committed, adds nothing again.
   */
  writeId: string;
  deltas: ScheduleCountsDelta[];
  /** The store clock: the write id is kept with it, and ids older than SCHEDULE_COUNT_WRITE_KEEP_MS are forgotten. */
  now: number;
}

export interface ScheduleCountsDelta {
  tenantId: string;
  id: string;
  firedAdd: number;
  missedAdd: number;
  /** Why the latest of `missedAdd` was missed; null keeps the one stored. */
  lastMissed?: ScheduleMissed | null;
}

/**
 * The `lastError` of an occurrence canceled by a change of its schedule (pause, new timing,
 * delete). Only such an occurrence, never attempted, is made again (scheduled anew, the schedule's
 * template as it is then) when the schedule has it again: on resume, a timing that includes it
 * again, or the schedule created anew under its id. One the user canceled stays canceled.
 */
export const OCCURRENCE_CANCEL_REASONS = {
  paused: 'schedule paused',
  retimed: 'no longer an occurrence of its schedule',
  deleted: 'schedule deleted',
} as const;

export interface ScheduleAdvanceParams {
  tenantId: string;
  id: string;
  /** Applies only while the schedule is at this version with this cursor (compare and swap). */
  version: number;
  fromNextAt: number;
  nextAt: number | null;
  firedAdd: number;
  missedAdd: number;
  /** Why `missedAdd` were missed (kept as the schedule's lastMissed); null keeps the one stored. */
  lastMissed?: ScheduleMissed | null;
  lastOccurrenceAt: number | null;
  /** The occurrences' events, inserted in the same transaction (idempotent by id). */
  events: NewEvent[];
  now: number;
}

export type ScheduleAdvanceResult = { applied: false } | { applied: true; results: EventInsertResult[] };

export interface ScheduleOccurrenceListParams {
  tenantId: string;
  scheduleId: string;
  /** Only occurrences with an id before this one (the previous page's last). */
  beforeId?: string;
  limit: number;
}

/** The id of a schedule's occurrence: `<schedule id>@<occurrence in UTC RFC 3339 with ms>`. */
export function occurrenceId(scheduleId: string, at: number): string {
  return `${scheduleId}@${new Date(at).toISOString()}`;
}

/** The range of ids of a schedule's occurrences: [lo, hi) in byte order ('A' follows '@'). */
export function occurrenceIdRange(scheduleId: string): { lo: string; hi: string } {
  return { lo: `${scheduleId}@`, hi: `${scheduleId}A` };
}

/** The schedule methods of Store. */
export interface ScheduleStore {
  /** Creates the schedule unless its id exists or its tenant has perTenantMax schedules (counted in the same transaction). */
  scheduleCreate(params: { schedule: ScheduleRecord; perTenantMax: number }): Promise<ScheduleCreateResult>;
  scheduleGet(params: { tenantId: string; id: string }): Promise<ScheduleRecord | null>;
  /** A tenant's schedules by id, after `afterId`. */
  scheduleList(params: { tenantId: string; afterId?: string; limit: number }): Promise<ScheduleRecord[]>;
  /** Edits, pauses or resumes; version + 1. */
  scheduleUpdate(params: ScheduleUpdateParams): Promise<ScheduleMutateResult>;
  scheduleDelete(params: { tenantId: string; id: string; expectedVersion?: number }): Promise<ScheduleMutateResult>;
  scheduleListDue(params: ScheduleListDueParams): Promise<ScheduleRecord[]>;
  /**
   * Schedules with a late stretch (cursor before `beforeMs`, not paused) of the tenants after
   * `afterTenantId`, by (tenant, cursor): the materialiser serves them a tenant at a time, round
   * robin, after the on-time ones. Served by schedules_tenant_due.
   */
  scheduleListCatchUp(params: ScheduleListCatchUpParams): Promise<ScheduleRecord[]>;
  /**
   * Adds to schedules' counts (a schedule gone meanwhile is left out), in one transaction, unless
   * a write of the same `writeId` was applied (then nothing: `applied` false). Forgets write ids
   * older than SCHEDULE_COUNT_WRITE_KEEP_MS, at most SCHEDULE_COUNT_WRITES_PRUNE_MAX per call.
   */
  scheduleCountsAdd(params: ScheduleCountsAddParams): Promise<{ applied: boolean }>;
  /**
   * Moves the cursor and inserts the occurrences, in one transaction, only if (version, fromNextAt)
   * still hold. An occurrence whose id is taken by an event canceled by a change of the schedule
   * (OCCURRENCE_CANCEL_REASONS, never attempted, same group and shard) is made again in place:
   * scheduled at its time with the new template, a `state` transition canceled → scheduled; its
   * result is `created`.
   */
  scheduleAdvance(params: ScheduleAdvanceParams): Promise<ScheduleAdvanceResult>;
  /**
   * scheduleAdvance of each (at most SCHEDULE_PAGE_MAX), in one transaction: each its own
   * compare-and-swap, one that loses writes nothing and leaves the others be. Results in order.
   */
  scheduleAdvanceMany(params: { advances: ScheduleAdvanceParams[] }): Promise<ScheduleAdvanceResult[]>;
  /** The schedule's occurrences (events with ids in its range), newest first; one walk of the events' (tenant, id) key. */
  scheduleOccurrenceList(params: ScheduleOccurrenceListParams): Promise<EventRecord[]>;
}
