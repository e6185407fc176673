/**
 * The pull methods of the SQLite backend (see ../parts/pull.ts), on the store's connection
 * (database.ts). Claims and their ends commit relaxed, as a push claim and outcome do.
 */
import type { EventRecord } from '../../core/event.ts';
import type * as S from '../store.ts';
import { checkLimit, checkPullClaim, checkPullSettleMany } from '../core/bounds.ts';
import { eventFromRow } from '../core/rows.ts';
import * as writes from './event-writes.ts';
import { SqlitePart } from './database.ts';
import type { PullStore } from '../parts/pull.ts';

export class SqlitePull extends SqlitePart implements PullStore {
  async eventPullClaim(params: S.EventPullClaimParams): Promise<EventRecord[]> {
    checkPullClaim(params);
    return this.writeRelaxed(() => writes.pullClaim(this.q, params));
  }

  /** Relaxed, as a push outcome is: an ack a power loss undoes makes the event come back (at least once). */
  async eventPullSettle(params: S.EventPullSettleParams): Promise<EventRecord | null> {
    return this.writeRelaxed(() => writes.pullSettle(this.q, params));
  }

  /** One relaxed transaction for the whole batch. */
  async eventPullSettleMany(params: { settles: S.EventPullSettleParams[] }): Promise<(EventRecord | null)[]> {
    checkPullSettleMany(params.settles);
    return this.writeRelaxed(() => params.settles.map((p) => writes.pullSettle(this.q, p)));
  }

  /** One relaxed transaction for the settles and the claim. */
  async eventPullSettleThenClaim(params: {
    settles: S.EventPullSettleParams[];
    claim: S.EventPullClaimParams;
  }): Promise<{ settled: (EventRecord | null)[]; events: EventRecord[] }> {
    checkPullSettleMany(params.settles);
    checkPullClaim(params.claim);
    return this.writeRelaxed(() => ({
      settled: params.settles.map((p) => writes.pullSettle(this.q, p)),
      events: writes.pullClaim(this.q, params.claim),
    }));
  }

  async eventPullExtend(params: S.EventPullExtendParams): Promise<EventRecord | null> {
    return this.writeRelaxed(() => writes.pullExtend(this.q, params));
  }

  async eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]> {
    checkLimit(params.limit, 'eventPullExpired');
    return this.q.pullExpired.all(params).map((row) => ({ event: eventFromRow(row), receipt: row.receipt }));
  }

  async eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null> {
    return this.q.pullNextDue.get(params)?.due_at ?? null;
  }
}
