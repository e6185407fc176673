/**
 * /v1/events: schedule (one or a batch), read, list. Edits, cancels, replays and the trace are
 * in event-actions.ts. A schedule request's events go through the event intake (intake.ts), as a
 * Kafka source's do. Every route runs after Authenticator.requireTenant set request.tenantId.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BelfryError, invalid } from '../../core/errors.ts';
import { parseTimeMs } from '../../core/duration.ts';
import type { EventRecord } from '../../core/event.ts';
import { LIST_EXAMINED_ROWS_MAX } from '../../store/event-list-plan.ts';
import type { NewEvent } from '../../store/store.ts';
import type { AppDeps } from '../deps.ts';
import { itemError, validationError, type AjvErrorLike } from '../errors.ts';
import { destinationLookup, type EventInputContext } from '../event-input.ts';
import { etag, toEventJson } from '../event-json.ts';
import { overLimit } from '../../core/tenant-limits.ts';
import type { EventIntake } from '../intake.ts';
import { LoopSlice } from '../loop-slice.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  EventBatchBody,
  EventBatchResponse,
  EventCreateBody,
  EventIdParams,
  EventJson,
  EventListQuery,
  EventListResponse,
  type EventBatchInput,
  type EventCreateInput,
  type EventIdParamsInput,
  type EventListQueryInput,
} from '../schemas/events.ts';

export const LIST_LIMIT_DEFAULT = 100;

/** What checking an event body needs: the tenant (as authenticated) and its limits. */
export function inputContext(deps: AppDeps, request: FastifyRequest): EventInputContext {
  const { tenantId } = request;
  return {
    tenantId,
    now: deps.clock.now(),
    shardCount: deps.shardCount,
    limits: request.limits,
    addressPolicy: deps.addressPolicy,
    destination: destinationLookup(deps.knownDestinations ?? deps.store, tenantId),
  };
}

export function eventNotFound(id: string): BelfryError {
  return new BelfryError('not_found', `no event with id "${id}"`, [{ field: 'id', message: 'not found' }]);
}

function insertConflict(event: EventRecord): BelfryError {
  return new BelfryError('conflict', `an event with id "${event.id}" already exists with a different body`, [
    {
      field: 'id',
      message: 'already used by an event with a different body',
      state: event.state,
      version: event.version,
    },
  ]);
}

async function createOne(
  deps: AppDeps,
  intake: EventIntake,
  request: FastifyRequest<{ Body: EventCreateInput }>,
  reply: FastifyReply,
) {
  const { tenantId, limits } = request;
  const newEvent = await intake.check(intake.context(tenantId, limits), request.body);
  try {
    await intake.admit(tenantId, 1, limits);
  } catch (err) {
    // A repeat of a stored id adds nothing: it still answers as it did (idempotency), at the limit or not.
    if (!(await deps.store.eventGet({ tenantId, id: newEvent.id }))) throw err;
  }
  const [result] = await intake.write(tenantId, [newEvent]);
  if (result.kind === 'conflict') throw insertConflict(result.event);
  reply.status(result.kind === 'created' ? 201 : 200).header('etag', etag(result.event));
  return toEventJson(result.event);
}

type BatchResult =
  | { status: 'created' | 'existing'; event: ReturnType<typeof toEventJson> }
  | { status: 'created' | 'existing'; id: string; version: number }
  | { status: 'error'; error: { code: string; message: string; details: unknown[] } };

/**
 * Whether a Prefer header (RFC 7240) asks for `return=minimal`: preferences are comma-separated,
 * each `name[=value]` with optional `;`-parameters; names and this value are case-insensitive and
 * the value may be quoted. A preference Belfry does not know is ignored, as the RFC says.
 */
export function prefersMinimalReturn(prefer: string | string[] | undefined): boolean {
  if (prefer === undefined) return false;
  for (const header of Array.isArray(prefer) ? prefer : [prefer]) {
    for (const preference of header.split(',')) {
      const [token] = preference.split(';');
      const eq = token.indexOf('=');
      if (eq < 0 || token.slice(0, eq).trim().toLowerCase() !== 'return') continue;
      if (
        token
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1')
          .toLowerCase() === 'minimal'
      )
        return true;
    }
  }
  return false;
}

function errorResult(err: BelfryError): BatchResult {
  return { status: 'error', error: itemError(err) };
}

/**
 * Validates each item on its own; writes the valid ones in one insert; answers in order.
 *
 * The answer is serialised by JSON.stringify, not by the route's response schema: for these plain
 * objects it writes the same bytes (event-json.test.ts compares them) in ~1.6 µs per event
 * instead of ~2.5 µs, which at 1,000 events per batch was the largest cost after the insert.
 */
async function createBatch(
  intake: EventIntake,
  request: FastifyRequest<{ Body: EventBatchInput }>,
  reply: FastifyReply,
) {
  const items = request.body.events;
  const max = request.limits.batchEventsMax;
  if (items.length > max) throw overLimit('batchEventsMax', max, 'events', `${items.length} events in one batch`);
  const validate = request.compileValidationSchema(EventCreateBody, 'body');
  const ctx = intake.context(request.tenantId, request.limits);
  const results: BatchResult[] = new Array(items.length);
  const pending: { index: number; event: NewEvent }[] = [];
  // A batch of large payloads takes tens of ms to check: let timers run between slices of it.
  const slice = new LoopSlice();
  for (let i = 0; i < items.length; i++) {
    if (slice.due()) await slice.turn();
    if (!validate(items[i])) {
      results[i] = errorResult(validationError((validate.errors ?? []) as AjvErrorLike[], `events/${i}`));
      continue;
    }
    try {
      pending.push({ index: i, event: await intake.check(ctx, items[i] as EventCreateInput) });
    } catch (err) {
      if (!(err instanceof BelfryError)) throw err;
      results[i] = errorResult(err);
    }
  }
  await intake.admit(request.tenantId, pending.length, request.limits);
  const inserted = await intake.write(
    request.tenantId,
    pending.map((p) => p.event),
  );
  const minimal = prefersMinimalReturn(request.headers.prefer);
  for (let k = 0; k < inserted.length; k++) {
    if (slice.due()) await slice.turn();
    const r = inserted[k];
    results[pending[k].index] =
      r.kind === 'conflict'
        ? errorResult(insertConflict(r.event))
        : minimal
          ? { status: r.kind, id: r.event.id, version: r.event.version }
          : { status: r.kind, event: toEventJson(r.event) };
  }
  if (minimal) reply.header('preference-applied', 'return=minimal');
  reply.header('content-type', 'application/json; charset=utf-8');
  // Item by item, in slices: the same bytes as JSON.stringify({ results }).
  const parts: string[] = new Array(results.length);
  for (let i = 0; i < results.length; i++) {
    if (slice.due()) await slice.turn();
    parts[i] = JSON.stringify(results[i]);
  }
  return `{"results":[${parts.join(',')}]}`;
}

function queryTime(field: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseTimeMs(/^\d{1,16}$/.test(value) ? Number(value) : value);
  if (ms === null) throw invalid(field, 'must be an RFC 3339 time or epoch milliseconds');
  return ms;
}

/**
 * `?schedule=`: the schedule's occurrences, newest first, one walk of the events' (tenant, id)
 * key; the cursor is the last id of the previous page.
 */
async function scheduleOccurrencePage(deps: AppDeps, tenantId: string, q: EventListQueryInput) {
  const others = (['state', 'destination', 'group', 'from', 'to'] as const).filter((k) => q[k] !== undefined);
  if (others.length > 0) throw invalid('schedule', `combines with no other filter (got ${others.join(', ')})`);
  if (q.cursor !== undefined && !q.cursor.startsWith(`${q.schedule}@`))
    throw invalid('cursor', 'is not a cursor of this schedule’s occurrences');
  const limit = q.limit === undefined ? LIST_LIMIT_DEFAULT : Number(q.limit);
  const events = await deps.store.scheduleOccurrenceList({
    tenantId,
    scheduleId: q.schedule!,
    beforeId: q.cursor,
    limit,
  });
  return { events: events.map(toEventJson), nextCursor: events.length === limit ? events[events.length - 1].id : null };
}

export function eventRoutes(app: FastifyInstance, deps: AppDeps, intake: EventIntake): void {
  const tags = ['events'];
  app.post<{ Body: EventCreateInput }>(
    '/v1/events',
    {
      config: { schedules: true },
      schema: {
        tags,
        summary: 'Schedule an event',
        description:
          '201 when created; 200 with the stored event when the same id and body were sent before; 409 when the id is used by a different body.',
        security: BEARER_SECURITY,
        body: EventCreateBody,
        response: { 200: EventJson, 201: EventJson, ...errorResponses(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    (request, reply) => createOne(deps, intake, request, reply),
  );

  app.post<{ Body: EventBatchInput }>(
    '/v1/events/batch',
    {
      config: { schedules: true },
      schema: {
        tags,
        summary: 'Schedule many events',
        description:
          'One result per item, in order. Invalid items are not written; the valid ones are written in one transaction. With `Prefer: return=minimal` (RFC 7240) a created or existing item answers its `id` and `version` instead of the whole event, and the response carries `Preference-Applied: return=minimal`.',
        security: BEARER_SECURITY,
        body: EventBatchBody,
        response: { 200: EventBatchResponse, ...errorResponses(400, 401, 403, 413, 415, 429) },
      },
    },
    (request, reply) => createBatch(intake, request, reply),
  );

  app.get<{ Params: EventIdParamsInput }>(
    '/v1/events/:id',
    {
      schema: {
        tags,
        summary: 'Get an event',
        security: BEARER_SECURITY,
        params: EventIdParams,
        response: { 200: EventJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const event = await deps.store.eventGet({ tenantId: request.tenantId, id: request.params.id });
      if (!event) throw eventNotFound(request.params.id);
      reply.header('etag', etag(event));
      return toEventJson(event);
    },
  );

  app.get<{ Querystring: EventListQueryInput }>(
    '/v1/events',
    {
      schema: {
        tags,
        summary: 'List events, newest first',
        description: `Each page walks one index (by group, type, state, destination or creation). Filters that walk does not serve (from, to, a second filter) are checked on the events it reaches, at most ${LIST_EXAMINED_ROWS_MAX} per page: such a page may hold fewer than \`limit\` events, even none, and still carry a \`nextCursor\`. Follow it until it is null; every match comes back once.`,
        security: BEARER_SECURITY,
        querystring: EventListQuery,
        response: { 200: EventListResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const q = request.query;
      if (q.schedule !== undefined) return scheduleOccurrencePage(deps, request.tenantId, q);
      const page = await deps.store.eventList({
        tenantId: request.tenantId,
        state: q.state,
        destination: q.destination,
        group: q.group,
        type: q.type,
        fromMs: queryTime('from', q.from),
        toMs: queryTime('to', q.to),
        limit: q.limit === undefined ? LIST_LIMIT_DEFAULT : Number(q.limit),
        cursor: q.cursor,
      });
      return { events: page.events.map(toEventJson), nextCursor: page.nextCursor };
    },
  );
}
