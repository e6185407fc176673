/**
 * The PostgreSQL statements of bulk jobs (Store.bulkJob*), each under a comment naming its
 * parameters and what it returns, and the one way they are sent (named prepared statements, as
 * db.ts's run). Lease times are the database clock's (NOW_MS), like the leader lease.
 */
import type pg from 'pg';
import { BULK_JOB_COLUMNS } from '../core/bulk-rows.ts';
import { rethrowUnavailable, type Queryable } from './db.ts';

export const BULK_SQL = {
  // ($1 tenantId, $2 id, $3 filter json, $4 action json, $5 createdAt, $6 runningMax) → { id } when
  // inserted: only while the tenant has fewer than $6 running jobs. The caller holds the tenant's
  // row lock (bulkTenantLock), so two creates of one tenant count one after the other.
  bulkJobInsert: `INSERT INTO bulk_jobs (tenant_id, id, state, filter, action, created_at, updated_at)
    SELECT $1, $2, 'running', $3, $4, $5, $5
    WHERE (SELECT count(*) FROM bulk_jobs WHERE tenant_id = $1 AND state = 'running') < $6
    RETURNING id`,
  // ($1 tenantId, $2 kept) → nothing: deletes the tenant's finished jobs but the newest $2 (ids are
  // time-sortable: the primary key orders them), so the table stays bounded per tenant.
  bulkJobPrune: `DELETE FROM bulk_jobs WHERE tenant_id = $1 AND state <> 'running' AND id < coalesce((
      SELECT id FROM bulk_jobs WHERE tenant_id = $1 AND state <> 'running' ORDER BY id DESC LIMIT 1 OFFSET $2::int - 1), '')`,
  // ($1 tenantId) → { id } | no row: locks the tenant's row until the transaction ends.
  bulkTenantLock: `SELECT id FROM tenants WHERE id = $1 FOR UPDATE`,
  // ($1 tenantId, $2 id) → BulkJobRow | no row.
  bulkJobGet: `SELECT ${BULK_JOB_COLUMNS} FROM bulk_jobs WHERE tenant_id = $1 AND id = $2`,
  // ($1 owner, $2 now, $3 leaseUntil, $4 takeOver, $5 running tenant ids text[], $6 running job
  // ids text[] (pairwise)) → BulkJobRow after the claim | no row: the oldest running job whose
  // lease is free, ended, $1's, or ($4) anyone's, and not one of ($5, $6); jobs of $5's tenants
  // after every other tenant's (the running jobs are few: a bound per tenant). A job another node
  // is claiming at the same moment is skipped (SKIP LOCKED).
  bulkJobClaim: `UPDATE bulk_jobs b SET lease_owner = $1, lease_until = $3::bigint, updated_at = $2::bigint
    FROM (SELECT tenant_id, id FROM bulk_jobs
          WHERE state = 'running' AND ($4::boolean OR lease_owner IS NULL OR lease_until <= $2::bigint OR lease_owner = $1)
            AND (tenant_id, id) NOT IN (SELECT * FROM unnest($5::text[], $6::text[]))
          ORDER BY tenant_id = ANY($5::text[]), created_at LIMIT 1 FOR UPDATE SKIP LOCKED) c
    WHERE b.tenant_id = c.tenant_id AND b.id = c.id
    RETURNING ${BULK_JOB_COLUMNS.split(',')
      .map((c) => `b.${c.trim()}`)
      .join(', ')}`,
  // ($1 tenantId, $2 id, $3 owner, $4 now) → { ok } | no row: the job runs and $3 holds its
  // unexpired lease; the row stays locked until the step's transaction ends.
  bulkJobLeaseCheck: `SELECT 1 AS ok FROM bulk_jobs
    WHERE tenant_id = $1 AND id = $2 AND state = 'running' AND lease_owner = $3 AND lease_until > $4::bigint
    FOR UPDATE`,
  // ($1 tenantId, $2 id, $3 cursor, $4 matched, $5 done, $6 skipped, $7 leaseUntil, $8 now, $9 finished)
  // → BulkJobRow after the step: counts added, cursor stored, lease extended; succeeded when $9.
  bulkJobProgress: `UPDATE bulk_jobs SET cursor = $3, matched = matched + $4, done = done + $5, skipped = skipped + $6,
      lease_until = $7::bigint, updated_at = $8::bigint,
      state = CASE WHEN $9::boolean THEN 'succeeded' ELSE state END,
      finished_at = CASE WHEN $9::boolean THEN $8::bigint ELSE finished_at END
    WHERE tenant_id = $1 AND id = $2
    RETURNING ${BULK_JOB_COLUMNS}`,
  // ($1 tenantId, $2 id, $3 owner, $4 now, $5 error, $6 errorsKept) → { id } when the running job
  // held by $3 is now failed, with $5 appended to its last $6 errors.
  bulkJobFail: `UPDATE bulk_jobs SET state = 'failed', finished_at = $4::bigint, updated_at = $4::bigint,
      lease_owner = NULL, lease_until = NULL,
      errors = (SELECT coalesce(json_agg(e ORDER BY n), '[]'::json)::text FROM (
        SELECT e, n FROM json_array_elements_text((errors::jsonb || to_jsonb($5::text))::json) WITH ORDINALITY AS x(e, n)
        ORDER BY n DESC LIMIT $6) last)
    WHERE tenant_id = $1 AND id = $2 AND state = 'running' AND lease_owner = $3
    RETURNING id`,
} as const;

export type BulkQueryName = keyof typeof BULK_SQL;

export function runBulk<R extends pg.QueryResultRow = pg.QueryResultRow>(
  db: Queryable,
  name: BulkQueryName,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return db.query<R>({ name: `belfry_${name}`, text: BULK_SQL[name], values }).catch(rethrowUnavailable);
}
