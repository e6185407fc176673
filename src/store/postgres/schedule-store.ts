/**
 * The schedule methods of the PostgreSQL backend (see ../schedules.ts). Every statement is below,
 * under a comment naming its parameters and what it returns; they run as named prepared
 * statements like queries.ts's.
 *
 * Races between nodes: scheduleAdvance's UPDATE is a compare-and-swap on (version, next_at) that
 * takes the row lock first, then inserts the occurrences in the same transaction. A second node
 * advancing the same schedule waits on the lock, re-checks the row (READ COMMITTED re-evaluates
 * the WHERE on the new version) and matches nothing: it rolls back, having inserted nothing. An
 * edit (scheduleUpdate) takes the same lock, so it lands wholly before or after an advance.
 */
import type pg from 'pg';
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
import { inTransaction, rethrowUnavailable, type Queryable } from './db.ts';
import * as writes from './event-writes.ts';
import type { NewEvent } from '../store.ts';
import { EVENT_COLUMNS, IS_PULL_DESTINATION, TRANSITION_COLUMNS, TX } from './queries.ts';
import { CITUS_INSERT, transitionsInsert } from './citus/events.ts';
import { untraced } from './citus/queries.ts';

/** The reasons of cancels that a schedule may undo (Sch.OCCURRENCE_CANCEL_REASONS), as SQL literals. */
const REVIVABLE = Object.values(Sch.OCCURRENCE_CANCEL_REASONS)
  .map((r) => `'${r}'`)
  .join(', ');

const SQL = {
  // ($1 tenantId) → one row when the tenant exists, locking it against other schedule creates of
  // that tenant (FOR NO KEY UPDATE: inserts referencing it still go on) until the transaction ends.
  scheduleTenantLock: `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`,
  // ($1 tenantId) → { n }: the tenant's schedules (a range of the primary key).
  scheduleCount: `SELECT count(*)::int AS n FROM schedules WHERE tenant_id = $1`,
  // ($1 tenantId, $2 id) → ScheduleRow | none.
  scheduleGet: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2`,
  // ($1 tenantId, $2 id) → ScheduleRow | none, row-locked until the transaction ends.
  scheduleGetForUpdate: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
  // ($1..$13 every column in SCHEDULE_COLUMNS order) → nothing. The column
  // catch_up_left (010) is no longer read or written: the missed rule is stateless (judged at each
  // occurrence's fire), and the column is NOT NULL without a default, so an insert writes 0 there.
  scheduleInsert: `INSERT INTO schedules (${SCHEDULE_COLUMNS}, catch_up_left)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 0)`,
  // ($1 tenantId, $2 afterId, $3 limit) → ScheduleRow[] by id.
  scheduleList: `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
  // ($1 tenantId, $2 id, $3 version, $4 spec, $5 paused, $6 nextAt, $7 updatedAt) → nothing.
  scheduleUpdate: `UPDATE schedules SET version = $3, spec = $4, paused = $5, next_at = $6, updated_at = $7
    WHERE tenant_id = $1 AND id = $2`,
  // ($1 tenantId, $2 id) → nothing.
  scheduleDelete: `DELETE FROM schedules WHERE tenant_id = $1 AND id = $2`,
  // ($1 untilMs, $2 limit, $3 shards int[] | null) → ScheduleRow[], earliest cursor first (index schedules_due).
  scheduleListDue: `SELECT ${SCHEDULE_COLUMNS} FROM schedules
    WHERE NOT paused AND next_at IS NOT NULL AND next_at <= $1 AND next_at >= $4 AND ($3::int[] IS NULL OR shard = ANY ($3::int[]))
    ORDER BY next_at LIMIT $2`,
  // ($1 beforeMs, $2 afterTenantId, $3 limit, $4 shards int[] | null) → ScheduleRow[] with a cursor
  // before $1, of tenants after $2, by (tenant, cursor) (index schedules_tenant_due).
  scheduleListCatchUp: `SELECT ${SCHEDULE_COLUMNS} FROM schedules
    WHERE NOT paused AND next_at IS NOT NULL AND tenant_id > $2 AND next_at < $1 AND ($4::int[] IS NULL OR shard = ANY ($4::int[]))
    ORDER BY tenant_id, next_at LIMIT $3`,
  // ($1 writeId, $2 now) → a row when the write id is new (the write goes on), none when it was applied.
  scheduleCountWriteInsert: `INSERT INTO schedule_count_writes (write_id, written_at) VALUES ($1, $2) ON CONFLICT (write_id) DO NOTHING RETURNING 1 AS inserted`,
  // ($1 before, $2 limit) → nothing: forgets at most $2 write ids older than $1, oldest first (rows
  // another transaction is pruning are left to it).
  scheduleCountWritesPrune: `DELETE FROM schedule_count_writes WHERE write_id IN
    (SELECT write_id FROM schedule_count_writes WHERE written_at < $1 ORDER BY written_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // ($1 tenantIds text[], $2 ids text[], $3 firedAdds int[], $4 missedAdds int[], $5 lastMissed text[]) → nothing.
  scheduleCountsAdd: `UPDATE schedules s SET fired_count = s.fired_count + d.fired, missed_count = s.missed_count + d.missed,
      last_missed = coalesce(d.last_missed, s.last_missed)
    FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[]) AS d(tenant_id, id, fired, missed, last_missed)
    WHERE s.tenant_id = d.tenant_id AND s.id = d.id`,
  // ($1 tenantId, $2 id, $3 shard, $4 grp, $5 fireAt, $6 destination, $7 destinationName, $8 payload, $9 headers,
  //  $10 retry, $11 expireAt, $12 tags, $13 requestHash, $14 queue, $15 type, $16 now) → EventRow when
  // the event was an occurrence canceled by a change of its schedule, never attempted, of the same
  // shard and group: scheduled again at $5 with this template, and its transition appended;
  // otherwise no row.
  occurrenceRevive: `WITH changed AS (
      UPDATE events SET state = ${SQL_STATE.scheduled}, version = version + 1, fire_at = $5, due_at = $5, destination = $6, payload = $8,
          headers = $9, retry = $10, expire_at = $11, tags = $12, request_hash = $13, queue = $14, type = $15,
          last_error = NULL, updated_at = $16, pull = ${IS_PULL_DESTINATION('events.tenant_id', '$7::text')}
      WHERE tenant_id = $1 AND id = $2 AND state = ${SQL_STATE.canceled} AND attempts = 0 AND last_error IN (${REVIVABLE})
        AND shard = $3 AND grp IS NOT DISTINCT FROM $4::text
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $16, 'state', 'canceled', 'scheduled', 0, NULL, NULL, NULL, NULL, '{"schedule":"made again"}' FROM changed
    )
    SELECT * FROM changed`,
  // ($1 tenantId, $2 id, $3 version, $4 fromNextAt, $5 nextAt, $6 firedAdd, $7 missedAdd,
  //  $8 lastOccurrenceAt, $9 now, $10 lastMissed json|null) → one row when the schedule was still at
  //  (version, fromNextAt), not paused.
  scheduleAdvance: `UPDATE schedules SET next_at = $5, fired_count = fired_count + $6,
    missed_count = missed_count + $7, last_occurrence_at = coalesce($8, last_occurrence_at), updated_at = $9,
    last_missed = coalesce($10::text, last_missed)
    WHERE tenant_id = $1 AND id = $2 AND version = $3 AND next_at = $4 AND NOT paused RETURNING 1 AS ok`,
  // ($1 tenantId, $2 lo, $3 hi, $4 limit) → EventRow[]: events with lo ≤ id < hi, newest id first (primary key, collation C).
  occurrenceList: `SELECT ${EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND id >= $2 AND id < $3 ORDER BY id DESC LIMIT $4`,
};

/** occurrenceRevive on Citus: already on the event's shard ($3); its transition follows apart (citus/queries.ts). */
export const CITUS_OCCURRENCE_REVIVE = untraced(SQL.occurrenceRevive);

function q<R extends pg.QueryResultRow>(
  db: Queryable,
  name: keyof typeof SQL,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return db.query<R>({ name: `belfry_${name}`, text: SQL[name], values }).catch(rethrowUnavailable);
}

function columns(s: Sch.ScheduleRecord): unknown[] {
  return [
    s.tenantId,
    s.id,
    s.shard,
    s.version,
    JSON.stringify(s.spec),
    s.paused,
    s.nextAt,
    s.firedCount,
    s.missedCount,
    s.lastOccurrenceAt,
    s.createdAt,
    s.updatedAt,
    s.lastMissed ? JSON.stringify(s.lastMissed) : null,
  ];
}

export class PostgresSchedules implements Sch.ScheduleStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Whether the schema is distributed on Citus: occurrences then go through its insert and revive. */
    private readonly distributed = false,
  ) {}

  async scheduleCreate({
    schedule: s,
    perTenantMax,
  }: {
    schedule: Sch.ScheduleRecord;
    perTenantMax: number;
  }): Promise<Sch.ScheduleCreateResult> {
    return inTransaction(this.pool, TX.begin, async (client) => {
      await q(client, 'scheduleTenantLock', [s.tenantId]);
      const existing = (await q<ScheduleRow>(client, 'scheduleGet', [s.tenantId, s.id])).rows[0];
      if (existing) return { kind: 'exists', schedule: scheduleFromRow(existing) };
      if ((await q<{ n: number }>(client, 'scheduleCount', [s.tenantId])).rows[0].n >= perTenantMax)
        return { kind: 'limit' };
      await q(client, 'scheduleInsert', columns(s));
      return { kind: 'created', schedule: s };
    });
  }

  async scheduleGet({ tenantId, id }: { tenantId: string; id: string }): Promise<Sch.ScheduleRecord | null> {
    const row = (await q<ScheduleRow>(this.pool, 'scheduleGet', [tenantId, id])).rows[0];
    return row ? scheduleFromRow(row) : null;
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
    return (await q<ScheduleRow>(this.pool, 'scheduleList', [tenantId, afterId ?? '', limit])).rows.map(
      scheduleFromRow,
    );
  }

  async scheduleUpdate(p: Sch.ScheduleUpdateParams): Promise<Sch.ScheduleMutateResult> {
    return inTransaction(this.pool, TX.begin, async (client) => {
      const row = (await q<ScheduleRow>(client, 'scheduleGetForUpdate', [p.tenantId, p.id])).rows[0];
      const cur = row ? scheduleFromRow(row) : null;
      const refused = scheduleRefusal(cur, p.expectedVersion);
      if (refused) return refused;
      const n = scheduleUpdated(cur!, p);
      await q(client, 'scheduleUpdate', [
        n.tenantId,
        n.id,
        n.version,
        JSON.stringify(n.spec),
        n.paused,
        n.nextAt,
        n.updatedAt,
      ]);
      return { kind: 'ok', schedule: n };
    });
  }

  async scheduleDelete(p: {
    tenantId: string;
    id: string;
    expectedVersion?: number;
  }): Promise<Sch.ScheduleMutateResult> {
    return inTransaction(this.pool, TX.begin, async (client) => {
      const row = (await q<ScheduleRow>(client, 'scheduleGetForUpdate', [p.tenantId, p.id])).rows[0];
      const cur = row ? scheduleFromRow(row) : null;
      const refused = scheduleRefusal(cur, p.expectedVersion);
      if (refused) return refused;
      await q(client, 'scheduleDelete', [p.tenantId, p.id]);
      return { kind: 'ok', schedule: cur! };
    });
  }

  async scheduleListDue(p: Sch.ScheduleListDueParams): Promise<Sch.ScheduleRecord[]> {
    checkSchedulePage(p.limit, 'scheduleListDue');
    return (
      await q<ScheduleRow>(this.pool, 'scheduleListDue', [p.untilMs, p.limit, p.shards, p.fromMs ?? -1])
    ).rows.map(scheduleFromRow);
  }

  async scheduleListCatchUp(p: Sch.ScheduleListCatchUpParams): Promise<Sch.ScheduleRecord[]> {
    checkSchedulePage(p.limit, 'scheduleListCatchUp');
    return (
      await q<ScheduleRow>(this.pool, 'scheduleListCatchUp', [p.beforeMs, p.afterTenantId, p.limit, p.shards])
    ).rows.map(scheduleFromRow);
  }

  async scheduleCountsAdd(p: Sch.ScheduleCountsAddParams): Promise<{ applied: boolean }> {
    checkSchedulePage(p.deltas.length, 'scheduleCountsAdd');
    const d = p.deltas;
    return inTransaction(this.pool, TX.begin, async (client) => {
      await q(client, 'scheduleCountWritesPrune', [
        p.now - Sch.SCHEDULE_COUNT_WRITE_KEEP_MS,
        Sch.SCHEDULE_COUNT_WRITES_PRUNE_MAX,
      ]);
      if ((await q(client, 'scheduleCountWriteInsert', [p.writeId, p.now])).rowCount === 0) return { applied: false };
      await q(client, 'scheduleCountsAdd', [
        d.map((x) => x.tenantId),
        d.map((x) => x.id),
        d.map((x) => x.firedAdd),
        d.map((x) => x.missedAdd),
        d.map((x) => (x.lastMissed ? JSON.stringify(x.lastMissed) : null)),
      ]);
      return { applied: true };
    });
  }

  async scheduleAdvance(p: Sch.ScheduleAdvanceParams): Promise<Sch.ScheduleAdvanceResult> {
    return inTransaction(this.pool, TX.begin, (client) => advanceIn(client, p, this.distributed));
  }

  async scheduleAdvanceMany(p: { advances: Sch.ScheduleAdvanceParams[] }): Promise<Sch.ScheduleAdvanceResult[]> {
    checkSchedulePage(p.advances.length, 'scheduleAdvanceMany');
    // In (tenant, id) order, whatever order they came in: two nodes advancing overlapping batches
    // (a shard moving) lock the schedule rows in the same order, so they wait, never deadlock.
    const order = p.advances
      .map((_, i) => i)
      .sort((x, y) => {
        const a = p.advances[x];
        const b = p.advances[y];
        return a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
      });
    return inTransaction(this.pool, TX.begin, async (client) => {
      const out = new Array<Sch.ScheduleAdvanceResult>(p.advances.length);
      for (const i of order) out[i] = await advanceIn(client, p.advances[i], this.distributed);
      return out;
    });
  }

  async scheduleOccurrenceList(p: Sch.ScheduleOccurrenceListParams) {
    checkSchedulePage(p.limit, 'scheduleOccurrenceList');
    const { lo, hi } = Sch.occurrenceIdRange(p.scheduleId);
    const upper = p.beforeId !== undefined && p.beforeId < hi ? p.beforeId : hi;
    return (await q<EventRow>(this.pool, 'occurrenceList', [p.tenantId, lo, upper, p.limit])).rows.map(eventFromRow);
  }
}

/** Makes occurrence `e` again in place when its id is taken by an occurrence its schedule canceled (see ScheduleStore.scheduleAdvance). */
async function revive(db: Queryable, e: NewEvent, now: number, distributed: boolean): Promise<EventRow | undefined> {
  const values = [
    e.tenantId,
    e.id,
    e.shard,
    e.group,
    e.fireAt,
    JSON.stringify(e.destination),
    'name' in e.destination ? e.destination.name : null,
    e.payload,
    jsonObject(e.headers),
    e.retry === null ? null : JSON.stringify(e.retry),
    e.expireAt,
    jsonObject(e.tags),
    e.requestHash,
    queueOf(e.destination),
    e.type ?? null,
    now,
  ];
  if (!distributed) return (await q<EventRow>(db, 'occurrenceRevive', values)).rows[0];
  // On Citus: the same change on the event's shard, its transition a second statement there.
  const row = (
    await db.query<EventRow>({ name: 'belfry_citus_occurrenceRevive', text: CITUS_OCCURRENCE_REVIVE, values })
  ).rows[0];
  if (row)
    await transitionsInsert(db, [
      {
        shard: row.shard,
        tenantId: row.tenant_id,
        eventId: row.id,
        seq: row.version,
        at: now,
        kind: 'state',
        fromState: 'canceled',
        toState: 'scheduled',
        attempt: 0,
        detail: '{"schedule":"made again"}',
      },
    ]);
  return row;
}

/** One advance inside the caller's transaction: the compare-and-swap, then the occurrences (made, or made again in place). */
async function advanceIn(
  client: Queryable,
  p: Sch.ScheduleAdvanceParams,
  distributed: boolean,
): Promise<Sch.ScheduleAdvanceResult> {
  const swapped = await q(client, 'scheduleAdvance', [
    p.tenantId,
    p.id,
    p.version,
    p.fromNextAt,
    p.nextAt,
    p.firedAdd,
    p.missedAdd,
    p.lastOccurrenceAt,
    p.now,
    p.lastMissed ? JSON.stringify(p.lastMissed) : null,
  ]);
  if (swapped.rowCount !== 1) return { applied: false };
  const results =
    p.events.length > 0
      ? await writes.insertMany(client, { events: p.events, now: p.now }, distributed ? CITUS_INSERT : undefined)
      : [];
  for (let i = 0; i < results.length; i++) {
    if (results[i].kind === 'created') continue;
    const row = await revive(client, p.events[i], p.now, distributed);
    if (row) results[i] = { kind: 'created', event: eventFromRow(row) };
  }
  return { applied: true, results };
}
