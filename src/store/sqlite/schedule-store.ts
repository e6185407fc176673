/**
 * The schedule methods of the SQLite backend (see ../schedules.ts), each in one IMMEDIATE
 * transaction of the store's connection. Every statement is below, under a comment naming its
 * parameters and what it returns.
 */
import type Database from 'better-sqlite3';
import { eventFromRow, type EventRow } from '../core/rows.ts';
import { checkSchedulePage, SCHEDULE_COLUMNS, scheduleFromRow, scheduleRefusal, scheduleUpdated, type ScheduleRow } from '../core/schedule-rows.ts';
import * as Sch from '../schedules.ts';
import type { EventInsertManyParams, EventInsertResult } from '../store.ts';
import { EVENT_COLUMNS } from './queries.ts';

const SQL = {
  // (@tenantId) → { n }: the tenant's schedules (a range of the primary key).
  scheduleCount: `SELECT count(*) AS n FROM schedules WHERE tenant_id = @tenantId`,
  // (@tenantId, @id) → ScheduleRow | undefined.
  scheduleGet: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = @tenantId AND id = @id`,
  // (every column) → changes 1.
  scheduleInsert: `INSERT INTO schedules (${SCHEDULE_COLUMNS}) VALUES (@tenantId, @id, @shard, @version, @spec, @paused,
    @nextAt, @catchUpLeft, @firedCount, @missedCount, @lastOccurrenceAt, @createdAt, @updatedAt)`,
  // (@tenantId, @afterId, @limit) → ScheduleRow[] by id.
  scheduleList: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = @tenantId AND id > @afterId ORDER BY id LIMIT @limit`,
  // (@tenantId, @id, @version, @spec, @paused, @nextAt, @catchUpLeft, @updatedAt) → changes.
  scheduleUpdate: `UPDATE schedules SET version = @version, spec = @spec, paused = @paused, next_at = @nextAt,
    catch_up_left = @catchUpLeft, updated_at = @updatedAt WHERE tenant_id = @tenantId AND id = @id`,
  // (@tenantId, @id) → changes.
  scheduleDelete: `DELETE FROM schedules WHERE tenant_id = @tenantId AND id = @id`,
  // (@untilMs, @limit) → ScheduleRow[], earliest cursor first (index schedules_due).
  scheduleListDue: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE paused = 0 AND next_at IS NOT NULL AND next_at <= @untilMs
    ORDER BY next_at LIMIT @limit`,
  // (@tenantId, @id, @version, @fromNextAt, @nextAt, @catchUpLeft, @firedAdd, @missedAdd, @lastOccurrenceAt, @now)
  // → changes 1 when the schedule was still at (version, fromNextAt) and not paused.
  scheduleAdvance: `UPDATE schedules SET next_at = @nextAt, catch_up_left = @catchUpLeft, fired_count = fired_count + @firedAdd,
    missed_count = missed_count + @missedAdd, last_occurrence_at = coalesce(@lastOccurrenceAt, last_occurrence_at), updated_at = @now
    WHERE tenant_id = @tenantId AND id = @id AND version = @version AND next_at = @fromNextAt AND paused = 0`,
  // (@tenantId, @lo, @hi, @limit) → EventRow[]: events with lo ≤ id < hi, newest id first (the events' unique (tenant_id, id) index).
  occurrenceList: `SELECT ${EVENT_COLUMNS} FROM events WHERE tenant_id = @tenantId AND id >= @lo AND id < @hi ORDER BY id DESC LIMIT @limit`,
};

type Insert = (params: EventInsertManyParams) => EventInsertResult[];

export class SqliteSchedules implements Sch.ScheduleStore {
  private readonly q;

  constructor(
    db: Database.Database,
    /** Runs fn in one IMMEDIATE transaction (synchronous=FULL: acknowledged writes). */
    private readonly write: <T>(fn: () => T) => T,
    /** The store's event insert, inside the caller's transaction. */
    private readonly insertMany: Insert,
  ) {
    const p = <Row = unknown>(sql: string) => db.prepare<unknown[], Row>(sql);
    this.q = {
      count: p<{ n: number }>(SQL.scheduleCount),
      get: p<ScheduleRow>(SQL.scheduleGet),
      insert: p(SQL.scheduleInsert),
      list: p<ScheduleRow>(SQL.scheduleList),
      update: p(SQL.scheduleUpdate),
      delete: p(SQL.scheduleDelete),
      listDue: p<ScheduleRow>(SQL.scheduleListDue),
      advance: p(SQL.scheduleAdvance),
      occurrences: p<EventRow>(SQL.occurrenceList),
    };
  }

  private getNow(tenantId: string, id: string): Sch.ScheduleRecord | null {
    const row = this.q.get.get({ tenantId, id });
    return row ? scheduleFromRow(row) : null;
  }

  async scheduleCreate({ schedule: s, perTenantMax }: { schedule: Sch.ScheduleRecord; perTenantMax: number }): Promise<Sch.ScheduleCreateResult> {
    return this.write(() => {
      const existing = this.getNow(s.tenantId, s.id);
      if (existing) return { kind: 'exists', schedule: existing };
      if ((this.q.count.get({ tenantId: s.tenantId })?.n ?? 0) >= perTenantMax) return { kind: 'limit' };
      this.q.insert.run({ ...s, spec: JSON.stringify(s.spec), paused: s.paused ? 1 : 0 });
      return { kind: 'created', schedule: s };
    });
  }

  async scheduleGet({ tenantId, id }: { tenantId: string; id: string }): Promise<Sch.ScheduleRecord | null> {
    return this.getNow(tenantId, id);
  }

  async scheduleList({ tenantId, afterId, limit }: { tenantId: string; afterId?: string; limit: number }): Promise<Sch.ScheduleRecord[]> {
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

  async scheduleDelete(p: { tenantId: string; id: string; expectedVersion?: number }): Promise<Sch.ScheduleMutateResult> {
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
    if (p.shards === null) return this.q.listDue.all({ untilMs: p.untilMs, limit: p.limit }).map(scheduleFromRow);
    // One node owns every shard on SQLite; a subset is filtered here (a test's, or a future split).
    const owned = new Set(p.shards);
    return this.q.listDue.all({ untilMs: p.untilMs, limit: p.limit }).map(scheduleFromRow).filter((s) => owned.has(s.shard));
  }

  async scheduleAdvance(p: Sch.ScheduleAdvanceParams): Promise<Sch.ScheduleAdvanceResult> {
    return this.write(() => {
      const { events, ...rest } = p;
      if (this.q.advance.run(rest).changes !== 1) return { applied: false };
      return { applied: true, results: events.length > 0 ? this.insertMany({ events, now: p.now }) : [] };
    });
  }

  async scheduleOccurrenceList(p: Sch.ScheduleOccurrenceListParams) {
    checkSchedulePage(p.limit, 'scheduleOccurrenceList');
    const { lo, hi } = Sch.occurrenceIdRange(p.scheduleId);
    const upper = p.beforeId !== undefined && p.beforeId < hi ? p.beforeId : hi;
    return this.q.occurrences.all({ tenantId: p.tenantId, lo, hi: upper, limit: p.limit }).map(eventFromRow);
  }
}
