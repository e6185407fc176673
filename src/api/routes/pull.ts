/**
 * Pull delivery (docs/pull.md): a consumer claims due events of a pull destination, then acks,
 * nacks or extends each under the claim's receipt.
 *
 *   POST /v1/destinations/{name}/claim ──▶ scheduled/awaiting_retry → executing (lease = visibility timeout, receipt)
 *   POST /v1/events/{id}/ack           ──▶ succeeded
 *   POST /v1/events/{id}/nack          ──▶ awaiting_retry | discarded | archived (retry policy)
 *   POST /v1/events/{id}/extend        ──▶ the lease moves on
 *   (no answer in time: the expirer, dispatch/pull-expirer.ts, ends the claim as a failed attempt)
 *
 * Every change is a conditional write in the store (on the receipt), so any node answers any of
 * them, two claims never hand out one event, and a stale or foreign receipt gets 409 and changes
 * nothing. A claim that finds nothing due waits up to `wait` (PullWaiters: bounded per tenant and
 * node) and reads one bounded index page per look.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BelfryError, invalid } from '../../core/errors.ts';
import { isPull, type DestinationConfig } from '../../core/destination.ts';
import type { EventRecord } from '../../core/event.ts';
import { queueOf } from '../../core/queue.ts';
import { decidePull, pullPolicy, type PullEnd } from '../../dispatch/pull.ts';
import type { PullWaiters } from '../../dispatch/pull-waiters.ts';
import type { AppDeps } from '../deps.ts';
import { parseDurationField } from '../event-input.ts';
import { isoTime, toEventJson } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { DestinationNameParams, type DestinationNameParamsInput } from '../schemas/destinations.ts';
import { EventIdParams, EventJson, type EventIdParamsInput } from '../schemas/events.ts';
import {
  PullAckBody,
  PullClaimBody,
  PullClaimResponse,
  PullExtendBody,
  PullExtendResponse,
  PullNackBody,
  type PullAckInput,
  type PullClaimInput,
  type PullClaimOutput,
  type PullExtendInput,
  type PullNackInput,
} from '../schemas/pull.ts';

export const CLAIM_MAX_DEFAULT = 10;
export const VISIBILITY_MS_DEFAULT = 30_000;
export const VISIBILITY_MS_MIN = 1_000;
export const VISIBILITY_MS_MAX = 12 * 3_600_000;
/** A claim waits at most this long for due events (the cap on `wait`). */
export const CLAIM_WAIT_MS_MAX = 20_000;
/** A nack's retryAfter, at most. */
export const RETRY_AFTER_MS_MAX = 7 * 86_400_000;

function receiptConflict(id: string): BelfryError {
  return new BelfryError('conflict', `the receipt does not hold a current claim of event "${id}" (its visibility timeout ended, it was already acked or nacked, it is from an older claim, or the event is not this tenant's)`, [
    { field: 'receipt', message: 'not the current claim' },
  ]);
}

function visibilityMs(field: string, value: string | number | undefined): number {
  if (value === undefined) return VISIBILITY_MS_DEFAULT;
  const ms = parseDurationField(field, value);
  if (ms < VISIBILITY_MS_MIN || ms > VISIBILITY_MS_MAX) throw invalid(field, 'must be from 1s to 12h');
  return ms;
}

/** The pull destination `name`, or a 404 / 409 that says why there is none. */
async function pullDestination(deps: AppDeps, tenantId: string, name: string): Promise<DestinationConfig> {
  const d = await (deps.knownDestinations ?? deps.store).destinationGet({ tenantId, name });
  if (!d) throw new BelfryError('not_found', `no destination named "${name}"`, [{ field: 'name', message: 'not found' }]);
  if (!isPull(d.config)) {
    throw new BelfryError('conflict', `destination "${name}" is a ${d.config.kind} destination: its events are pushed; only a pull destination ({"kind": "pull"}) can be claimed from`, [{ field: 'name', message: 'not a pull destination' }]);
  }
  return d.config;
}

function claimedJson(e: EventRecord, receipt: string) {
  let payload: unknown;
  try {
    payload = JSON.parse(e.payload);
  } catch {
    payload = e.payload;
  }
  return {
    id: e.id, type: e.type, payload, headers: e.headers, fireAt: isoTime(e.fireAt), attempt: e.attempts, group: e.group, receipt,
    visibleUntil: isoTime(e.leaseUntil ?? 0),
  };
}

/** Aborts when the client goes away, so a parked claim stops (and claims nothing nobody would receive). */
function clientGone(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}

export interface PullRouteDeps {
  waiters: PullWaiters;
  /** Told after each ack, nack or extend that applied (the group's next event may go; waiters wake). */
  onSettled(events: EventRecord[]): void;
}

export function pullRoutes(app: FastifyInstance, deps: AppDeps, pull: PullRouteDeps): void {
  const tags = ['pull'];
  app.post<{ Params: DestinationNameParamsInput; Body: PullClaimInput }>(
    '/v1/destinations/:name/claim',
    {
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary: 'Claim due events of a pull destination',
        description: `Up to \`max\` (default ${CLAIM_MAX_DEFAULT}, at most 100) due events, oldest first, each its group's next; each stays claimed for \`visibilityTimeout\` (default 30s, 1s to 12h). With \`wait\` (at most 20s) the claim waits for events to fall due when none is. 429 when too many claims of the tenant (or node) are waiting.`,
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        body: PullClaimBody,
        response: { 200: PullClaimResponse, ...errorResponses(400, 401, 403, 404, 409, 415, 429) },
      },
    },
    async (request, reply): Promise<PullClaimOutput> => {
      const { tenantId } = request;
      const { name } = request.params;
      const body = request.body;
      const max = body.max ?? CLAIM_MAX_DEFAULT;
      const visibleMs = visibilityMs('visibilityTimeout', body.visibilityTimeout);
      const waitMs = body.wait === undefined ? 0 : parseDurationField('wait', body.wait);
      if (waitMs > CLAIM_WAIT_MS_MAX) throw invalid('wait', `must be at most ${CLAIM_WAIT_MS_MAX / 1_000}s`);
      await pullDestination(deps, tenantId, name);
      const queue = queueOf({ name });
      const types = body.types ?? null;
      // Parked for the whole long poll (not only while asleep), so a write between two looks wakes it.
      const watch = waitMs > 0 ? pull.waiters.enter(tenantId, queue) : null;
      deps.metrics.pullParked.set(pull.waiters.parkedCount);
      const gone = clientGone(reply);
      try {
        const deadlineMs = deps.clock.monotonicMs() + waitMs;
        for (;;) {
          // A client that went away gets nothing claimed for it (its events would wait out the timeout).
          if (gone.aborted) return { events: [] };
          const now = deps.clock.now();
          const receipt = randomBytes(16).toString('base64url');
          const leaseUntil = (deps.leaseClock ?? deps.clock).now() + visibleMs;
          const events = await deps.store.eventPullClaim({ tenantId, queue, types, max, now, leaseUntil, receipt });
          const leftMs = deadlineMs - deps.clock.monotonicMs();
          if (events.length > 0 || watch === null || leftMs <= 0 || gone.aborted || pull.waiters.isClosed) {
            deps.metrics.pullClaimed.inc(events.length);
            return { events: events.map((e) => claimedJson(e, receipt)) };
          }
          // Sleep until the queue's next event is due (when it is not already: then what is due is
          // another type's or a group's later event), a wake-up, or the fallback poll.
          const next = await deps.store.eventPullNextDue({ tenantId, queue });
          const untilNextMs = next === null || next <= now ? Infinity : next - now;
          await watch.sleep(Math.min(untilNextMs, leftMs), gone);
        }
      } finally {
        watch?.release();
        deps.metrics.pullParked.set(pull.waiters.parkedCount);
      }
    },
  );

  /** Ends a claim (ack or nack) as its retry policy says; 409 unless `receipt` holds it. */
  async function settle(tenantId: string, id: string, receipt: string, end: PullEnd): Promise<EventRecord> {
    const event = await deps.store.eventGet({ tenantId, id });
    if (!event || event.state !== 'executing') throw receiptConflict(id);
    const name = 'name' in event.destination ? event.destination.name : null;
    const destination = name === null ? null : await (deps.knownDestinations ?? deps.store).destinationGet({ tenantId, name });
    const params = decidePull({ event, receipt, end, policy: pullPolicy(event, destination?.config ?? null), now: deps.clock.now(), random: Math.random });
    const after = await deps.store.eventPullSettle(params);
    if (!after) throw receiptConflict(id);
    deps.metrics.pullEnded.inc({ action: end.action, state: after.state });
    pull.onSettled([after]);
    return after;
  }

  const eventResponses = { 200: EventJson, ...errorResponses(400, 401, 403, 409, 415) };

  app.post<{ Params: EventIdParamsInput; Body: PullAckInput }>(
    '/v1/events/:id/ack',
    {
      schema: {
        tags,
        summary: 'Ack a claimed event: it succeeded',
        description: '200 with the event, now `succeeded`. 409 when the receipt does not hold the current claim (expired, already settled, older, or another tenant\'s); nothing changes then.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullAckBody,
        response: eventResponses,
      },
    },
    async (request) => toEventJson(await settle(request.tenantId, request.params.id, request.body.receipt, { action: 'ack' })),
  );

  app.post<{ Params: EventIdParamsInput; Body: PullNackInput }>(
    '/v1/events/:id/nack',
    {
      schema: {
        tags,
        summary: 'Nack a claimed event: try again later, or discard it',
        description: '200 with the event: `awaiting_retry` (after `retryAfter`, or the retry policy\'s backoff), `archived` once its attempts are spent or its expiry passed, or `discarded` with `discard: true`. 409 as for ack.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullNackBody,
        response: eventResponses,
      },
    },
    async (request) => {
      const body = request.body;
      const retryAfterMs = body.retryAfter === undefined ? undefined : parseDurationField('retryAfter', body.retryAfter);
      if (retryAfterMs !== undefined && retryAfterMs > RETRY_AFTER_MS_MAX) throw invalid('retryAfter', 'must be at most 7d');
      if (retryAfterMs !== undefined && body.discard === true) throw invalid('retryAfter', 'a discarded event is not retried: give retryAfter or discard, not both');
      const end: PullEnd = { action: 'nack', discard: body.discard === true, retryAfterMs, reason: body.reason };
      return toEventJson(await settle(request.tenantId, request.params.id, body.receipt, end));
    },
  );

  app.post<{ Params: EventIdParamsInput; Body: PullExtendInput }>(
    '/v1/events/:id/extend',
    {
      schema: {
        tags,
        summary: 'Extend a claim\'s visibility timeout',
        description: 'The claim then ends `visibilityTimeout` from now (never earlier than it did). 409 as for ack.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullExtendBody,
        response: { 200: PullExtendResponse, ...errorResponses(400, 401, 403, 409, 415) },
      },
    },
    async (request) => {
      const { tenantId } = request;
      const { id } = request.params;
      const ms = visibilityMs('visibilityTimeout', request.body.visibilityTimeout);
      const now = deps.clock.now();
      const leaseUntil = (deps.leaseClock ?? deps.clock).now() + ms;
      const after = await deps.store.eventPullExtend({ tenantId, id, receipt: request.body.receipt, now, leaseUntil });
      if (!after) throw receiptConflict(id);
      return { id, visibleUntil: isoTime(after.leaseUntil ?? leaseUntil) };
    },
  );
}
