/**
 * /v1/events/{id} changes: edit (PATCH), cancel (DELETE), replay, and the trace.
 *
 * Every change is conditional in the store (on state, and on version when If-Match is given),
 * so a change that loses a race with the scheduler answers with a definite outcome: the new
 * event, 409 with the state the event reached, or 412 when its version moved.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BelfryError, invalid } from '../../core/errors.ts';
import { EDITABLE_STATES, type EventRecord } from '../../core/event.ts';
import { EVENT_CHANGES_MAX, type EventMutateResult } from '../../store/store.ts';
import { transitionPage } from '../../store/transition-page.ts';
import type { AppDeps } from '../deps.ts';
import { toEventPatch } from '../event-input.ts';
import { etag, toEventJson, toTransitionJson } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses, IfMatchHeaders } from '../schemas/common.ts';
import {
  EventIdParams,
  EventJson,
  EventPatchBody,
  TransitionListQuery,
  TransitionListResponse,
  type EventIdParamsInput,
  type TransitionListQueryInput,
  type EventPatchInput,
} from '../schemas/events.ts';
import type { TenantQuotas } from '../tenant-quotas.ts';
import { eventNotFound, inputContext } from './events.ts';

/** Transitions in one page of a trace, and the default page (a longer trace has a nextCursor). */
export const TRANSITIONS_MAX = 1_000;
/** PATCH re-reads and retries this many times when the event changes between its read and its write. */
const PATCH_RACE_RETRIES_MAX = 3;

/** If-Match as a version: `"3"`, `3` or `W/"3"`; `*` or absent means any version. */
export function parseIfMatch(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '*') return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(value);
  if (!m) throw invalid('If-Match', 'must be the event version from its ETag, such as "3"');
  return Number(m[1]);
}

function versionMismatch(event: EventRecord, expected: number): BelfryError {
  return new BelfryError(
    'precondition_failed',
    `event is at version ${event.version}, not ${expected} as If-Match requires`,
    [{ field: 'If-Match', message: 'does not match the current version', version: event.version }],
  );
}

function wrongState(event: EventRecord, allowed: string): BelfryError {
  const already = event.state === 'executing' ? 'is executing' : `is already ${event.state}`;
  return new BelfryError('conflict', `event ${already}; ${allowed}`, [
    { state: event.state, message: `event ${already}` },
  ]);
}

/** The event a mutation produced, or the error that says why there is none. */
function outcome(result: EventMutateResult, id: string, expected: number | undefined, allowed: string): EventRecord {
  switch (result.kind) {
    case 'ok':
      return result.event;
    case 'not_found':
      throw eventNotFound(id);
    case 'version_mismatch':
      throw versionMismatch(result.event, expected ?? result.event.version);
    case 'wrong_state':
      throw wrongState(result.event, allowed);
    case 'changes_exhausted':
      throw new BelfryError(
        'too_many_changes',
        `event has made ${EVENT_CHANGES_MAX} changes, the most one event's trace holds; cancel it and schedule a new one`,
        [{ message: `at most ${EVENT_CHANGES_MAX} changes per event`, version: result.event.version }],
      );
  }
}

const PATCH_ALLOWED = 'only a scheduled event can be changed';
const CANCEL_ALLOWED = 'only a scheduled or awaiting_retry event can be canceled';
const REPLAY_ALLOWED = 'only an archived or discarded event can be replayed';

async function patchEvent(
  deps: AppDeps,
  request: FastifyRequest,
  id: string,
  body: EventPatchInput,
  ifMatch: number | undefined,
): Promise<EventRecord> {
  const { tenantId } = request;
  for (let attempt = 0; ; attempt++) {
    const current = await deps.store.eventGet({ tenantId, id });
    if (!current) throw eventNotFound(id);
    if (ifMatch !== undefined && current.version !== ifMatch) throw versionMismatch(current, ifMatch);
    if (!EDITABLE_STATES.includes(current.state)) throw wrongState(current, PATCH_ALLOWED);
    const ctx = inputContext(deps, request);
    const patch = await toEventPatch(ctx, current, body);
    // The patch was computed from `current` (expiry window, request hash): apply it to that version only.
    const result = await deps.store.eventUpdate({
      tenantId,
      id,
      expectedVersion: current.version,
      now: ctx.now,
      patch,
    });
    if (result.kind === 'version_mismatch' && ifMatch === undefined && attempt < PATCH_RACE_RETRIES_MAX) continue;
    return outcome(result, id, ifMatch ?? current.version, PATCH_ALLOWED);
  }
}

export function eventActionRoutes(app: FastifyInstance, deps: AppDeps, quotas: TenantQuotas): void {
  const tags = ['events'];
  app.patch<{ Params: EventIdParamsInput; Body: EventPatchInput; Headers: { 'if-match'?: string } }>(
    '/v1/events/:id',
    {
      config: { schedules: true },
      schema: {
        tags,
        summary: 'Change a scheduled event',
        description:
          'fireAt or delay, payload, headers, destination. 409 once the event left `scheduled`; 412 when If-Match names another version.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        headers: IfMatchHeaders,
        body: EventPatchBody,
        response: { 200: EventJson, ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const ifMatch = parseIfMatch(request.headers['if-match']);
      const event = await patchEvent(deps, request, request.params.id, request.body, ifMatch);
      deps.events.changed([event]);
      reply.header('etag', etag(event));
      return toEventJson(event);
    },
  );

  app.delete<{ Params: EventIdParamsInput; Headers: { 'if-match'?: string } }>(
    '/v1/events/:id',
    {
      schema: {
        tags,
        summary: 'Cancel an event',
        description: '200 with the event in state `canceled`, or 409 naming the state it had already reached.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        headers: IfMatchHeaders,
        response: { 200: EventJson, ...errorResponses(400, 401, 403, 404, 409, 412) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const expectedVersion = parseIfMatch(request.headers['if-match']);
      const result = await deps.store.eventCancel({
        tenantId: request.tenantId,
        id,
        expectedVersion,
        now: deps.clock.now(),
      });
      const event = outcome(result, id, expectedVersion, CANCEL_ALLOWED);
      deps.events.changed([event]);
      reply.header('etag', etag(event));
      return toEventJson(event);
    },
  );

  app.post<{ Params: EventIdParamsInput; Headers: { 'if-match'?: string } }>(
    '/v1/events/:id/replay',
    {
      config: { schedules: true },
      schema: {
        tags,
        summary: 'Deliver an archived or discarded event again',
        security: BEARER_SECURITY,
        params: EventIdParams,
        headers: IfMatchHeaders,
        response: { 200: EventJson, ...errorResponses(400, 401, 403, 404, 409, 412, 429) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const expectedVersion = parseIfMatch(request.headers['if-match']);
      await quotas.checkPending(request.tenantId, 1, request.limits.pendingEventsMax);
      const result = await deps.store.eventReplay({
        tenantId: request.tenantId,
        id,
        expectedVersion,
        now: deps.clock.now(),
      });
      const event = outcome(result, id, expectedVersion, REPLAY_ALLOWED);
      quotas.pendingAdded(request.tenantId, 1);
      deps.events.changed([event]);
      reply.header('etag', etag(event));
      return toEventJson(event);
    },
  );

  app.get<{ Params: EventIdParamsInput; Querystring: TransitionListQueryInput }>(
    '/v1/events/:id/transitions',
    {
      schema: {
        tags,
        summary: "The event's execution trace, oldest first, cursor-paged",
        description: `Up to \`limit\` (default ${TRANSITIONS_MAX}) transitions; \`nextCursor\` is set when the trace goes on.`,
        security: BEARER_SECURITY,
        params: EventIdParams,
        querystring: TransitionListQuery,
        response: { 200: TransitionListResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const event = await deps.store.eventGet({ tenantId: request.tenantId, id });
      if (!event) throw eventNotFound(id);
      const limit = request.query.limit === undefined ? TRANSITIONS_MAX : Number(request.query.limit);
      const page = await transitionPage(deps.store, {
        tenantId: request.tenantId,
        eventId: id,
        limit,
        cursor: request.query.cursor,
      });
      return { transitions: page.transitions.map(toTransitionJson), nextCursor: page.nextCursor };
    },
  );
}
