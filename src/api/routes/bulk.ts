/**
 * POST /v1/events/bulk and GET /v1/bulk/{id}: cancel, replay, shift or redirect every event a
 * filter selects (scheduler/bulk-select.ts). A dry run counts and samples, boundedly, and changes
 * nothing; a real run is a job (scheduler/bulk-runner.ts) answered 202 at once.
 *
 * The dry run's bound: it reads at most DRY_RUN_PAGES_MAX pages of DRY_RUN_PAGE_SIZE events (each
 * page a bounded walk of an index, store/event-list-plan.ts). When the selection goes on past
 * that, `exact` is false and `matched` is a lower bound: "at least N".
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseDurationMs, parseTimeMs } from '../../core/duration.ts';
import { BelfryError, invalid } from '../../core/errors.ts';
import { newSortableId } from '../../core/ids.ts';
import { bulkApplies, bulkSelectPage, type BulkAction, type BulkFilter } from '../../scheduler/bulk-select.ts';
import type { BulkJobRecord } from '../../store/store.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime, toEventJson } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { BulkAccepted, BulkBody, BulkDryRunResponse, BulkIdParams, BulkJobJson, type BulkIdParamsInput, type BulkInput } from '../schemas/bulk.ts';

export const DRY_RUN_PAGE_SIZE = 1_000;
export const DRY_RUN_PAGES_MAX = 10;
export const DRY_RUN_SAMPLE_MAX = 10;
/** Bulk jobs a tenant may have running at once. */
export const BULK_RUNNING_PER_TENANT_MAX = 2;

function filterOf(body: BulkInput['filter']): BulkFilter {
  const f: BulkFilter = {};
  if (body.state !== undefined) f.state = body.state;
  if (body.destination !== undefined) f.destination = body.destination;
  if (body.group !== undefined) f.group = body.group;
  if (body.type !== undefined) f.type = body.type;
  if (body.tags !== undefined) f.tags = { ...body.tags };
  for (const [field, value] of [['fireAtFrom', body.fireAtFrom], ['fireAtTo', body.fireAtTo]] as const) {
    if (value === undefined) continue;
    const ms = parseTimeMs(value);
    if (ms === null) throw invalid(`filter.${field}`, 'must be an RFC 3339 time or epoch milliseconds');
    if (field === 'fireAtFrom') f.fireAtFromMs = ms;
    else f.fireAtToMs = ms;
  }
  return f;
}

async function actionOf(deps: AppDeps, tenantId: string, body: BulkInput['action']): Promise<BulkAction> {
  if (body === 'cancel' || body === 'replay') return { kind: body };
  if ('shift' in body) {
    const ms = parseDurationMs(body.shift.slice(1));
    if (ms === null || ms === 0) throw invalid('action.shift', 'must be a signed, non-zero duration such as "+1h" or "-30m", at most 10 years');
    return { kind: 'shift', shiftMs: body.shift.startsWith('-') ? -ms : ms };
  }
  if (!(await deps.store.destinationGet({ tenantId, name: body.redirect }))) {
    throw invalid('action.redirect', `no destination named "${body.redirect}"; create it with PUT /v1/destinations/${body.redirect}`);
  }
  return { kind: 'redirect', destination: body.redirect };
}

async function dryRun(deps: AppDeps, tenantId: string, filter: BulkFilter, action: BulkAction) {
  let matched = 0;
  let applicable = 0;
  const sample: ReturnType<typeof toEventJson>[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < DRY_RUN_PAGES_MAX; page++) {
    const p = await bulkSelectPage(deps.store, tenantId, filter, cursor, DRY_RUN_PAGE_SIZE);
    matched += p.events.length;
    for (const e of p.events) {
      if (bulkApplies(action, e)) applicable += 1;
      if (sample.length < DRY_RUN_SAMPLE_MAX) sample.push(toEventJson(e));
    }
    cursor = p.nextCursor;
    if (cursor === null) break;
  }
  return { matched, exact: cursor === null, applicable, sample };
}

function jobJson(j: BulkJobRecord) {
  return {
    id: j.id,
    state: j.state,
    filter: j.filter,
    action: j.action,
    matched: j.matched,
    done: j.done,
    skipped: j.skipped,
    errors: j.errors,
    createdAt: isoTime(j.createdAt),
    updatedAt: isoTime(j.updatedAt),
    finishedAt: j.finishedAt === null ? null : isoTime(j.finishedAt),
  };
}

/** The job's action as stored and shown: the request's form, with durations in ms for the runner. */
function storedAction(a: BulkAction): Record<string, unknown> {
  return { ...a };
}

export function bulkRoutes(app: FastifyInstance, deps: AppDeps): void {
  const tags = ['events'];
  app.post<{ Body: BulkInput }>(
    '/v1/events/bulk',
    {
      schema: {
        tags,
        summary: 'Cancel, replay, shift or redirect every event a filter selects',
        description: `dryRun: 200 with the count (exact, or a lower bound past ${DRY_RUN_PAGES_MAX * DRY_RUN_PAGE_SIZE} events) and a sample; nothing changes. Otherwise 202 with the job's id: a background job changes the events in batches, each by the same conditional write as the single-event call (an event that changed meanwhile is skipped and counted), each change a transition naming the operation (bulk_cancel, bulk_replay, bulk_shift, bulk_redirect). At most ${BULK_RUNNING_PER_TENANT_MAX} jobs of a tenant run at once (429 beyond).`,
        security: BEARER_SECURITY,
        body: BulkBody,
        response: { 200: BulkDryRunResponse, 202: BulkAccepted, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request: FastifyRequest<{ Body: BulkInput }>, reply) => {
      const { tenantId } = request;
      const filter = filterOf(request.body.filter);
      const action = await actionOf(deps, tenantId, request.body.action);
      if (request.body.dryRun === true) return dryRun(deps, tenantId, filter, action);
      const now = deps.clock.now();
      const job: BulkJobRecord = {
        tenantId, id: `bulk_${newSortableId(now)}`, state: 'running', filter: { ...filter }, action: storedAction(action), cursor: null,
        matched: 0, done: 0, skipped: 0, errors: [], leaseOwner: null, leaseUntil: null, createdAt: now, updatedAt: now, finishedAt: null,
      };
      if (!(await deps.store.bulkJobCreate({ job, runningMax: BULK_RUNNING_PER_TENANT_MAX }))) {
        throw new BelfryError('rate_limited', `${BULK_RUNNING_PER_TENANT_MAX} bulk jobs of this tenant are running; wait for one to finish (GET /v1/bulk/{id})`, [
          { field: 'action', message: 'too many bulk jobs running', limit: 'bulkJobsRunningMax', max: BULK_RUNNING_PER_TENANT_MAX },
        ]);
      }
      reply.status(202).header('location', `/v1/bulk/${job.id}`);
      return { id: job.id, state: job.state };
    },
  );

  app.get<{ Params: BulkIdParamsInput }>(
    '/v1/bulk/:id',
    {
      schema: {
        tags,
        summary: 'A bulk job: its state and progress',
        security: BEARER_SECURITY,
        params: BulkIdParams,
        response: { 200: BulkJobJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const job = await deps.store.bulkJobGet({ tenantId: request.tenantId, id: request.params.id });
      if (!job) throw new BelfryError('not_found', `no bulk job with id "${request.params.id}"`, [{ field: 'id', message: 'not found' }]);
      return jobJson(job);
    },
  );
}
