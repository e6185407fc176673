/**
 * Bulk operations' service: what POST /v1/events/bulk and GET /v1/bulk/{id} do once the request
 * is parsed. A dry run counts and samples, boundedly, and changes nothing; a real run stores a
 * job that the runner (runner.ts) of some node carries out in the background.
 *
 * The dry run's bound: it reads at most DRY_RUN_PAGES_MAX pages of DRY_RUN_PAGE_SIZE events (each
 * page a bounded walk of an index, store/event-list-plan.ts). When the selection goes on past
 * that, `exact` is false and `matched` is a lower bound: "at least N".
 */
import type { Clock } from '../core/clock.ts';
import { BelfryError, invalid } from '../core/errors.ts';
import type { EventRecord } from '../core/event.ts';
import { newSortableId } from '../core/ids.ts';
import type { BulkJobRecord, Store } from '../store/store.ts';
import { bulkSelectPage } from './page.ts';
import { bulkApplies, type BulkAction, type BulkFilter } from './selection.ts';

export const DRY_RUN_PAGE_SIZE = 1_000;
export const DRY_RUN_PAGES_MAX = 10;
export const DRY_RUN_SAMPLE_MAX = 10;
/** Bulk jobs a tenant may have running at once. */
export const BULK_RUNNING_PER_TENANT_MAX = 2;

export interface BulkServiceDeps {
  store: Pick<Store, 'eventList' | 'destinationGet' | 'bulkJobCreate' | 'bulkJobGet'>;
  clock: Clock;
}

export interface BulkDryRun {
  matched: number;
  /** False when the selection went on past the bound: `matched` is then a lower bound. */
  exact: boolean;
  applicable: number;
  sample: EventRecord[];
}

export class BulkService {
  constructor(private readonly deps: BulkServiceDeps) {}

  /** Refuses a redirect to a destination the tenant does not have. */
  async checkAction(tenantId: string, action: BulkAction): Promise<void> {
    if (action.kind !== 'redirect') return;
    if (!(await this.deps.store.destinationGet({ tenantId, name: action.destination }))) {
      throw invalid(
        'action.redirect',
        `no destination named "${action.destination}"; create it with PUT /v1/destinations/${action.destination}`,
      );
    }
  }

  /** Counts (boundedly) and samples what a job would select and change; changes nothing. */
  async dryRun(tenantId: string, filter: BulkFilter, action: BulkAction): Promise<BulkDryRun> {
    let matched = 0;
    let applicable = 0;
    const sample: EventRecord[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < DRY_RUN_PAGES_MAX; page++) {
      const p = await bulkSelectPage(this.deps.store, tenantId, filter, cursor, DRY_RUN_PAGE_SIZE);
      matched += p.events.length;
      for (const e of p.events) {
        if (bulkApplies(action, e)) applicable += 1;
        if (sample.length < DRY_RUN_SAMPLE_MAX) sample.push(e);
      }
      cursor = p.nextCursor;
      if (cursor === null) break;
    }
    return { matched, exact: cursor === null, applicable, sample };
  }

  /** Stores a running job; rate_limited when BULK_RUNNING_PER_TENANT_MAX of the tenant run already. */
  async start(tenantId: string, filter: BulkFilter, action: BulkAction): Promise<BulkJobRecord> {
    const now = this.deps.clock.now();
    const job: BulkJobRecord = {
      tenantId,
      id: `bulk_${newSortableId(now)}`,
      state: 'running',
      filter: { ...filter },
      // The job's action as stored and shown: the request's form, with durations in ms for the runner.
      action: { ...action },
      cursor: null,
      matched: 0,
      done: 0,
      skipped: 0,
      errors: [],
      leaseOwner: null,
      leaseUntil: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    if (!(await this.deps.store.bulkJobCreate({ job, runningMax: BULK_RUNNING_PER_TENANT_MAX }))) {
      throw new BelfryError(
        'rate_limited',
        `${BULK_RUNNING_PER_TENANT_MAX} bulk jobs of this tenant are running; wait for one to finish (GET /v1/bulk/{id})`,
        [
          {
            field: 'action',
            message: 'too many bulk jobs running',
            limit: 'bulkJobsRunningMax',
            max: BULK_RUNNING_PER_TENANT_MAX,
          },
        ],
      );
    }
    return job;
  }

  /** The job, or not_found. */
  async get(tenantId: string, id: string): Promise<BulkJobRecord> {
    const job = await this.deps.store.bulkJobGet({ tenantId, id });
    if (!job)
      throw new BelfryError('not_found', `no bulk job with id "${id}"`, [{ field: 'id', message: 'not found' }]);
    return job;
  }
}
