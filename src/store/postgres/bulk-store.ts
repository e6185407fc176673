/**
 * The bulk job methods of the PostgreSQL backend (see ../parts/bulk.ts), on the store's pools
 * (database.ts); statements in bulk-queries.ts. A step's event writes and its progress are one
 * transaction.
 */
import type * as S from '../store.ts';
import { BULK_ERRORS_KEPT, BULK_FINISHED_KEPT } from '../store.ts';
import { checkLimit } from '../core/bounds.ts';
import { inTransaction } from './db.ts';
import * as writes from './event-writes.ts';
import { TX } from './queries.ts';
import { runBulk } from './bulk-queries.ts';
import { bulkJobFromRow, checkClaimRunning, type BulkJobRow } from '../core/bulk-rows.ts';
import { PostgresPart } from './database.ts';
import type { BulkStore } from '../parts/bulk.ts';

export class PostgresBulk extends PostgresPart implements BulkStore {
  async bulkJobCreate(params: { job: S.BulkJobRecord; runningMax: number }): Promise<boolean> {
    const j = params.job;
    return inTransaction(this.pool, TX.begin, async (client) => {
      await runBulk(client, 'bulkTenantLock', [j.tenantId]);
      await runBulk(client, 'bulkJobPrune', [j.tenantId, BULK_FINISHED_KEPT]);
      const res = await runBulk(client, 'bulkJobInsert', [
        j.tenantId,
        j.id,
        JSON.stringify(j.filter),
        JSON.stringify(j.action),
        j.createdAt,
        params.runningMax,
      ]);
      return res.rowCount === 1;
    });
  }

  async bulkJobGet(params: { tenantId: string; id: string }): Promise<S.BulkJobRecord | null> {
    const res = await runBulk<BulkJobRow>(this.pool, 'bulkJobGet', [params.tenantId, params.id]);
    return res.rows[0] ? bulkJobFromRow(res.rows[0]) : null;
  }

  /** One bounded walk of an index (event-list-plan.ts), in one statement planned as an ordered walk (TX.beginOrderedWalk). */
  async bulkJobClaim(params: {
    owner: string;
    now: number;
    leaseUntil: number;
    takeOver?: boolean;
    running?: S.BulkJobKey[];
  }): Promise<S.BulkJobRecord | null> {
    const running = checkClaimRunning(params.running);
    const res = await runBulk<BulkJobRow>(this.pool, 'bulkJobClaim', [
      params.owner,
      params.now,
      params.leaseUntil,
      params.takeOver === true,
      running.map((k) => k.tenantId),
      running.map((k) => k.id),
    ]);
    return res.rows[0] ? bulkJobFromRow(res.rows[0]) : null;
  }

  async bulkJobStep(params: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, params.changes.length), 'bulkJobStep');
    return writes.bulkStep(this.pool, params);
  }

  async bulkJobFail(params: {
    tenantId: string;
    id: string;
    owner: string;
    now: number;
    error: string;
  }): Promise<boolean> {
    const res = await runBulk(this.pool, 'bulkJobFail', [
      params.tenantId,
      params.id,
      params.owner,
      params.now,
      params.error,
      BULK_ERRORS_KEPT,
    ]);
    return res.rowCount === 1;
  }
}
