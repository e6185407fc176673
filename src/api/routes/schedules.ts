/**
 * /v1/schedules: recurring schedules. Create, read, list, edit (pause and resume are edits of
 * `paused`), delete, preview, trigger. Each route checks its request (a body into a ScheduleSpec,
 * schedule-input.ts), calls the ScheduleService (schedules/service.ts) and answers with the
 * schedule's JSON.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { newSortableId } from '../../core/ids.ts';
import { nextOccurrences } from '../../core/occurrences.ts';
import { firstOccurrence, SCHEDULES_PER_TENANT_MAX, type ScheduleService, timingOf } from '../../schedules/index.ts';
import type { ScheduleSpec } from '../../store/schedules.ts';
import type { AppDeps } from '../deps.ts';
import { etag, toEventJson } from '../event-json.ts';
import { checkTiming, occurrencesJson, toScheduleJson, toScheduleSpec, type ScheduleInput } from '../schedule-input.ts';
import { BEARER_SECURITY, errorResponses, IfMatchHeaders } from '../schemas/common.ts';
import { EventJson } from '../schemas/events.ts';
import {
  ScheduleCreateBody,
  ScheduleIdParams,
  ScheduleJson,
  ScheduleListQuery,
  ScheduleListResponse,
  SchedulePatchBody,
  SchedulePreviewBody,
  SchedulePreviewResponse,
  type ScheduleCreateInput,
  type ScheduleIdParamsInput,
  type ScheduleListQueryInput,
  type SchedulePatchInput,
  type SchedulePreviewInput,
} from '../schemas/schedules.ts';
import { parseIfMatch } from './event-actions.ts';
import { inputContext } from './events.ts';

const LIST_LIMIT_DEFAULT = 100;
const PREVIEW_COUNT_DEFAULT = 10;

/**
 * Body of a PATCH over the stored one: `cron` and `every` replace each other; `endAt: null`
 * removes it. A startAt left out at creation (it was then "now") stays the one stored, so an edit
 * does not move an `every` schedule's anchor.
 */
function mergedInput(current: ScheduleSpec, patch: SchedulePatchInput): ScheduleInput {
  const { paused: _paused, ...fields } = patch;
  const merged: Record<string, unknown> = { startAt: current.startAt, ...current.input, ...fields };
  if (fields.cron !== undefined) delete merged.every;
  if (fields.every !== undefined) delete merged.cron;
  if (merged.endAt === null) delete merged.endAt;
  return merged as ScheduleInput;
}

async function createSchedule(
  deps: AppDeps,
  schedules: ScheduleService,
  request: FastifyRequest<{ Body: ScheduleCreateInput }>,
) {
  const ctx = inputContext(deps, request);
  const { id: givenId, paused, ...input } = request.body;
  const id = givenId ?? `sch_${newSortableId(ctx.now)}`;
  const spec = await toScheduleSpec(ctx, id, input);
  return schedules.create({ tenantId: request.tenantId, id, spec, paused: paused ?? false, now: ctx.now });
}

async function patchSchedule(
  deps: AppDeps,
  schedules: ScheduleService,
  request: FastifyRequest<{
    Params: ScheduleIdParamsInput;
    Body: SchedulePatchInput;
    Headers: { 'if-match'?: string };
  }>,
) {
  const { id } = request.params;
  const ifMatch = parseIfMatch(request.headers['if-match']);
  const current = await schedules.get(request.tenantId, id);
  const ctx = inputContext(deps, request);
  const body = request.body;
  const onlyPause = Object.keys(body).every((k) => k === 'paused');
  const spec: ScheduleSpec = onlyPause ? current.spec : await toScheduleSpec(ctx, id, mergedInput(current.spec, body));
  return schedules.update({
    current,
    expected: ifMatch ?? current.version,
    spec,
    paused: body.paused ?? current.paused,
    now: ctx.now,
  });
}

export function scheduleRoutes(app: FastifyInstance, deps: AppDeps, schedules: ScheduleService): void {
  const tags = ['schedules'];
  app.post<{ Body: ScheduleCreateInput }>(
    '/v1/schedules',
    {
      schema: {
        tags,
        summary: 'Create a recurring schedule',
        description: `201 when created; 200 when the same id and body were sent before; 409 when the id is used by a different body. At most ${SCHEDULES_PER_TENANT_MAX} schedules per tenant.`,
        security: BEARER_SECURITY,
        body: ScheduleCreateBody,
        response: { 200: ScheduleJson, 201: ScheduleJson, ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { status, schedule } = await createSchedule(deps, schedules, request);
      reply.status(status).header('etag', `"${schedule.version}"`);
      return toScheduleJson(schedule, deps.clock.now());
    },
  );

  app.post<{ Body: SchedulePreviewInput }>(
    '/v1/schedules/preview',
    {
      schema: {
        tags,
        summary: 'The next occurrences of a schedule body, without creating it',
        security: BEARER_SECURITY,
        body: SchedulePreviewBody,
        response: { 200: SchedulePreviewResponse, ...errorResponses(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      const now = deps.clock.now();
      const timing = checkTiming(request.body, now);
      const first = firstOccurrence(timingOf(timing), now);
      const count = request.body.count ?? PREVIEW_COUNT_DEFAULT;
      const next = first === null ? [] : [first, ...nextOccurrences(timingOf(timing), first, count - 1)];
      return { next: occurrencesJson(timing, next) };
    },
  );

  app.get<{ Querystring: ScheduleListQueryInput }>(
    '/v1/schedules',
    {
      schema: {
        tags,
        summary: 'List schedules by id',
        security: BEARER_SECURITY,
        querystring: ScheduleListQuery,
        response: { 200: ScheduleListResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const limit = request.query.limit === undefined ? LIST_LIMIT_DEFAULT : Number(request.query.limit);
      const page = await schedules.list(request.tenantId, request.query.cursor, limit);
      const now = deps.clock.now();
      // One next occurrence each in a list (a page of 1,000 would otherwise compute 5,000).
      return {
        schedules: page.map((s) => toScheduleJson(s, now, 1)),
        nextCursor: page.length === limit ? page[page.length - 1].id : null,
      };
    },
  );

  app.get<{ Params: ScheduleIdParamsInput }>(
    '/v1/schedules/:id',
    {
      schema: {
        tags,
        summary: 'Get a schedule with its next occurrences',
        security: BEARER_SECURITY,
        params: ScheduleIdParams,
        response: { 200: ScheduleJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const s = await schedules.get(request.tenantId, request.params.id);
      reply.header('etag', `"${s.version}"`);
      return toScheduleJson(s, deps.clock.now());
    },
  );

  app.patch<{ Params: ScheduleIdParamsInput; Body: SchedulePatchInput; Headers: { 'if-match'?: string } }>(
    '/v1/schedules/:id',
    {
      schema: {
        tags,
        summary: 'Edit, pause ({"paused": true}) or resume a schedule',
        description:
          'Affects only occurrences not yet fired: those already made are canceled (pause, or no longer an occurrence) or updated (payload, headers, destination). Honours If-Match (412).',
        security: BEARER_SECURITY,
        params: ScheduleIdParams,
        headers: IfMatchHeaders,
        body: SchedulePatchBody,
        response: { 200: ScheduleJson, ...errorResponses(400, 401, 403, 404, 412, 413, 415) },
      },
    },
    async (request, reply) => {
      const s = await patchSchedule(deps, schedules, request);
      reply.header('etag', `"${s.version}"`);
      return toScheduleJson(s, deps.clock.now());
    },
  );

  app.delete<{ Params: ScheduleIdParamsInput; Headers: { 'if-match'?: string } }>(
    '/v1/schedules/:id',
    {
      schema: {
        tags,
        summary: 'Delete a schedule; its occurrences not yet fired are canceled',
        security: BEARER_SECURITY,
        params: ScheduleIdParams,
        headers: IfMatchHeaders,
        response: { 200: ScheduleJson, ...errorResponses(400, 401, 403, 404, 412) },
      },
    },
    async (request) => {
      const expected = parseIfMatch(request.headers['if-match']);
      const deleted = await schedules.delete(request.tenantId, request.params.id, expected);
      return toScheduleJson(deleted, deps.clock.now());
    },
  );

  app.post<{ Params: ScheduleIdParamsInput }>(
    '/v1/schedules/:id/trigger',
    {
      // Makes an event: counts against the tenant's scheduleRequestsPerSecond like POST /v1/events.
      config: { schedules: true },
      schema: {
        tags,
        summary: 'Fire one occurrence now (an event <id>@<now>), outside the schedule’s timing',
        security: BEARER_SECURITY,
        params: ScheduleIdParams,
        response: { 201: EventJson, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const event = await schedules.trigger(request.tenantId, request.params.id);
      reply.status(201).header('etag', etag(event));
      return toEventJson(event);
    },
  );
}
