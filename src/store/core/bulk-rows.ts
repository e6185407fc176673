/** The bulk_jobs row of every backend (JSON columns as text) and its record. */
import { parseJson } from './rows.ts';
import { BULK_CLAIM_RUNNING_MAX, type BulkJobKey, type BulkJobRecord, type BulkJobState } from '../store.ts';

export interface BulkJobRow {
  tenant_id: string;
  id: string;
  state: BulkJobState;
  filter: string;
  action: string;
  cursor: string | null;
  matched: number | string;
  done: number | string;
  skipped: number | string;
  errors: string;
  lease_owner: string | null;
  lease_until: number | string | null;
  created_at: number | string;
  updated_at: number | string;
  finished_at: number | string | null;
}

export const BULK_JOB_COLUMNS = `tenant_id, id, state, filter, action, cursor, matched, done, skipped, errors,
  lease_owner, lease_until, created_at, updated_at, finished_at`;

const num = (v: number | string): number => Number(v);
const numOrNull = (v: number | string | null): number | null => (v === null ? null : Number(v));

export function bulkJobFromRow(r: BulkJobRow): BulkJobRecord {
  return {
    tenantId: r.tenant_id,
    id: r.id,
    state: r.state,
    filter: parseJson<Record<string, unknown>>(r.filter),
    action: parseJson<Record<string, unknown>>(r.action),
    cursor: r.cursor,
    matched: num(r.matched),
    done: num(r.done),
    skipped: num(r.skipped),
    errors: parseJson<string[]>(r.errors),
    leaseOwner: r.lease_owner,
    leaseUntil: numOrNull(r.lease_until),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
    finishedAt: numOrNull(r.finished_at),
  };
}

/** The detail a transition of an operation carries, merged over its own. */
export function operationDetail<T extends Record<string, unknown>>(
  detail: T,
  operation: { name: string; id: string } | undefined,
): T {
  return operation ? { ...detail, operation: operation.name, operationId: operation.id } : detail;
}

/** A claim's `running` jobs, checked against BULK_CLAIM_RUNNING_MAX (a RangeError beyond). */
export function checkClaimRunning(running: BulkJobKey[] | undefined): BulkJobKey[] {
  const r = running ?? [];
  if (r.length > BULK_CLAIM_RUNNING_MAX)
    throw new RangeError(`bulkJobClaim: at most ${BULK_CLAIM_RUNNING_MAX} running jobs, got ${r.length}`);
  return r;
}
