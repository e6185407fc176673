/**
 * The pull methods of the PostgreSQL backend (see ../parts/pull.ts), on the store's pools
 * (database.ts).
 */
import type { EventRecord } from '../../core/event.ts';
import type * as S from '../store.ts';
import { checkLimit, checkPullClaim, checkPullSettleMany } from '../core/bounds.ts';
import { eventFromRow, type EventRow } from '../core/rows.ts';
import { run } from './db.ts';
import * as writes from './event-writes.ts';
import { PostgresPart } from './database.ts';
import type { PullStore } from '../parts/pull.ts';

export class PostgresPull extends PostgresPart implements PullStore {
  /**
   * One statement for the whole batch. When every tenant of the batch is relaxed, it runs in a
   * transaction with synchronous_commit = off: the commit answers before its WAL is flushed.
   */
  async eventPullClaim(params: S.EventPullClaimParams): Promise<EventRecord[]> {
    checkPullClaim(params);
    return writes.pullClaim(this.pool, params);
  }

  async eventPullSettle(params: S.EventPullSettleParams): Promise<EventRecord | null> {
    return writes.pullSettle(this.pool, params);
  }

  /** One statement for the whole batch (relaxed as eventPullSettle is). */
  async eventPullSettleMany(params: { settles: S.EventPullSettleParams[] }): Promise<(EventRecord | null)[]> {
    checkPullSettleMany(params.settles);
    return writes.pullSettleMany(this.pool, params.settles);
  }

  /** The settles' statement and the claim's in one transaction. */
  async eventPullSettleThenClaim(params: {
    settles: S.EventPullSettleParams[];
    claim: S.EventPullClaimParams;
  }): Promise<{ settled: (EventRecord | null)[]; events: EventRecord[] }> {
    checkPullSettleMany(params.settles);
    checkPullClaim(params.claim);
    return writes.pullSettleThenClaim(this.pool, params.settles, params.claim);
  }

  async eventPullExtend(params: S.EventPullExtendParams): Promise<EventRecord | null> {
    const row = (
      await run<EventRow>(this.pool, 'pullExtend', [
        params.tenantId,
        params.id,
        params.receipt,
        params.leaseUntil,
        params.now,
      ])
    ).rows[0];
    return row ? eventFromRow(row) : null;
  }

  async eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]> {
    checkLimit(params.limit, 'eventPullExpired');
    const res = await run<EventRow & { receipt: string }>(this.pool, 'pullExpired', [params.now, params.limit]);
    return res.rows.map((row) => ({ event: eventFromRow(row), receipt: row.receipt }));
  }

  async eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null> {
    const row = (await run<{ due_at: number }>(this.pool, 'pullNextDue', [params.tenantId, params.queue])).rows[0];
    return row ? Number(row.due_at) : null;
  }
}
