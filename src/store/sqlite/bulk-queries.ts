/**
 * The SQLite statements of bulk jobs (Store.bulkJob*), each under a comment naming its parameters
 * and what it returns; the event writes of a step are event-writes.ts's own.
 */
import type { Connection } from './driver.ts';
import { BULK_JOB_COLUMNS, type BulkJobRow } from '../core/bulk-rows.ts';

export const BULK_SQL = {
  // (@tenantId, @id, @state, @filter json, @action json, @cursor, @createdAt) → nothing.
  bulkJobInsert: `INSERT INTO bulk_jobs (tenant_id, id, state, filter, action, cursor, created_at, updated_at)
    VALUES (@tenantId, @id, @state, @filter, @action, @cursor, @createdAt, @createdAt)`,
  // (@tenantId, @kept) → changes: deletes the tenant's finished jobs but the newest @kept (ids are
  // time-sortable: the primary key orders them), so the table stays bounded per tenant.
  bulkJobPrune: `DELETE FROM bulk_jobs WHERE tenant_id = @tenantId AND state <> 'running' AND id < coalesce((
      SELECT id FROM bulk_jobs WHERE tenant_id = @tenantId AND state <> 'running' ORDER BY id DESC LIMIT 1 OFFSET @kept - 1), '')`,
  // (@tenantId) → { n }: the tenant's running jobs (bulk_jobs_tenant_running).
  bulkJobRunningCount: `SELECT count(*) AS n FROM bulk_jobs WHERE tenant_id = @tenantId AND state = 'running'`,
  // (@tenantId, @id) → BulkJobRow | undefined.
  bulkJobGet: `SELECT ${BULK_JOB_COLUMNS} FROM bulk_jobs WHERE tenant_id = @tenantId AND id = @id`,
  // (@owner, @now, @leaseUntil, @takeOver 0|1, @running json [[tenantId, id], ...]) → BulkJobRow
  // after the claim | undefined: the oldest running job whose lease is free, ended, @owner's, or
  // (@takeOver) anyone's, and not in @running; jobs of @running's tenants after every other
  // tenant's. The running jobs are few (a bound per tenant), so sorting them costs nothing.
  bulkJobClaim: `UPDATE bulk_jobs SET lease_owner = @owner, lease_until = @leaseUntil, updated_at = @now
    WHERE (tenant_id, id) = (
      SELECT b.tenant_id, b.id FROM bulk_jobs b INDEXED BY bulk_jobs_running
      WHERE b.state = 'running' AND (@takeOver = 1 OR b.lease_owner IS NULL OR b.lease_until <= @now OR b.lease_owner = @owner)
        AND NOT EXISTS (SELECT 1 FROM json_each(@running) r WHERE json_extract(r.value, '$[0]') = b.tenant_id AND json_extract(r.value, '$[1]') = b.id)
      ORDER BY EXISTS (SELECT 1 FROM json_each(@running) r WHERE json_extract(r.value, '$[0]') = b.tenant_id), b.created_at LIMIT 1)
    RETURNING ${BULK_JOB_COLUMNS}`,
  // (@tenantId, @id, @owner, @now) → { ok: 1 } | undefined: the job runs and @owner holds its unexpired lease.
  bulkJobLeaseCheck: `SELECT 1 AS ok FROM bulk_jobs
    WHERE tenant_id = @tenantId AND id = @id AND state = 'running' AND lease_owner = @owner AND lease_until > @now`,
  // (@tenantId, @id, @cursor, @matched, @done, @skipped, @leaseUntil, @now, @finished 0|1) → BulkJobRow
  // after the step: counts added, cursor stored, lease extended; succeeded when @finished.
  bulkJobProgress: `UPDATE bulk_jobs SET cursor = @cursor, matched = matched + @matched, done = done + @done,
      skipped = skipped + @skipped, lease_until = @leaseUntil, updated_at = @now,
      state = CASE WHEN @finished = 1 THEN 'succeeded' ELSE state END,
      finished_at = CASE WHEN @finished = 1 THEN @now ELSE finished_at END
    WHERE tenant_id = @tenantId AND id = @id
    RETURNING ${BULK_JOB_COLUMNS}`,
  // (@tenantId, @id, @owner, @now, @errors json) → changes 1 when the running job held by @owner is now failed.
  bulkJobFail: `UPDATE bulk_jobs SET state = 'failed', errors = @errors, finished_at = @now, updated_at = @now,
      lease_owner = NULL, lease_until = NULL
    WHERE tenant_id = @tenantId AND id = @id AND state = 'running' AND lease_owner = @owner`,
} as const;

export function prepareBulkQueries(db: Connection) {
  const p = <Row = unknown>(sql: string) => db.prepare<Row>(sql);
  return {
    bulkJobInsert: p(BULK_SQL.bulkJobInsert),
    bulkJobRunningCount: p<{ n: number }>(BULK_SQL.bulkJobRunningCount),
    bulkJobPrune: p(BULK_SQL.bulkJobPrune),
    bulkJobGet: p<BulkJobRow>(BULK_SQL.bulkJobGet),
    bulkJobClaim: p<BulkJobRow>(BULK_SQL.bulkJobClaim),
    bulkJobLeaseCheck: p<{ ok: number }>(BULK_SQL.bulkJobLeaseCheck),
    bulkJobProgress: p<BulkJobRow>(BULK_SQL.bulkJobProgress),
    bulkJobFail: p(BULK_SQL.bulkJobFail),
  };
}

export type BulkQueries = ReturnType<typeof prepareBulkQueries>;
