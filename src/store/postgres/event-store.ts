/**
 * The event methods of the PostgreSQL backend (see ../parts/events.ts), on the store's pools
 * (database.ts): claims on the claim pool (commits that do not wait for the WAL flush), the
 * counts and the forecast on the read pool, the rest on the main pool. Inserts of tenants whose
 * durability is relaxed commit without waiting for the flush too.
 */
import { BelfryError } from '../../core/errors.ts';
import type { EventRecord, EventState, TransitionRecord } from '../../core/event.ts';
import { listPage, listPlan, type ListKey } from '../event-list-plan.ts';
import type * as S from '../store.ts';
import { checkDeleteTerminal, checkForecast, checkLimit, checkListDue } from '../core/bounds.ts';
import {
  dueRefFromRow,
  eventFromRow,
  transitionFromRow,
  type DueRefRow,
  type EventRow,
  type ListWalkRow,
  type TransitionRow,
} from '../core/rows.ts';
import { inTransaction, run } from './db.ts';
import { listDue } from './due-list.ts';
import * as writes from './event-writes.ts';
import { TX, type QueryName } from './queries.ts';
import { POSTGRES_READ_STATEMENT_TIMEOUT_MS, PostgresPart } from './database.ts';
import type { EventStore } from '../parts/events.ts';

/** PostgreSQL's SQLSTATE for a statement canceled by statement_timeout. */
const QUERY_CANCELED = '57014';

/** The statement of each eventList walk. */
const LIST_QUERIES: Record<ListKey, QueryName> = {
  tenant: 'eventListByTenant',
  state: 'eventListByState',
  destination: 'eventListByDestination',
  group: 'eventListByGroup',
  type: 'eventListByType',
};

export class PostgresEvents extends PostgresPart implements EventStore {
  async eventInsertMany(params: S.EventInsertManyParams): Promise<S.EventInsertResult[]> {
    if (params.events.length === 0) return [];
    const relaxed = await this.durability.allRelaxed(
      this.pool,
      params.events.map((e) => e.tenantId),
    );
    if (!relaxed) return writes.insertMany(this.pool, params);
    return inTransaction(this.pool, TX.beginRelaxed, (client) => writes.insertMany(client, params));
  }

  async eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null> {
    const row = (await run<EventRow>(this.pool, 'eventGet', [params.tenantId, params.id])).rows[0];
    return row ? eventFromRow(row) : null;
  }

  async eventList(params: S.EventListParams): Promise<S.EventListPage> {
    checkLimit(params.limit, 'eventList');
    const plan = listPlan(params);
    const values = [
      params.tenantId,
      plan.beforeSeq,
      params.state ?? null,
      params.destination ?? null,
      params.group ?? null,
      params.fromMs ?? null,
      params.toMs ?? null,
      plan.examine,
      params.limit + 1,
      params.type ?? null,
    ];
    const res = await inTransaction(this.pool, TX.beginOrderedWalk, (client) =>
      run<EventRow & ListWalkRow>(client, LIST_QUERIES[plan.key], values),
    );
    const walk = res.rows[0];
    const rows = res.rows.filter((r) => r.seq !== null);
    const walkEndSeq = walk && walk.examined >= plan.examine ? walk.last_seq : null;
    return listPage(rows, params.limit, walkEndSeq);
  }

  async eventListDue(params: S.EventListDueParams): Promise<S.DueRef[]> {
    checkListDue(params);
    if (params.shards !== null && params.shards.length === 0) return [];
    return listDue(this.pool, params);
  }

  async eventGroupHead(params: S.EventGroupHeadParams): Promise<S.DueRef | null> {
    const row = (
      await run<DueRefRow & { state: EventState; pull: boolean }>(this.pool, 'eventGroupFirst', [
        params.tenantId,
        params.group,
      ])
    ).rows[0];
    // A pull head is claimed by consumers, never fired by the scheduler.
    if (!row || row.state === 'executing' || row.pull) return null;
    return dueRefFromRow(row);
  }

  /** Before the node says it is ready: the claims' pool connected, its statement prepared (event-writes.ts warmClaimPool). */
  async warmUp(_shardCount: number): Promise<void> {
    await writes.warmClaimPool(this.claimPool, this.claimPool.options.max ?? 1);
  }

  async eventClaim(params: S.EventClaimParams): Promise<EventRecord[]> {
    if (params.refs.length === 0) return [];
    return writes.claim(this.claimPool, params);
  }

  async eventRecordAttempts(params: S.EventRecordAttemptsParams): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    return writes.recordAttempts(this.pool, params);
  }

  async eventRescue(params: S.EventRescueParams): Promise<S.DueRef[]> {
    checkLimit(params.limit, 'eventRescue');
    return writes.rescue(this.pool, params);
  }

  async eventCancel(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return writes.cancel(this.pool, params);
  }

  async eventUpdate(params: S.EventMutateParams & { patch: S.EventPatch }): Promise<S.EventMutateResult> {
    return writes.update(this.pool, params);
  }

  async eventReplay(params: S.EventMutateParams): Promise<S.EventMutateResult> {
    return writes.replay(this.pool, params);
  }

  async eventCountByTenantState(): Promise<S.TenantStateCount[]> {
    const res = await inTransaction(this.readPool, TX.beginLongRead, (client) =>
      run<{ tenant_id: string; state: EventState; n: number }>(client, 'eventCountByTenantState'),
    );
    return res.rows.map((r) => ({ tenantId: r.tenant_id, state: r.state, n: r.n }));
  }

  async eventCountPending(params: { tenantId: string }): Promise<number> {
    return (await run<{ n: number }>(this.pool, 'eventCountPending', [params.tenantId])).rows[0].n;
  }

  /** On the read pool: its time follows the events in the window. */
  async eventForecast(params: S.EventForecastParams): Promise<S.ForecastCount[]> {
    const { tenantId, fromMs, toMs, bucketMs, by } = checkForecast(params);
    try {
      const res =
        tenantId === null
          ? await run<S.ForecastCount>(this.readPool, 'eventForecastAll', [fromMs, toMs, bucketMs, by])
          : await run<S.ForecastCount>(this.readPool, 'eventForecastTenant', [tenantId, fromMs, toMs, bucketMs, by]);
      return res.rows;
    } catch (err) {
      if ((err as { code?: unknown }).code !== QUERY_CANCELED) throw err;
      throw new BelfryError(
        'unavailable',
        `the forecast took longer than ${POSTGRES_READ_STATEMENT_TIMEOUT_MS} ms and was stopped: ask for a shorter window (its cost follows the events due in it)`,
        [
          {
            field: 'to',
            message: 'the window holds too many events to count in time',
            timeoutMs: POSTGRES_READ_STATEMENT_TIMEOUT_MS,
          },
        ],
        { 'retry-after': '10' },
      );
    }
  }

  async eventDeleteTerminal(params: S.EventDeleteTerminalParams): Promise<S.EventDeleteTerminalResult> {
    checkDeleteTerminal(params);
    const res = await run<{ events: number; transitions: number }>(this.pool, 'eventDeleteTerminal', [
      params.tenantId,
      params.state,
      params.finishedBefore,
      params.limit,
    ]);
    return { events: res.rows[0].events, transitions: res.rows[0].transitions };
  }

  async transitionList(params: S.TransitionListParams): Promise<TransitionRecord[]> {
    checkLimit(params.limit, 'transitionList');
    const res = await run<TransitionRow>(this.pool, 'transitionList', [
      params.tenantId,
      params.eventId,
      params.afterSeq ?? 0,
      params.limit,
    ]);
    return res.rows.map(transitionFromRow);
  }
}
