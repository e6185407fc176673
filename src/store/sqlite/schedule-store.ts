/**
 * The schedule methods of the SQLite backend (see ../schedules.ts), each in one IMMEDIATE
 * transaction of the store's connection. Every statement is below, under a comment naming its
 * parameters and what it returns.
 */
import type { Connection } from './driver.ts';
import { queueOf } from '../../core/queue.ts';
import { jsonObject } from '../core/event-writes.ts';
import { eventFromRow, type EventRow } from '../core/rows.ts';
import { SQL_STATE } from '../core/state-lists.ts';
import {
  checkSchedulePage,
  SCHEDULE_COLUMNS,
  scheduleFromRow,
  scheduleRefusal,
  scheduleUpdated,
  type ScheduleRow,
} from '../core/schedule-rows.ts';
import * as Sch from '../schedules.ts';
import type { EventInsertManyParams, EventInsertResult, NewEvent } from '../store.ts';
import { EVENT_COLUMNS, IS_PULL_DESTINATION, SQL as EVENT_SQL } from './queries.ts';

/** The reasons of cancels that a schedule may undo (Sch.OCCURRENCE_CANCEL_REASONS), as SQL literals. */
const REVIVABLE = Object.values(Sch.OCCURRENCE_CANCEL_REASONS)
  .map((r) => `'${r}'`)
  .join(', ');

const SQL = {
  // (@tenantId) → { n }: the tenant's schedules (a range of the primary key).
  scheduleCount: `SELECT count(*) AS n FROM schedules WHERE tenant_id = @tenantId`,
  // (@tenantId, @id) → ScheduleRow | undefined.
  scheduleGet: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = @tenantId AND id = @id`,
  // (every column) → changes 1. The column
  // catch_up_left (010) is no longer read or written: the missed rule is stateless (judged at each
  // occurrence's fire), and the column is NOT NULL without a default, so an insert writes 0 there.
  scheduleInsert: `INSERT INTO schedules (${SCHEDULE_COLUMNS}, catch_up_left) VALUES (@tenantId, @id, @shard, @version,
    @spec, @paused, @nextAt, @firedCount, @missedCount, @lastOccurrenceAt, @createdAt, @updatedAt, @lastMissed, 0)`,
  // (@tenantId, @afterId, @limit) → ScheduleRow[] by id.
  scheduleList: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = @tenantId AND id > @afterId ORDER BY id LIMIT @limit`,
  // (@tenantId, @id, @version, @spec, @paused, @nextAt, @updatedAt) → changes.
  scheduleUpdate: `UPDATE schedules SET version = @version, spec = @spec, paused = @paused, next_at = @nextAt,
    updated_at = @updatedAt WHERE tenant_id = @tenantId AND id = @id`,
  // (@tenantId, @id) → changes.
  scheduleDelete: `DELETE FROM schedules WHERE tenant_id = @tenantId AND id = @id`,
  // (@untilMs, @limit) → ScheduleRow[], earliest cursor first (index schedules_due).
  scheduleListDue: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE paused = 0 AND next_at IS NOT NULL AND next_at <= @untilMs
      AND next_at >= @fromMs
    ORDER BY next_at LIMIT @limit`,
  // (@beforeMs, @afterTenantId, @limit) → ScheduleRow[] with a cursor before @beforeMs, of tenants
  // after @afterTenantId, by (tenant, cursor) (index schedules_tenant_due).
  scheduleListCatchUp: `SELECT ${SCHEDULE_COLUMNS} FROM schedules INDEXED BY schedules_tenant_due
    WHERE paused = 0 AND next_at IS NOT NULL AND tenant_id > @afterTenantId AND next_at < @beforeMs
    ORDER BY tenant_id, next_at LIMIT @limit`,
  // (@writeId, @now) → changes 1 when the write id is new (the write goes on), 0 when it was applied.
  scheduleCountWriteInsert: `INSERT INTO schedule_count_writes (write_id, written_at) VALUES (@writeId, @now) ON CONFLICT (write_id) DO NOTHING`,
  // (@before, @limit) → changes: forgets at most @limit write ids older than @before, oldest first.
  scheduleCountWritesPrune: `DELETE FROM schedule_count_writes WHERE write_id IN
    (SELECT write_id FROM schedule_count_writes WHERE written_at < @before ORDER BY written_at LIMIT @limit)`,
  // (@tenantId, @id, @firedAdd, @missedAdd, @lastMissed) → changes.
  scheduleCountsAdd: `UPDATE schedules SET fired_count = fired_count + @firedAdd, missed_count = missed_count + @missedAdd,
      last_missed = coalesce(@lastMissed, last_missed)
    WHERE tenant_id = @tenantId AND id = @id`,
  // (@tenantId, @id, @shard, @grp, @fireAt, @destination, @destinationName, @payload, @headers, @retry, @expireAt, @tags,
  //  @requestHash, @queue, @type, @now) → EventRow when the event was an occurrence canceled by a
  // change of its schedule, never attempted, of the same shard and group: scheduled again at
  // @fireAt with this template; otherwise no row.
  occurrenceRevive: `UPDATE events SET state = ${SQL_STATE.scheduled}, version = version + 1, fire_at = @fireAt, due_at = @fireAt,
      destination = @destination, payload = @payload, headers = @headers, retry = @retry, expire_at = @expireAt, tags = @tags,
      request_hash = @requestHash, queue = @queue, type = @type, last_error = NULL, updated_at = @now,
      pull = ${IS_PULL_DESTINATION('events.tenant_id', '@destinationName')}
    WHERE tenant_id = @tenantId AND id = @id AND state = ${SQL_STATE.canceled} AND attempts = 0 AND last_error IN (${REVIVABLE})
      AND shard = @shard AND grp IS @grp
    RETURNING ${EVENT_COLUMNS}`,
  // (@tenantId, @id, @version, @fromNextAt, @nextAt, @firedAdd, @missedAdd, @lastOccurrenceAt, @lastMissed, @now)
  // → changes 1 when the schedule was still at (version, fromNextAt) and not paused.
  scheduleAdvance: `UPDATE schedules SET next_at = @nextAt, fired_count = fired_count + @firedAdd,
    missed_count = missed_count + @missedAdd, last_occurrence_at = coalesce(@lastOccurrenceAt, last_occurrence_at),
    last_missed = coalesce(@lastMissed, last_missed), updated_at = @now
    WHERE tenant_id = @tenantId AND id = @id AND version = @version AND next_at = @fromNextAt AND paused = 0`,
  // (@tenantId, @lo, @hi, @limit) → EventRow[]: events with lo ≤ id < hi, newest id first (the events' unique (tenant_id, id) index).
  occurrenceList: `SELECT ${EVENT_COLUMNS} FROM events WHERE tenant_id = @tenantId AND id >= @lo AND id < @hi ORDER BY id DESC LIMIT @limit`,
};

type Insert = (params: EventInsertManyParams) => EventInsertResult[];

export class SqliteSchedules implements Sch.ScheduleStore {
  private readonly q;

  constructor(
    db: Connection,
    /** Runs fn in one IMMEDIATE transaction (synchronous=FULL: acknowledged writes). */
    private readonly write: <T>(fn: () => T) => T,
    /** The store's event insert, inside the caller's transaction. */
    private readonly insertMany: Insert,
  ) {
    const p = <Row = unknown>(sql: string) => db.prepare<Row>(sql);
    this.q = {
      count: p<{ n: number }>(SQL.scheduleCount),
      get: p<ScheduleRow>(SQL.scheduleGet),
      insert: p(SQL.scheduleInsert),
      list: p<ScheduleRow>(SQL.scheduleList),
      update: p(SQL.scheduleUpdate),
      delete: p(SQL.scheduleDelete),
      listDue: p<ScheduleRow>(SQL.scheduleListDue),
      listCatchUp: p<ScheduleRow>(SQL.scheduleListCatchUp),
      countsAdd: p(SQL.scheduleCountsAdd),
      countWriteInsert: p(SQL.scheduleCountWriteInsert),
      countWritesPrune: p(SQL.scheduleCountWritesPrune),
      revive: p<EventRow>(SQL.occurrenceRevive),
      transitionInsert: p(EVENT_SQL.transitionInsert),
      advance: p(SQL.scheduleAdvance),
      occurrences: p<EventRow>(SQL.occurrenceList),
    };
  }

  private getNow(tenantId: string, id: string): Sch.ScheduleRecord | null {
    const row = this.q.get.get({ tenantId, id });
    return row ? scheduleFromRow(row) : null;
  }

  async scheduleCreate({
    schedule: s,
    perTenantMax,
  }: {
    schedule: Sch.ScheduleRecord;
    perTenantMax: number;
  }): Promise<Sch.ScheduleCreateResult> {
    return this.write(() => {
      const existing = this.getNow(s.tenantId, s.id);
      if (existing) return { kind: 'exists', schedule: existing };
      if ((this.q.count.get({ tenantId: s.tenantId })?.n ?? 0) >= perTenantMax) return { kind: 'limit' };
      this.q.insert.run({
        ...s,
        spec: JSON.stringify(s.spec),
        paused: s.paused ? 1 : 0,
        lastMissed: s.lastMissed ? JSON.stringify(s.lastMissed) : null,
      });
      return { kind: 'created', schedule: s };
    });
  }

  async scheduleGet({ tenantId, id }: { tenantId: string; id: string }): Promise<Sch.ScheduleRecord | null> {
    return this.getNow(tenantId, id);
  }

  async scheduleList({
    tenantId,
    afterId,
    limit,
  }: {
    tenantId: string;
    afterId?: string;
    limit: number;
  }): Promise<Sch.ScheduleRecord[]> {
    checkSchedulePage(limit, 'scheduleList');
    return this.q.list.all({ tenantId, afterId: afterId ?? '', limit }).map(scheduleFromRow);
  }

  async scheduleUpdate(p: Sch.ScheduleUpdateParams): Promise<Sch.ScheduleMutateResult> {
    return this.write(() => {
      const cur = this.getNow(p.tenantId, p.id);
      const refused = scheduleRefusal(cur, p.expectedVersion);
      if (refused) return refused;
      const next = scheduleUpdated(cur!, p);
      this.q.update.run({ ...next, spec: JSON.stringify(next.spec), paused: next.paused ? 1 : 0 });
      return { kind: 'ok', schedule: next };
    });
  }

  async scheduleDelete(p: {
    tenantId: string;
    id: string;
    expectedVersion?: number;
  }): Promise<Sch.ScheduleMutateResult> {
    return this.write(() => {
      const cur = this.getNow(p.tenantId, p.id);
      const refused = scheduleRefusal(cur, p.expectedVersion);
      if (refused) return refused;
      this.q.delete.run({ tenantId: p.tenantId, id: p.id });
      return { kind: 'ok', schedule: cur! };
    });
  }

  async scheduleListDue(p: Sch.ScheduleListDueParams): Promise<Sch.ScheduleRecord[]> {
    checkSchedulePage(p.limit, 'scheduleListDue');
    const rows = this.q.listDue
      .all({ untilMs: p.untilMs, fromMs: p.fromMs ?? -1, limit: p.limit })
      .map(scheduleFromRow);
    // One node owns every shard on SQLite; a subset is filtered here (a test's, or a future split).
    return ownedOnly(rows, p.shards);
  }

  async scheduleListCatchUp(p: Sch.ScheduleListCatchUpParams): Promise<Sch.ScheduleRecord[]> {
    checkSchedulePage(p.limit, 'scheduleListCatchUp');
    const rows = this.q.listCatchUp
      .all({ beforeMs: p.beforeMs, afterTenantId: p.afterTenantId, limit: p.limit })
      .map(scheduleFromRow);
    return ownedOnly(rows, p.shards);
  }

  async scheduleCountsAdd(p: Sch.ScheduleCountsAddParams): Promise<{ applied: boolean }> {
    checkSchedulePage(p.deltas.length, 'scheduleCountsAdd');
    return this.write(() => {
      this.q.countWritesPrune.run({
        before: p.now - Sch.SCHEDULE_COUNT_WRITE_KEEP_MS,
        limit: Sch.SCHEDULE_COUNT_WRITES_PRUNE_MAX,
      });
      if (this.q.countWriteInsert.run({ writeId: p.writeId, now: p.now }).changes === 0) return { applied: false };
      for (const d of p.deltas)
        this.q.countsAdd.run({ ...d, lastMissed: d.lastMissed ? JSON.stringify(d.lastMissed) : null });
      return { applied: true };
    });
  }

  /** Makes occurrence `e` again in place when its id is taken by an occurrence its schedule canceled (see ScheduleStore.scheduleAdvance). */
  private revive(e: NewEvent, now: number): EventRow | undefined {
    const row = this.q.revive.get({
      tenantId: e.tenantId,
      id: e.id,
      shard: e.shard,
      grp: e.group,
      fireAt: e.fireAt,
      destination: JSON.stringify(e.destination),
      destinationName: 'name' in e.destination ? e.destination.name : null,
      payload: e.payload,
      headers: jsonObject(e.headers),
      retry: e.retry === null ? null : JSON.stringify(e.retry),
      expireAt: e.expireAt,
      tags: jsonObject(e.tags),
      requestHash: e.requestHash,
      queue: queueOf(e.destination),
      type: e.type ?? null,
      now,
    });
    if (!row) return undefined;
    this.q.transitionInsert.run(
      e.tenantId,
      e.id,
      row.version,
      now,
      'state',
      'canceled',
      'scheduled',
      0,
      null,
      null,
      null,
      null,
      JSON.stringify({ schedule: 'made again' }),
    );
    return row;
  }

  async scheduleAdvance(p: Sch.ScheduleAdvanceParams): Promise<Sch.ScheduleAdvanceResult> {
    return this.write(() => this.advanceNow(p));
  }

  async scheduleAdvanceMany(p: { advances: Sch.ScheduleAdvanceParams[] }): Promise<Sch.ScheduleAdvanceResult[]> {
    checkSchedulePage(p.advances.length, 'scheduleAdvanceMany');
    return this.write(() => p.advances.map((a) => this.advanceNow(a)));
  }

  /** One advance inside the caller's transaction. */
  private advanceNow(p: Sch.ScheduleAdvanceParams): Sch.ScheduleAdvanceResult {
    const { events, lastMissed, ...rest } = p;
    if (this.q.advance.run({ ...rest, lastMissed: lastMissed ? JSON.stringify(lastMissed) : null }).changes !== 1)
      return { applied: false };
    const results = events.length > 0 ? this.insertMany({ events, now: p.now }) : [];
    for (let i = 0; i < results.length; i++) {
      if (results[i].kind === 'created') continue;
      const row = this.revive(events[i], p.now);
      if (row) results[i] = { kind: 'created', event: eventFromRow(row) };
    }
    return { applied: true, results };
  }

  async scheduleOccurrenceList(p: Sch.ScheduleOccurrenceListParams) {
    checkSchedulePage(p.limit, 'scheduleOccurrenceList');
    const { lo, hi } = Sch.occurrenceIdRange(p.scheduleId);
    const upper = p.beforeId !== undefined && p.beforeId < hi ? p.beforeId : hi;
    return this.q.occurrences.all({ tenantId: p.tenantId, lo, hi: upper, limit: p.limit }).map(eventFromRow);
  }
}

/** The schedules of `shards` (all when null). */
function ownedOnly(rows: Sch.ScheduleRecord[], shards: number[] | null): Sch.ScheduleRecord[] {
  if (shards === null) return rows;
  const owned = new Set(shards);
  return rows.filter((s) => owned.has(s.shard));
}
