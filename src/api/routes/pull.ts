/**
 * The pull routes (docs/pull.md): claim, ack, nack, extend. Each parses and checks its request,
 * calls the PullService (pull/service.ts) and answers with what it returns.
 *
 *   POST /v1/destinations/{name}/claim ──▶ PullService.claim (which settles its `ack` first)
 *   POST /v1/events/settle             ──▶ PullService.settleMany (many acks and nacks, one store write)
 *   POST /v1/events/{id}/ack           ──▶ PullService.settle (ack)
 *   POST /v1/events/{id}/nack          ──▶ PullService.settle (nack)
 *   POST /v1/events/{id}/extend        ──▶ PullService.extend
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { invalid } from '../../core/errors.ts';
import { itemError } from '../errors.ts';
import type { EventRecord } from '../../core/event.ts';
import type { PullEnd, PullService, PullSettleItem, PullSettleResult } from '../../pull/index.ts';
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
  PullSettleBody,
  PullSettleResponse,
  type PullAckInput,
  type PullClaimInput,
  type PullClaimOutput,
  type PullExtendInput,
  type PullNackInput,
  type PullSettleInput,
  type PullSettleOutput,
  PULL_SETTLE_ITEMS_MAX,
} from '../schemas/pull.ts';

export const CLAIM_MAX_DEFAULT = 10;
export const VISIBILITY_MS_DEFAULT = 30_000;
export const VISIBILITY_MS_MIN = 1_000;
export const VISIBILITY_MS_MAX = 12 * 3_600_000;
/** A claim waits at most this long for due events (the cap on `wait`). */
export const CLAIM_WAIT_MS_MAX = 20_000;
/** A nack's retryAfter, at most. */
export const RETRY_AFTER_MS_MAX = 7 * 86_400_000;

function visibilityMs(field: string, value: string | number | undefined): number {
  if (value === undefined) return VISIBILITY_MS_DEFAULT;
  const ms = parseDurationField(field, value);
  if (ms < VISIBILITY_MS_MIN || ms > VISIBILITY_MS_MAX) throw invalid(field, 'must be from 1s to 12h');
  return ms;
}

function claimedJson(e: EventRecord, receipt: string) {
  let payload: unknown;
  try {
    payload = JSON.parse(e.payload);
  } catch {
    payload = e.payload;
  }
  return {
    id: e.id,
    type: e.type,
    payload,
    headers: e.headers,
    fireAt: isoTime(e.fireAt),
    attempt: e.attempts,
    group: e.group,
    receipt,
    visibleUntil: isoTime(e.leaseUntil ?? 0),
  };
}

/** A nack's end from its fields; `field` names them in errors (`nack[3].retryAfter`). */
function nackEnd(
  field: string,
  body: { retryAfter?: string | number; discard?: boolean; reason?: string },
): Extract<PullEnd, { action: 'nack' }> {
  const retryAfterMs =
    body.retryAfter === undefined ? undefined : parseDurationField(`${field}retryAfter`, body.retryAfter);
  if (retryAfterMs !== undefined && retryAfterMs > RETRY_AFTER_MS_MAX)
    throw invalid(`${field}retryAfter`, 'must be at most 7d');
  if (retryAfterMs !== undefined && body.discard === true)
    throw invalid(`${field}retryAfter`, 'a discarded event is not retried: give retryAfter or discard, not both');
  return { action: 'nack', discard: body.discard === true, retryAfterMs, reason: body.reason };
}

/** The items of a settle request (or of a claim's `ack`), checked: at most PULL_SETTLE_ITEMS_MAX, each event once. */
function settleItems(acks: PullSettleInput['ack'] = [], nacks: PullSettleInput['nack'] = []): PullSettleItem[] {
  if (acks.length + nacks.length > PULL_SETTLE_ITEMS_MAX)
    throw invalid('ack', `at most ${PULL_SETTLE_ITEMS_MAX} acks and nacks in one request`);
  const items: PullSettleItem[] = [
    ...acks.map((a) => ({ id: a.id, receipt: a.receipt, end: { action: 'ack' as const } })),
    ...nacks.map((n, i) => ({ id: n.id, receipt: n.receipt, end: nackEnd(`nack[${i}].`, n) })),
  ];
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.id)) {
      const where = i < acks.length ? `ack[${i}]` : `nack[${i - acks.length}]`;
      throw invalid(`${where}.id`, `event "${item.id}" is named twice: ack or nack each event once`);
    }
    seen.add(item.id);
  });
  return items;
}

function settledJson(results: PullSettleResult[]): PullSettleOutput['results'] {
  return results.map((r) =>
    'error' in r
      ? { id: r.id, status: 'error', error: itemError(r.error) }
      : { id: r.id, status: 'settled', state: r.event.state as 'succeeded' },
  );
}

/** Aborts when the client goes away, so a parked claim stops (and claims nothing nobody would receive). */
function clientGone(reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}

export function pullRoutes(app: FastifyInstance, pull: PullService): void {
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
      const body = request.body;
      const visibleMs = visibilityMs('visibilityTimeout', body.visibilityTimeout);
      const waitMs = body.wait === undefined ? 0 : parseDurationField('wait', body.wait);
      if (waitMs > CLAIM_WAIT_MS_MAX) throw invalid('wait', `must be at most ${CLAIM_WAIT_MS_MAX / 1_000}s`);
      const { events, receipt, settled } = await pull.claim({
        tenantId: request.tenantId,
        name: request.params.name,
        types: body.types ?? null,
        max: body.max ?? CLAIM_MAX_DEFAULT,
        visibleMs,
        waitMs,
        gone: clientGone(reply),
        acks: body.ack && body.ack.length > 0 ? settleItems(body.ack) : undefined,
      });
      const claimed = events.map((e) => claimedJson(e, receipt));
      return settled ? { events: claimed, settled: settledJson(settled) } : { events: claimed };
    },
  );

  app.post<{ Body: PullSettleInput }>(
    '/v1/events/settle',
    {
      schema: {
        tags,
        summary: 'Ack and nack many claimed events at once',
        description: `Up to ${PULL_SETTLE_ITEMS_MAX} acks and nacks in all, each event once (400 otherwise), each as its own ack or nack would be, in one write. 200 with a result per item (the acks, then the nacks): \`settled\` with the event's state after it, or \`error\` (a \`conflict\` when its receipt no longer holds the claim: nothing changed for that one).`,
        security: BEARER_SECURITY,
        body: PullSettleBody,
        response: { 200: PullSettleResponse, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request): Promise<PullSettleOutput> => {
      const { ack, nack } = request.body;
      if ((ack?.length ?? 0) + (nack?.length ?? 0) === 0) throw invalid('ack', 'give at least one ack or nack');
      const items = settleItems(ack, nack);
      return { results: settledJson(await pull.settleMany(request.tenantId, items)) };
    },
  );

  const eventResponses = { 200: EventJson, ...errorResponses(400, 401, 403, 409, 415) };

  app.post<{ Params: EventIdParamsInput; Body: PullAckInput }>(
    '/v1/events/:id/ack',
    {
      schema: {
        tags,
        summary: 'Ack a claimed event: it succeeded',
        description:
          "200 with the event, now `succeeded`. 409 when the receipt does not hold the current claim (expired, already settled, older, or another tenant's); nothing changes then.",
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullAckBody,
        response: eventResponses,
      },
    },
    async (request) =>
      toEventJson(await pull.settle(request.tenantId, request.params.id, request.body.receipt, { action: 'ack' })),
  );

  app.post<{ Params: EventIdParamsInput; Body: PullNackInput }>(
    '/v1/events/:id/nack',
    {
      schema: {
        tags,
        summary: 'Nack a claimed event: try again later, or discard it',
        description:
          "200 with the event: `awaiting_retry` (after `retryAfter`, or the retry policy's backoff), `archived` once its attempts are spent or its expiry passed, or `discarded` with `discard: true`. 409 as for ack.",
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullNackBody,
        response: eventResponses,
      },
    },
    async (request) => {
      const body = request.body;
      return toEventJson(await pull.settle(request.tenantId, request.params.id, body.receipt, nackEnd('', body)));
    },
  );

  app.post<{ Params: EventIdParamsInput; Body: PullExtendInput }>(
    '/v1/events/:id/extend',
    {
      schema: {
        tags,
        summary: "Extend a claim's visibility timeout",
        description: 'The claim then ends `visibilityTimeout` from now (never earlier than it did). 409 as for ack.',
        security: BEARER_SECURITY,
        params: EventIdParams,
        body: PullExtendBody,
        response: { 200: PullExtendResponse, ...errorResponses(400, 401, 403, 409, 415) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const ms = visibilityMs('visibilityTimeout', request.body.visibilityTimeout);
      const { leaseUntil } = await pull.extend(request.tenantId, id, request.body.receipt, ms);
      return { id, visibleUntil: isoTime(leaseUntil) };
    },
  );
}
