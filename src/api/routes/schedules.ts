/**
 * /v1/schedules: recurring schedules. Create, read, list, edit (pause and resume are edits of
 * `paused`), delete, preview, trigger. The materialiser (scheduler/materialiser.ts) makes the
 * occurrences into events; this file changes the schedule row and, after an edit or a delete, the
 * occurrences already made and not yet fired, by the same conditional writes as the event API's.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { canonicalJson, newSortableId } from '../../core/ids.ts';
import { BelfryError, invalid } from '../../core/errors.ts';
import type { EventRecord } from '../../core/event.ts';
import { nextOccurrence, nextOccurrences } from '../../core/occurrences.ts';
import { shardOf } from '../../core/shard.ts';
import { advanceSchedule, MATERIALISER_DEFAULTS, madeAheadMs, occurrenceEvent, timingOf } from '../../scheduler/materialiser.ts';
import { OCCURRENCE_CANCEL_REASONS, type ScheduleMutateResult, type ScheduleRecord, type ScheduleSpec } from '../../store/schedules.ts';
import type { AppDeps } from '../deps.ts';
import { occurrenceLimits } from '../occurrence-limits.ts';
import { etag, toEventJson } from '../event-json.ts';
import { checkTiming, firstOccurrence, occurrencesJson, toScheduleJson, toScheduleSpec, type ScheduleInput } from '../schedule-input.ts';
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

/** Schedules per tenant, at most (each costs the materialiser a row read per pass when due). */
export const SCHEDULES_PER_TENANT_MAX = 1_000;
/** Occurrences made and not yet fired that an edit or delete looks at (newest first): the horizon holds a few. */
const PENDING_OCCURRENCES_MAX = 1_000;
const LIST_LIMIT_DEFAULT = 100;
const PREVIEW_COUNT_DEFAULT = 10;

function notFound(id: string): BelfryError {
  return new BelfryError('not_found', `no schedule with id "${id}"`, [{ field: 'id', message: 'not found' }]);
}

function outcome(result: ScheduleMutateResult, id: string, expected: number | undefined): ScheduleRecord {
  if (result.kind === 'ok') return result.schedule;
  if (result.kind === 'not_found') throw notFound(id);
  throw new BelfryError('precondition_failed', `schedule is at version ${result.schedule.version}, not ${expected} as If-Match requires`, [
    { field: 'If-Match', message: 'does not match the current version', version: result.schedule.version },
  ]);
}

/** A timing with no occurrence from now on (endAt passed, or before the first match) is refused. */
function noOccurrence(spec: ScheduleSpec): BelfryError {
  const field = spec.endAt !== null ? 'endAt' : 'cron';
  return invalid(field, 'the schedule has no occurrence from now on (before endAt)');
}

function timingKey(spec: ScheduleSpec): string {
  return canonicalJson([spec.cron, spec.everyMs, spec.timezone, spec.startAt, spec.endAt]);
}

function templateKey(spec: ScheduleSpec): string {
  const t = spec.template;
  return canonicalJson([t.destination, t.payload, t.headers, t.type ?? null]);
}

/** The occurrence instant of an event id `<schedule>@<time>`, or null. */
function occurrenceAt(scheduleId: string, eventId: string): number | null {
  const at = Date.parse(eventId.slice(scheduleId.length + 1));
  return Number.isFinite(at) ? at : null;
}

/**
 * Brings the occurrences already made and not yet fired (state scheduled) in line with the
 * schedule after an edit (`after`) or a delete (`after` null): canceled when the schedule is gone
 * or paused or no longer has that occurrence, with the reason as their lastError (so the schedule
 * makes them again when it has them again: a resume, a timing that includes them again, the same id
 * created anew); their payload, headers and destination updated when those changed. Each is the
 * event API's conditional write (at the version read), so an occurrence that fired meanwhile is
 * left as it is. Returns how many changed.
 */
async function reconcile(deps: AppDeps, tenantId: string, before: ScheduleRecord, after: ScheduleRecord | null, now: number): Promise<number> {
  const timingChanged = after !== null && timingKey(before.spec) !== timingKey(after.spec);
  const templateChanged = after !== null && templateKey(before.spec) !== templateKey(after.spec);
  const wasActive = !before.paused;
  if (after !== null && !after.paused && !timingChanged && !templateChanged) return 0;
  if (after !== null && after.paused && !wasActive) return 0;
  const events = await deps.store.scheduleOccurrenceList({ tenantId, scheduleId: before.id, limit: PENDING_OCCURRENCES_MAX });
  const changed: EventRecord[] = [];
  for (const e of events) {
    if (e.state !== 'scheduled') continue;
    const at = occurrenceAt(before.id, e.id);
    const reason = after === null ? OCCURRENCE_CANCEL_REASONS.deleted
      : after.paused ? OCCURRENCE_CANCEL_REASONS.paused
        : timingChanged && (at === null || nextOccurrence(timingOf(after.spec), at - 1) !== at) ? OCCURRENCE_CANCEL_REASONS.retimed
          : null;
    if (reason !== null) {
      const r = await deps.store.eventCancel({ tenantId, id: e.id, expectedVersion: e.version, now, reason });
      if (r.kind === 'ok') changed.push(r.event);
    } else if (templateChanged) {
      const t = after!.spec.template;
      const fresh = occurrenceEvent(after!, at ?? e.fireAt, deps.shardCount);
      const patch = { payload: t.payload, headers: t.headers, destination: t.destination, type: t.type ?? null, requestHash: fresh.requestHash };
      const r = await deps.store.eventUpdate({ tenantId, id: e.id, expectedVersion: e.version, now, patch });
      if (r.kind === 'ok') changed.push(r.event);
    }
  }
  if (changed.length > 0) deps.onEventsChanged(changed);
  return changed.length;
}

/** The earliest occurrence made and not yet fired (state scheduled), or null: where a pause puts the cursor back to. */
async function earliestPending(deps: AppDeps, tenantId: string, id: string): Promise<number | null> {
  const events = await deps.store.scheduleOccurrenceList({ tenantId, scheduleId: id, limit: PENDING_OCCURRENCES_MAX });
  let earliest: number | null = null;
  for (const e of events) {
    const at = e.state === 'scheduled' ? occurrenceAt(id, e.id) : null;
    if (at !== null && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}

/**
 * Makes the occurrences of an active schedule due within the horizon now, so the first one after a
 * create, an edit or a resume fires on time (the materialiser would make them at its next pass).
 * Losing the cursor's compare-and-swap to the materialiser is fine: it made them.
 */
async function makeDueOccurrences(deps: AppDeps, s: ScheduleRecord, now: number): Promise<void> {
  if (s.paused) return;
  const limits = deps.quotas ? occurrenceLimits(deps.quotas) : undefined;
  const r = await advanceSchedule({ store: deps.store, logger: deps.logger, shardCount: deps.shardCount, limits }, s, now, deps.scheduleAheadMs ?? madeAheadMs(MATERIALISER_DEFAULTS));
  if (r.created.length > 0) deps.onEventsChanged(r.created);
}

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

async function createSchedule(deps: AppDeps, request: FastifyRequest<{ Body: ScheduleCreateInput }>) {
  const ctx = inputContext(deps, request);
  const { id: givenId, paused, ...input } = request.body;
  const id = givenId ?? `sch_${newSortableId(ctx.now)}`;
  const spec = await toScheduleSpec(ctx, id, input);
  const nextAt = firstOccurrence(timingOf(spec), ctx.now);
  if (nextAt === null) throw noOccurrence(spec);
  const schedule: ScheduleRecord = {
    tenantId: request.tenantId,
    id,
    shard: shardOf(request.tenantId, id, deps.shardCount),
    version: 1,
    spec,
    paused: paused ?? false,
    nextAt,
    catchUpLeft: spec.catchUpMax,
    firedCount: 0,
    missedCount: 0,
    lastOccurrenceAt: null,
    lastMissed: null,
    createdAt: ctx.now,
    updatedAt: ctx.now,
  };
  const result = await deps.store.scheduleCreate({ schedule, perTenantMax: SCHEDULES_PER_TENANT_MAX });
  if (result.kind === 'limit') {
    throw new BelfryError('quota_exceeded', `the tenant has ${SCHEDULES_PER_TENANT_MAX} schedules, the most it may have; delete one first`, [
      { field: 'id', message: `at most ${SCHEDULES_PER_TENANT_MAX} schedules per tenant`, limit: 'schedulesPerTenantMax' },
    ]);
  }
  if (result.kind === 'exists') {
    const same = canonicalJson(result.schedule.spec.input) === canonicalJson(spec.input) && result.schedule.paused === schedule.paused;
    if (!same) throw new BelfryError('conflict', `a schedule with id "${id}" already exists with a different body`, [{ field: 'id', message: 'already used by a schedule with a different body', version: result.schedule.version }]);
    return { status: 200, schedule: result.schedule };
  }
  await makeDueOccurrences(deps, result.schedule, ctx.now);
  return { status: 201, schedule: (await deps.store.scheduleGet({ tenantId: request.tenantId, id })) ?? result.schedule };
}

async function patchSchedule(deps: AppDeps, request: FastifyRequest<{ Params: ScheduleIdParamsInput; Body: SchedulePatchInput; Headers: { 'if-match'?: string } }>) {
  const { tenantId } = request;
  const { id } = request.params;
  const ifMatch = parseIfMatch(request.headers['if-match']);
  const current = await deps.store.scheduleGet({ tenantId, id });
  if (!current) throw notFound(id);
  const expected = ifMatch ?? current.version;
  const ctx = inputContext(deps, request);
  const body = request.body;
  const onlyPause = Object.keys(body).every((k) => k === 'paused');
  const spec = onlyPause ? current.spec : await toScheduleSpec(ctx, id, mergedInput(current.spec, body));
  // A new timing starts its cursor afresh from now. A pause puts it back to the earliest
  // occurrence made ahead (the pause cancels those), so a resume makes again the ones not yet
  // due and the ones that passed meanwhile follow `missed`. Otherwise the cursor stays.
  const retimed = timingKey(spec) !== timingKey(current.spec);
  const paused = body.paused ?? current.paused;
  let nextAt = retimed ? firstOccurrence(timingOf(spec), ctx.now) : current.nextAt;
  if (retimed && nextAt === null) throw noOccurrence(spec);
  if (paused && !current.paused && !retimed) {
    const earliest = await earliestPending(deps, tenantId, id);
    if (earliest !== null && (nextAt === null || earliest < nextAt)) nextAt = earliest;
  }
  const result = await deps.store.scheduleUpdate({
    tenantId,
    id,
    expectedVersion: expected,
    spec,
    paused,
    ...(nextAt !== current.nextAt || retimed ? { nextAt, catchUpLeft: spec.catchUpMax } : {}),
    now: ctx.now,
  });
  const updated = outcome(result, id, expected);
  await reconcile(deps, tenantId, current, updated, ctx.now);
  await makeDueOccurrences(deps, updated, ctx.now);
  return (await deps.store.scheduleGet({ tenantId, id })) ?? updated;
}

export function scheduleRoutes(app: FastifyInstance, deps: AppDeps): void {
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
      const { status, schedule } = await createSchedule(deps, request);
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
      const page = await deps.store.scheduleList({ tenantId: request.tenantId, afterId: request.query.cursor, limit });
      const now = deps.clock.now();
      // One next occurrence each in a list (a page of 1,000 would otherwise compute 5,000).
      return { schedules: page.map((s) => toScheduleJson(s, now, 1)), nextCursor: page.length === limit ? page[page.length - 1].id : null };
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
      const s = await deps.store.scheduleGet({ tenantId: request.tenantId, id: request.params.id });
      if (!s) throw notFound(request.params.id);
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
        description: 'Affects only occurrences not yet fired: those already made are canceled (pause, or no longer an occurrence) or updated (payload, headers, destination). Honours If-Match (412).',
        security: BEARER_SECURITY,
        params: ScheduleIdParams,
        headers: IfMatchHeaders,
        body: SchedulePatchBody,
        response: { 200: ScheduleJson, ...errorResponses(400, 401, 403, 404, 412, 413, 415) },
      },
    },
    async (request, reply) => {
      const s = await patchSchedule(deps, request);
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
      const { tenantId } = request;
      const expected = parseIfMatch(request.headers['if-match']);
      const deleted = outcome(await deps.store.scheduleDelete({ tenantId, id: request.params.id, expectedVersion: expected }), request.params.id, expected);
      const now = deps.clock.now();
      await reconcile(deps, tenantId, deleted, null, now);
      return toScheduleJson(deleted, now);
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
      const s = await deps.store.scheduleGet({ tenantId: request.tenantId, id: request.params.id });
      if (!s) throw notFound(request.params.id);
      const [result] = await deps.writer.insert([occurrenceEvent(s, deps.clock.now(), deps.shardCount)]);
      if (result.kind === 'created') deps.onEventsChanged([result.event]);
      reply.status(201).header('etag', etag(result.event));
      return toEventJson(result.event);
    },
  );
}
