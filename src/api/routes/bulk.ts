/**
 * POST /v1/events/bulk and GET /v1/bulk/{id}: cancel, replay, shift or redirect every event a
 * filter selects. Each route parses its request into a filter and an action (bulk/selection.ts),
 * calls the BulkService (bulk/service.ts: a bounded dry run, or a job the runner carries out) and
 * answers with its JSON.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  BULK_RUNNING_PER_TENANT_MAX,
  type BulkAction,
  type BulkFilter,
  type BulkService,
  DRY_RUN_PAGE_SIZE,
  DRY_RUN_PAGES_MAX,
} from '../../bulk/index.ts';
import { parseDurationMs, parseTimeMs } from '../../core/duration.ts';
import { invalid } from '../../core/errors.ts';
import type { BulkJobRecord } from '../../store/store.ts';
import { isoTime, toEventJson } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  BulkAccepted,
  BulkBody,
  BulkDryRunResponse,
  BulkIdParams,
  BulkJobJson,
  type BulkIdParamsInput,
  type BulkInput,
} from '../schemas/bulk.ts';

function filterOf(body: BulkInput['filter']): BulkFilter {
  const f: BulkFilter = {};
  if (body.state !== undefined) f.state = body.state;
  if (body.destination !== undefined) f.destination = body.destination;
  if (body.group !== undefined) f.group = body.group;
  if (body.type !== undefined) f.type = body.type;
  if (body.tags !== undefined) f.tags = { ...body.tags };
  for (const [field, value] of [
    ['fireAtFrom', body.fireAtFrom],
    ['fireAtTo', body.fireAtTo],
  ] as const) {
    if (value === undefined) continue;
    const ms = parseTimeMs(value);
    if (ms === null) throw invalid(`filter.${field}`, 'must be an RFC 3339 time or epoch milliseconds');
    if (field === 'fireAtFrom') f.fireAtFromMs = ms;
    else f.fireAtToMs = ms;
  }
  return f;
}

async function actionOf(bulk: BulkService, tenantId: string, body: BulkInput['action']): Promise<BulkAction> {
  if (body === 'cancel' || body === 'replay') return { kind: body };
  if ('shift' in body) {
    const ms = parseDurationMs(body.shift.slice(1));
    if (ms === null || ms === 0)
      throw invalid('action.shift', 'must be a signed, non-zero duration such as "+1h" or "-30m", at most 10 years');
    return { kind: 'shift', shiftMs: body.shift.startsWith('-') ? -ms : ms };
  }
  const action: BulkAction = { kind: 'redirect', destination: body.redirect };
  await bulk.checkAction(tenantId, action);
  return action;
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

export function bulkRoutes(app: FastifyInstance, bulk: BulkService): void {
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
      const action = await actionOf(bulk, tenantId, request.body.action);
      if (request.body.dryRun === true) {
        const d = await bulk.dryRun(tenantId, filter, action);
        return { ...d, sample: d.sample.map(toEventJson) };
      }
      const job = await bulk.start(tenantId, filter, action);
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
      const job = await bulk.get(request.tenantId, request.params.id);
      return jobJson(job);
    },
  );
}
