/**
 * Recurring schedules' service: what the schedule routes do once a body is checked into a
 * ScheduleSpec (api/schedule-input.ts). It writes the schedule row and, after an edit or a delete,
 * brings the occurrences already made and not yet fired in line (reconcile), by the same
 * conditional writes as the event API's. The materialiser (materialiser.ts) makes the occurrences
 * into events; a create, an edit or a resume makes those due within its horizon at once.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { BelfryError, invalid } from '../core/errors.ts';
import type { EventRecord } from '../core/event.ts';
import { canonicalJson } from '../core/ids.ts';
import { nextOccurrence } from '../core/occurrences.ts';
import { shardOf } from '../core/shard.ts';
import {
  OCCURRENCE_CANCEL_REASONS,
  type ScheduleMutateResult,
  type ScheduleRecord,
  type ScheduleSpec,
} from '../store/schedules.ts';
import type { EventInsertResult, NewEvent, Store } from '../store/store.ts';
import { occurrenceLimits, type TenantQuotaPort } from './limits.ts';
import { advanceSchedule, MATERIALISER_DEFAULTS, madeAheadMs } from './materialiser.ts';
import { firstOccurrence, occurrenceAt, occurrenceEvent, templateKey, timingKey, timingOf } from './occurrence.ts';
import type { EventSink } from '../core/event-sink.ts';

/** Schedules per tenant, at most (each costs the materialiser a row read per pass when due). */
export const SCHEDULES_PER_TENANT_MAX = 1_000;
/** Occurrences made and not yet fired that an edit or delete looks at (newest first): the horizon holds a few. */
const PENDING_OCCURRENCES_MAX = 1_000;

/**
 * What the service needs; read at each call (the API passes its deps, whose writer a test may
 * swap).
 */
export interface ScheduleServiceDeps {
  store: Pick<
    Store,
    | 'scheduleCreate'
    | 'scheduleGet'
    | 'scheduleList'
    | 'scheduleUpdate'
    | 'scheduleDelete'
    | 'scheduleOccurrenceList'
    | 'scheduleAdvance'
    | 'scheduleAdvanceMany'
    | 'scheduleListDue'
    | 'scheduleListCatchUp'
    | 'eventCancel'
    | 'eventUpdate'
  >;
  clock: Clock;
  logger: Logger;
  shardCount: number;
  /** Inserts through group commit (a trigger's event). */
  writer: { insert(events: NewEvent[]): Promise<EventInsertResult[]> };
  /** The tenants' quotas occurrences made at once count against; absent: none. */
  quotas?: TenantQuotaPort;
  /** How far ahead occurrences are made (the materialiser's horizon and refill). Default 20 s. */
  scheduleAheadMs?: number;
  /** Told after every committed change of events. */
  events: Pick<EventSink, 'changed'>;
}

export function scheduleNotFound(id: string): BelfryError {
  return new BelfryError('not_found', `no schedule with id "${id}"`, [{ field: 'id', message: 'not found' }]);
}

function outcome(result: ScheduleMutateResult, id: string, expected: number | undefined): ScheduleRecord {
  if (result.kind === 'ok') return result.schedule;
  if (result.kind === 'not_found') throw scheduleNotFound(id);
  throw new BelfryError(
    'precondition_failed',
    `schedule is at version ${result.schedule.version}, not ${expected} as If-Match requires`,
    [{ field: 'If-Match', message: 'does not match the current version', version: result.schedule.version }],
  );
}

/** A timing with no occurrence from now on (endAt passed, or before the first match) is refused. */
function noOccurrence(spec: ScheduleSpec): BelfryError {
  const field = spec.endAt !== null ? 'endAt' : 'cron';
  return invalid(field, 'the schedule has no occurrence from now on (before endAt)');
}

export class ScheduleService {
  constructor(private readonly deps: ScheduleServiceDeps) {}

  /** The schedule, or not_found. */
  async get(tenantId: string, id: string): Promise<ScheduleRecord> {
    const s = await this.deps.store.scheduleGet({ tenantId, id });
    if (!s) throw scheduleNotFound(id);
    return s;
  }

  /** A page of the tenant's schedules by id, after `afterId`. */
  list(tenantId: string, afterId: string | undefined, limit: number): Promise<ScheduleRecord[]> {
    return this.deps.store.scheduleList({ tenantId, afterId, limit });
  }

  /**
   * Creates schedule `id` with `spec` (checked), its cursor at its first occurrence from `now`:
   * 201 when created, 200 when the same id and body were sent before, a conflict when the id is
   * used by a different body, quota_exceeded past SCHEDULES_PER_TENANT_MAX.
   */
  async create(params: {
    tenantId: string;
    id: string;
    spec: ScheduleSpec;
    paused: boolean;
    now: number;
  }): Promise<{ status: 200 | 201; schedule: ScheduleRecord }> {
    const { deps } = this;
    const { tenantId, id, spec, now } = params;
    const nextAt = firstOccurrence(timingOf(spec), now);
    if (nextAt === null) throw noOccurrence(spec);
    const schedule: ScheduleRecord = {
      tenantId,
      id,
      shard: shardOf(tenantId, id, deps.shardCount),
      version: 1,
      spec,
      paused: params.paused,
      nextAt,
      firedCount: 0,
      missedCount: 0,
      lastOccurrenceAt: null,
      lastMissed: null,
      createdAt: now,
      updatedAt: now,
    };
    const result = await deps.store.scheduleCreate({ schedule, perTenantMax: SCHEDULES_PER_TENANT_MAX });
    if (result.kind === 'limit') {
      throw new BelfryError(
        'quota_exceeded',
        `the tenant has ${SCHEDULES_PER_TENANT_MAX} schedules, the most it may have; delete one first`,
        [
          {
            field: 'id',
            message: `at most ${SCHEDULES_PER_TENANT_MAX} schedules per tenant`,
            limit: 'schedulesPerTenantMax',
          },
        ],
      );
    }
    if (result.kind === 'exists') {
      const same =
        canonicalJson(result.schedule.spec.input) === canonicalJson(spec.input) &&
        result.schedule.paused === schedule.paused;
      if (!same)
        throw new BelfryError('conflict', `a schedule with id "${id}" already exists with a different body`, [
          {
            field: 'id',
            message: 'already used by a schedule with a different body',
            version: result.schedule.version,
          },
        ]);
      return { status: 200, schedule: result.schedule };
    }
    await this.makeDueOccurrences(result.schedule, now);
    return { status: 201, schedule: (await deps.store.scheduleGet({ tenantId, id })) ?? result.schedule };
  }

  /**
   * Writes an edit of `current` (its new `spec`, `paused`) at version `expected`, then brings
   * the occurrences made ahead in line and makes those now due.
   *
   * A new timing starts its cursor afresh from now. A pause puts it back to the earliest
   * occurrence made ahead (the pause cancels those), so a resume makes again the ones not yet
   * due and the ones that passed meanwhile follow `missed`. Otherwise the cursor stays.
   */
  async update(params: {
    current: ScheduleRecord;
    expected: number;
    spec: ScheduleSpec;
    paused: boolean;
    now: number;
  }): Promise<ScheduleRecord> {
    const { deps } = this;
    const { current, expected, spec, paused, now } = params;
    const { tenantId, id } = current;
    const retimed = timingKey(spec) !== timingKey(current.spec);
    let nextAt = retimed ? firstOccurrence(timingOf(spec), now) : current.nextAt;
    if (retimed && nextAt === null) throw noOccurrence(spec);
    if (paused && !current.paused && !retimed) {
      const earliest = await this.earliestPending(tenantId, id);
      if (earliest !== null && (nextAt === null || earliest < nextAt)) nextAt = earliest;
    }
    const result = await deps.store.scheduleUpdate({
      tenantId,
      id,
      expectedVersion: expected,
      spec,
      paused,
      ...(nextAt !== current.nextAt || retimed ? { nextAt } : {}),
      now,
    });
    const updated = outcome(result, id, expected);
    await this.reconcile(tenantId, current, updated, now);
    await this.makeDueOccurrences(updated, now);
    return (await deps.store.scheduleGet({ tenantId, id })) ?? updated;
  }

  /** Deletes the schedule (at version `expected`, when given) and cancels its occurrences not yet fired. */
  async delete(tenantId: string, id: string, expected: number | undefined): Promise<ScheduleRecord> {
    const deleted = outcome(
      await this.deps.store.scheduleDelete({ tenantId, id, expectedVersion: expected }),
      id,
      expected,
    );
    await this.reconcile(tenantId, deleted, null, this.deps.clock.now());
    return deleted;
  }

  /** Fires one occurrence now (an event `<id>@<now>`), outside the schedule's timing. */
  async trigger(tenantId: string, id: string): Promise<EventRecord> {
    const { deps } = this;
    const s = await this.get(tenantId, id);
    const [result] = await deps.writer.insert([occurrenceEvent(s, deps.clock.now(), deps.shardCount)]);
    if (result.kind === 'created') deps.events.changed([result.event]);
    return result.event;
  }

  /**
   * Brings the occurrences already made and not yet fired (state scheduled) in line with the
   * schedule after an edit (`after`) or a delete (`after` null): canceled when the schedule is gone
   * or paused or no longer has that occurrence, with the reason as their lastError (so the schedule
   * makes them again when it has them again: a resume, a timing that includes them again, the same id
   * created anew); their payload, headers and destination updated when those changed. Each is the
   * event API's conditional write (at the version read), so an occurrence that fired meanwhile is
   * left as it is. Returns how many changed.
   */
  async reconcile(
    tenantId: string,
    before: ScheduleRecord,
    after: ScheduleRecord | null,
    now: number,
  ): Promise<number> {
    const { deps } = this;
    const timingChanged = after !== null && timingKey(before.spec) !== timingKey(after.spec);
    const templateChanged = after !== null && templateKey(before.spec) !== templateKey(after.spec);
    const wasActive = !before.paused;
    if (after !== null && !after.paused && !timingChanged && !templateChanged) return 0;
    if (after !== null && after.paused && !wasActive) return 0;
    const events = await deps.store.scheduleOccurrenceList({
      tenantId,
      scheduleId: before.id,
      limit: PENDING_OCCURRENCES_MAX,
    });
    const changed: EventRecord[] = [];
    for (const e of events) {
      if (e.state !== 'scheduled') continue;
      const at = occurrenceAt(before.id, e.id);
      const reason =
        after === null
          ? OCCURRENCE_CANCEL_REASONS.deleted
          : after.paused
            ? OCCURRENCE_CANCEL_REASONS.paused
            : timingChanged && (at === null || nextOccurrence(timingOf(after.spec), at - 1) !== at)
              ? OCCURRENCE_CANCEL_REASONS.retimed
              : null;
      if (reason !== null) {
        const r = await deps.store.eventCancel({ tenantId, id: e.id, expectedVersion: e.version, now, reason });
        if (r.kind === 'ok') changed.push(r.event);
      } else if (templateChanged) {
        const t = after!.spec.template;
        const fresh = occurrenceEvent(after!, at ?? e.fireAt, deps.shardCount);
        const patch = {
          payload: t.payload,
          headers: t.headers,
          destination: t.destination,
          type: t.type,
          requestHash: fresh.requestHash,
        };
        const r = await deps.store.eventUpdate({ tenantId, id: e.id, expectedVersion: e.version, now, patch });
        if (r.kind === 'ok') changed.push(r.event);
      }
    }
    if (changed.length > 0) deps.events.changed(changed);
    return changed.length;
  }

  /** The earliest occurrence made and not yet fired (state scheduled), or null: where a pause puts the cursor back to. */
  private async earliestPending(tenantId: string, id: string): Promise<number | null> {
    const events = await this.deps.store.scheduleOccurrenceList({
      tenantId,
      scheduleId: id,
      limit: PENDING_OCCURRENCES_MAX,
    });
    let earliest: number | null = null;
    for (const e of events) {
      const at = e.state === 'scheduled' ? occurrenceAt(id, e.id) : null;
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    return earliest;
  }

  /**
   * Makes the occurrences of an active schedule due within the horizon now, so the first one after a
   * create, an edit or a resume fires on time (the materialiser would make them at its next pass).
   * Losing the cursor's compare-and-swap to the materialiser is fine: it made them.
   */
  private async makeDueOccurrences(s: ScheduleRecord, now: number): Promise<void> {
    const { deps } = this;
    if (s.paused) return;
    const limits = deps.quotas ? occurrenceLimits(deps.quotas) : undefined;
    const r = await advanceSchedule(
      { store: deps.store, logger: deps.logger, shardCount: deps.shardCount, limits },
      s,
      now,
      deps.scheduleAheadMs ?? madeAheadMs(MATERIALISER_DEFAULTS),
    );
    if (r.created.length > 0) deps.events.changed(r.created);
  }
}
