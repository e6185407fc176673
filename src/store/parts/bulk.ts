/**
 * The Store's part for bulk jobs (docs/bulk-and-forecast.md): a job's filter, action and
 * progress, leased by one runner at a time, each page of its changes applied in one transaction.
 * Implemented by each backend's bulk-store.ts.
 */

import type { EventRecord } from '../../core/event.ts';
import type { EventPatch } from './events.ts';

export type BulkJobState = 'running' | 'succeeded' | 'failed';

/** A bulk operation (api/bulk): its filter and action as the API validated them, and its progress. */
export interface BulkJobRecord {
  tenantId: string;
  /** `bulk_` + a time-sortable id. */
  id: string;
  state: BulkJobState;
  /** The filter, as JSON the runner reads back (eventList params and tags). */
  filter: Record<string, unknown>;
  /** The action, as JSON the runner reads back. */
  action: Record<string, unknown>;
  /** The eventList cursor of the next page; null before the first page. */
  cursor: string | null;
  /** Events the filter selected so far. */
  matched: number;
  /** Of those, events changed. */
  done: number;
  /** Of those, events left alone: in a state the action does not apply to, or changed meanwhile. */
  skipped: number;
  /** Failures of the job itself (not of events), the newest last; at most BULK_ERRORS_KEPT. */
  errors: string[];
  leaseOwner: string | null;
  leaseUntil: number | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

/** A bulk job's key. */
export interface BulkJobKey {
  tenantId: string;
  id: string;
}

/** Jobs a bulkJobClaim may name as `running`, at most. */
export const BULK_CLAIM_RUNNING_MAX = 64;

/** One event's change in a bulk step, at the version the runner read. */
export type BulkChange =
  | { id: string; version: number; kind: 'cancel' }
  | { id: string; version: number; kind: 'replay' }
  | { id: string; version: number; kind: 'update'; patch: EventPatch };

export interface BulkJobStepParams {
  tenantId: string;
  id: string;
  /** The step applies only while `owner` holds the job's lease (unexpired at `now`). */
  owner: string;
  now: number;
  /** The lease is extended to this instant. */
  leaseUntil: number;
  /** The operation named in each change's transition. */
  operation: string;
  changes: BulkChange[];
  /** Events the page selected (changes plus those skipped before any write). */
  matched: number;
  /** Events of the page skipped before any write (a state the action does not apply to). */
  skipped: number;
  /** The cursor after this page; with `finished`, the job succeeds. */
  cursor: string | null;
  finished: boolean;
}

export interface BulkJobStepResult {
  /** The events changed (for the scheduler's timers). */
  changed: EventRecord[];
  job: BulkJobRecord;
}

/** Kept job errors, at most. */
export const BULK_ERRORS_KEPT = 10;

/** Finished jobs kept per tenant (the newest); bulkJobCreate deletes older ones. */
export const BULK_FINISHED_KEPT = 100;

/** The bulk job methods of Store. */
export interface BulkStore {
  /**
   * Stores a new running job, only while the tenant has fewer than `runningMax` running jobs
   * (checked in the same transaction). Returns false when it has that many. Deletes the tenant's
   * finished jobs but the newest BULK_FINISHED_KEPT, so the jobs table stays bounded.
   */
  bulkJobCreate(params: { job: BulkJobRecord; runningMax: number }): Promise<boolean>;
  bulkJobGet(params: { tenantId: string; id: string }): Promise<BulkJobRecord | null>;
  /**
   * Takes the lease of one running bulk job, the oldest first: one whose lease is free or ended
   * at `now`, or already `owner`'s (or, with `takeOver`, any: a single-process store, where no
   * other owner can be alive). Null when there is none. `running` (at most BULK_CLAIM_RUNNING_MAX)
   * names the jobs the caller runs already: those are never returned, and jobs of their tenants
   * come after every other tenant's, so a runner with room for one more job takes a tenant it does
   * not serve yet first.
   */
  bulkJobClaim(params: {
    owner: string;
    now: number;
    leaseUntil: number;
    takeOver?: boolean;
    running?: BulkJobKey[];
  }): Promise<BulkJobRecord | null>;
  /**
   * One batch of a bulk job, in ONE transaction: while `owner` holds the job's unexpired lease,
   * applies each change as the single-event call would (eventCancel / eventReplay / eventUpdate
   * at the version read: an event that moved on is skipped), each transition naming the
   * operation and the job; then adds the page's counts, stores the cursor and extends the lease.
   * A crash loses the whole batch or nothing, so a resumed job never applies a change twice.
   * Null when the lease is not `owner`'s (nothing applied).
   */
  bulkJobStep(params: BulkJobStepParams): Promise<BulkJobStepResult | null>;
  /** Marks a running job failed with `error`, only while `owner` holds its lease. */
  bulkJobFail(params: { tenantId: string; id: string; owner: string; now: number; error: string }): Promise<boolean>;
}
