/**
 * The event methods of the SQLite backend (see ../parts/events.ts), on the store's connection
 * (database.ts): each write one IMMEDIATE transaction, the scheduler's own bookkeeping (claims,
 * outcomes, rescues, retention) relaxed (no fsync of its own); the counts and the
 * forecast on the reader thread. Statements in queries.ts, the writes in event-writes.ts.
 */
import type { EventRecord, EventState, TransitionRecord } from '../../core/event.ts';
import type * as S from '../store.ts';
import { checkDeleteTerminal, checkForecast, checkLimit, checkListDue } from '../core/bounds.ts';
import { listPage, listPlan } from '../event-list-plan.ts';
import { dueRefFromRow, eventFromRow, transitionFromRow } from '../core/rows.ts';
import * as writes from './event-writes.ts';
import { SqlitePart } from './database.ts';
import type { EventStore } from '../parts/events.ts';

export class SqliteEvents extends SqlitePart implements EventStore {
  async eventInsertMany(params: S.EventInsertManyParams): Promise<S.EventInsertResult[]> {
    if (params.events.length === 0) return [];
    return this.write(() => writes.insertMany(this.q, params));
  }

  /**
   * eventInsertMany for the store thread (thread-store.ts): the events come encoded by
   * encodeInsertRows and the answer is insertRows' own, so neither crosses the thread as records.
   */
  async eventInsertRows(rows: (string | number | null)[], now: number): Promise<writes.InsertRowsResult> {
    if (rows.length === 0) return { seqs: [], others: [] };
    return this.write(() => writes.insertRows(this.q, rows, now));
  }

  async eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null> {
    const row = this.q.eventGet.get(params.tenantId, params.id);
    return row ? eventFromRow(row) : null;
  }

  /** One bounded walk of an index (event-list-plan.ts); a second, index-only walk finds where a cut walk ended. */
  async eventList(params: S.EventListParams): Promise<S.EventListPage> {
    checkLimit(params.limit, 'eventList');
    const plan = listPlan(params);
    const filters = {
      tenantId: params.tenantId,
      beforeSeq: plan.beforeSeq,
      state: params.state ?? null,
      destination: params.destination ?? null,
      group: params.group ?? null,
      type: params.type ?? null,
      examine: plan.examine,
    };
    const rows = this.q.eventListBy[plan.key].all({
      ...filters,
      fromMs: params.fromMs ?? null,
      toMs: params.toMs ?? null,
      limit: params.limit + 1,
    });
    let walkEndSeq: number | null = null;
    if (plan.residual && rows.length <= params.limit) {
      const walk = this.q.eventListWalk[plan.key].get(filters)!;
      if (walk.examined >= plan.examine) walkEndSeq = walk.last_seq;
    }
    return listPage(rows, params.limit, walkEndSeq);
  }

  async eventListDue(params: S.EventListDueParams): Promise<S.DueRef[]> {
    checkListDue(params);
    if (params.shards !== null && params.shards.length === 0) return [];
    if (params.queue) {
      const { tenantId, queue, from } = params.queue;
      const rows = this.q.eventListDueQueue.all({
        tenantId,
        queue,
        untilMs: params.untilMs,
        fromDueAt: from?.dueAt ?? Number.MIN_SAFE_INTEGER,
        fromId: from?.id ?? '',
        shards: params.shards === null ? null : JSON.stringify(params.shards),
        limit: params.limit,
      });
      return rows.map(dueRefFromRow);
    }
    const bind = {
      untilMs: params.untilMs,
      afterDueAt: params.after?.dueAt ?? Number.MIN_SAFE_INTEGER,
      afterTenantId: params.after?.tenantId ?? '',
      afterId: params.after?.id ?? '',
      limit: params.limit,
    };
    if (params.skip?.length) {
      const skip = JSON.stringify(params.skip.map((m) => [m.tenantId, m.queue, m.from.dueAt, m.from.id]));
      const rows =
        params.shards === null
          ? this.q.eventListDueAllSkip.all({ ...bind, skip })
          : this.q.eventListDueShardsSkip.all({ ...bind, shards: JSON.stringify(params.shards), skip });
      return rows.map(dueRefFromRow);
    }
    const rows =
      params.shards === null
        ? this.q.eventListDueAll.all(bind)
        : this.q.eventListDueShards.all({ ...bind, shards: JSON.stringify(params.shards) });
    return rows.map(dueRefFromRow);
  }

  async eventGroupHead(params: S.EventGroupHeadParams): Promise<S.DueRef | null> {
    const row = this.q.eventGroupFirst.get({ tenantId: params.tenantId, group: params.group });
    // A pull head is claimed by consumers, never fired by the scheduler.
    if (!row || row.state === 'executing' || row.pull === 1) return null;
    return dueRefFromRow(row);
  }

  async eventClaim(params: S.EventClaimParams): Promise<EventRecord[]> {
    if (params.refs.length === 0) return [];
    return this.writeRelaxed(() => writes.claim(this.q, params));
  }

  async eventRecordAttempts(params: S.EventRecordAttemptsParams): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    return this.writeRelaxed(() => writes.recordAttempts(this.q, params));
  }

  async eventRescue(params: S.EventRescueParams): Promise<S.DueRef[]> {
    checkLimit(params.limit, 'eventRescue');
    return this.writeRelaxed(() => writes.rescue(this.q, params));
  }

  async eventCancel(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.write(() => writes.cancel(this.q, params));
  }

  async eventUpdate(params: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
    return this.write(() => writes.update(this.q, params));
  }

  async eventReplay(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return this.write(() => writes.replay(this.q, params));
  }

  /** On the reader thread. */
  async eventCountByTenantState(): Promise<S.TenantStateCount[]> {
    const rows = await this.reader.all<{ tenant_id: string; state: EventState; n: number }>('eventCountByTenantState');
    return rows.map((r) => ({ tenantId: r.tenant_id, state: r.state, n: r.n }));
  }

  /** On the reader thread. */
  async eventCountPending(params: { tenantId: string }): Promise<number> {
    return (await this.reader.all<{ n: number }>('eventCountPending', { tenantId: params.tenantId }))[0].n;
  }

  /** On the reader thread. */
  async eventForecast(params: S.EventForecastParams): Promise<S.ForecastCount[]> {
    const { tenantId, fromMs, toMs, bucketMs, by } = checkForecast(params);
    const rows =
      tenantId === null
        ? await this.reader.all<S.ForecastCount>('eventForecastAll', { fromMs, toMs, bucketMs, by })
        : await this.reader.all<S.ForecastCount>('eventForecastTenant', { tenantId, fromMs, toMs, bucketMs, by });
    return rows;
  }

  /**
   * One relaxed transaction (no fsync of its own: a power loss may undo the newest deletions,
   * which the next pass repeats). It holds the event loop while it runs, so callers keep
   * `limit` small (the cleaner: a few hundred).
   */
  async eventDeleteTerminal(params: S.EventDeleteTerminalParams): Promise<S.EventDeleteTerminalResult> {
    checkDeleteTerminal(params);
    const { tenantId, state, finishedBefore, limit } = params;
    return this.writeRelaxed(() => {
      const gone = this.q.eventDeleteTerminal.all({ tenantId, state, finishedBefore, limit });
      let transitions = 0;
      for (const row of gone) transitions += this.q.transitionDeleteEvent.run(tenantId, row.id).changes;
      return { events: gone.length, transitions };
    });
  }

  async transitionList(params: S.TransitionListParams): Promise<TransitionRecord[]> {
    checkLimit(params.limit, 'transitionList');
    return this.q.transitionList
      .all({ tenantId: params.tenantId, eventId: params.eventId, afterSeq: params.afterSeq ?? 0, limit: params.limit })
      .map(transitionFromRow);
  }
}
