/**
 * The bulk job methods of the SQLite backend (see ../parts/bulk.ts), on the store's connection
 * (database.ts); statements in bulk-queries.ts. A step's event writes and its progress are one
 * IMMEDIATE transaction.
 */
import type * as S from '../store.ts';
import { BULK_ERRORS_KEPT, BULK_FINISHED_KEPT } from '../store.ts';
import { checkLimit } from '../core/bounds.ts';
import * as writes from './event-writes.ts';
import { bulkJobFromRow, checkClaimRunning } from '../core/bulk-rows.ts';
import { SqlitePart } from './database.ts';
import type { BulkStore } from '../parts/bulk.ts';

export class SqliteBulk extends SqlitePart implements BulkStore {
  async bulkJobCreate(params: { job: S.BulkJobRecord; runningMax: number }): Promise<boolean> {
    const j = params.job;
    return this.write(() => {
      if (this.bq.bulkJobRunningCount.get({ tenantId: j.tenantId })!.n >= params.runningMax) return false;
      this.bq.bulkJobPrune.run({ tenantId: j.tenantId, kept: BULK_FINISHED_KEPT });
      this.bq.bulkJobInsert.run({
        tenantId: j.tenantId,
        id: j.id,
        state: j.state,
        filter: JSON.stringify(j.filter),
        action: JSON.stringify(j.action),
        cursor: j.cursor,
        createdAt: j.createdAt,
      });
      return true;
    });
  }

  async bulkJobGet(params: { tenantId: string; id: string }): Promise<S.BulkJobRecord | null> {
    const row = this.bq.bulkJobGet.get(params);
    return row ? bulkJobFromRow(row) : null;
  }

  async bulkJobClaim(params: {
    owner: string;
    now: number;
    leaseUntil: number;
    takeOver?: boolean;
    running?: S.BulkJobKey[];
  }): Promise<S.BulkJobRecord | null> {
    const running = JSON.stringify(checkClaimRunning(params.running).map((k) => [k.tenantId, k.id]));
    const { owner, now, leaseUntil } = params;
    const row = this.write(() =>
      this.bq.bulkJobClaim.get({ owner, now, leaseUntil, takeOver: params.takeOver ? 1 : 0, running }),
    );
    return row ? bulkJobFromRow(row) : null;
  }

  /** One IMMEDIATE transaction: the lease check, the batch's event writes, the progress. */
  async bulkJobStep(params: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, params.changes.length), 'bulkJobStep');
    return this.write(() => writes.bulkStep(this.q, this.bq, params));
  }

  async bulkJobFail(params: {
    tenantId: string;
    id: string;
    owner: string;
    now: number;
    error: string;
  }): Promise<boolean> {
    return this.write(() => {
      const row = this.bq.bulkJobGet.get({ tenantId: params.tenantId, id: params.id });
      if (!row) return false;
      const errors = [...bulkJobFromRow(row).errors, params.error].slice(-BULK_ERRORS_KEPT);
      return (
        this.bq.bulkJobFail.run({
          tenantId: params.tenantId,
          id: params.id,
          owner: params.owner,
          now: params.now,
          errors: JSON.stringify(errors),
        }).changes === 1
      );
    });
  }
}
