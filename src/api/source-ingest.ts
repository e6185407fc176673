/**
 * The events of Kafka source messages, checked and stored as POST /v1/events checks and stores
 * them: the same JSON Schema (EventCreateBody, compiled with the API's ajv options), then the
 * event intake (intake.ts: toNewEvent, the tenant's pending quota, the group-commit writer and
 * the "events created" notification), so an accepted message's events are durable when ingest()
 * resolves.
 *
 * A message holds one event body or `{"events": [...]}` (at most the tenant's batchEventsMax).
 * A message is accepted or rejected whole: one invalid event rejects it, and none of its events
 * is written. An event without an id gets `<source>:<partition>:<offset>:<n>` (n counts from 0
 * within the message), so a message read again inserts nothing new (the insert is idempotent by
 * id and body). A message whose id is already used by a different body is rejected.
 *
 * The tenant's scheduleRequestsPerSecond: each message is one scheduling request, taken from the
 * bucket the API's requests take from (admit()); the reader waits for it instead of refusing, so a
 * source faster than its tenant's rate is slowed, never dropped.
 *
 * A message is bounded and parsed as a body of POST /v1/events/batch is (body-limits.ts,
 * json-slices.ts): one larger than the batch route's limit for its tenant (batchEventsMax × 4 KiB
 * + payloadBytesMax, within the node's bodyBytesMax) is refused before it is decoded; one longer
 * than NATIVE_PARSE_CHARS_MAX is parsed in slices, its events counted as they are read, and its
 * events checked in slices, so no message within the bound holds the event loop (and every timer)
 * for long. Before, a message of up to bodyBytesMax (64 MiB) was one JSON.parse.
 */
import { Ajv } from 'ajv';
import secureJson from 'secure-json-parse';
import { BelfryError } from '../core/errors.ts';
import type { SourceRecord } from '../store/sources.ts';
import type { MessageOutcome, SourceMessage, SourceSink } from '../sources/index.ts';
import type { NewEvent } from '../store/store.ts';
import { BATCH_EVENT_BYTES, bodyBytesMaxOf, SMALL_BODY_BYTES_MAX } from './body-limits.ts';
import { validationError, type AjvErrorLike } from './errors.ts';
import type { EventInputContext } from './event-input.ts';
import type { EventIntake } from './intake.ts';
import { JsonBodyError, NATIVE_PARSE_CHARS_MAX, parseJsonSliced, type PieceParser } from './json-slices.ts';
import { overLimit } from '../core/tenant-limits.ts';
import { LoopSlice } from './loop-slice.ts';
import { EventCreateBody, type EventCreateInput } from './schemas/events.ts';
import type { TenantQuotas } from './tenant-quotas.ts';

export interface SourceIngestDeps {
  /** The event intake the API's event routes use too (the node's, with the plain store's destinations). */
  intake: EventIntake;
  quotas: Pick<TenantQuotas, 'limits' | 'takeScheduleRequestsUpTo'>;
  /**
   * The node's bound on any body (the API's bodyBytesMax): a message is bounded by the batch
   * route's limit for its tenant, and never more than this.
   */
  messageBytesMax: number;
}

/** The options the API's ajv runs with (app.ts): no coercion, no defaults, no removal. */
const ajv = new Ajv({
  discriminator: true,
  removeAdditional: false,
  useDefaults: false,
  coerceTypes: false,
  allErrors: false,
  allowUnionTypes: true,
  strict: false,
});
const validateEvent = ajv.compile(EventCreateBody);
/** The parser the API's bodies go through (Fastify's): `__proto__` keys and `constructor.prototype` refused. */
const parsePiece: PieceParser = (text) =>
  secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' });

/** The id of the n-th event of a message that gave none. */
export function sourceEventId(source: string, partition: number, offset: string, n: number): string {
  return `${source}:${partition}:${offset}:${n}`;
}

/** A message's reason of refusal as one line: the field and what is wrong. */
function reasonOf(err: BelfryError): string {
  const d = err.details[0];
  const limit = typeof d?.limit === 'string' ? ` (limit ${d.limit})` : '';
  return `${err.code}: ${err.message}${limit}`;
}

export class SourceIngest implements SourceSink {
  constructor(private readonly deps: SourceIngestDeps) {}

  /** How many of `want` messages may be taken now under the tenant's scheduleRequestsPerSecond; when none, how long to wait. */
  async admit(source: SourceRecord, want: number): Promise<{ granted: number; waitMs: number }> {
    const limits = await this.deps.quotas.limits(source.tenantId);
    return this.deps.quotas.takeScheduleRequestsUpTo(source.tenantId, limits.scheduleRequestsPerSecond, want);
  }

  /** One outcome per message, in order; the accepted ones' events are stored when it resolves. Throws when the store fails (nothing is then to be committed). */
  async ingest(source: SourceRecord, messages: SourceMessage[]): Promise<MessageOutcome[]> {
    const { tenantId } = source;
    const limits = await this.deps.quotas.limits(tenantId);
    const { intake } = this.deps;
    const ctx = intake.context(tenantId, limits);
    const outcomes: MessageOutcome[] = new Array(messages.length);
    const parsed: { index: number; events: NewEvent[] }[] = [];
    for (let i = 0; i < messages.length; i++) {
      try {
        parsed.push({ index: i, events: await this.eventsOf(ctx, source.name, messages[i]) });
      } catch (err) {
        if (!(err instanceof BelfryError)) throw err;
        outcomes[i] = { kind: 'rejected', reason: reasonOf(err) };
      }
    }
    const adding = parsed.reduce((n, p) => n + p.events.length, 0);
    try {
      await intake.admit(tenantId, adding, limits);
    } catch (err) {
      if (!(err instanceof BelfryError)) throw err;
      // Over the pending quota: each message is refused; none is written.
      for (const p of parsed) outcomes[p.index] = { kind: 'rejected', reason: reasonOf(err) };
      return outcomes;
    }
    // The events created are told of by the intake (pending estimate, counter, the node).
    const results = await intake.write(
      tenantId,
      parsed.flatMap((p) => p.events),
    );
    let k = 0;
    for (const p of parsed) {
      const mine = results.slice(k, k + p.events.length);
      k += p.events.length;
      const conflict = mine.find((r) => r.kind === 'conflict');
      const made = mine.filter((r) => r.kind === 'created').length;
      // The other events of a message with a conflict are stored (one insert); the message is
      // still reported as refused, so its sender sees the conflicting id.
      outcomes[p.index] = conflict
        ? { kind: 'rejected', reason: `conflict: id "${conflict.event.id}" is used by an event with a different body` }
        : { kind: 'accepted', created: made };
    }
    return outcomes;
  }

  /** The message's events, checked; throws a BelfryError naming what is wrong. */
  private async eventsOf(ctx: EventInputContext, source: string, m: SourceMessage): Promise<NewEvent[]> {
    if (m.value === null || m.value.length === 0)
      throw new BelfryError('invalid_request', 'the message has no value', [{ message: 'empty' }]);
    this.checkSize(ctx, m.value.length);
    const batchMax = ctx.limits.batchEventsMax;
    const text = m.value.toString('utf8');
    let body: unknown;
    try {
      // A short text at once, as the API does: its error says where the JSON is wrong.
      body =
        text.length <= NATIVE_PARSE_CHARS_MAX
          ? parsePiece(text)
          : await parseJsonSliced(text, parsePiece, {
              topArrayMax: {
                key: 'events',
                max: batchMax,
                over: () =>
                  overLimit('batchEventsMax', batchMax, 'events', `more than ${batchMax} events in one message`),
              },
            });
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      const why = err instanceof JsonBodyError && err.message === 'not valid JSON' ? '' : `: ${err.message}`;
      throw new BelfryError('invalid_request', `the message is not JSON${why}`, [{ message: 'not JSON' }]);
    }
    const isBatch =
      typeof body === 'object' &&
      body !== null &&
      !Array.isArray(body) &&
      'events' in body &&
      Array.isArray((body as { events: unknown }).events);
    const items = isBatch ? (body as { events: unknown[] }).events : [body];
    if (items.length === 0)
      throw new BelfryError('invalid_request', 'events: is empty', [{ field: 'events', message: 'is empty' }]);
    if (items.length > batchMax)
      throw overLimit('batchEventsMax', batchMax, 'events', `${items.length} events in one message`);
    const events: NewEvent[] = [];
    // A message of large payloads takes tens of ms to check, as a batch does: in slices.
    const slice = new LoopSlice();
    for (let n = 0; n < items.length; n++) {
      if (slice.due()) await slice.turn();
      const where = isBatch ? `events/${n}` : 'body';
      const item = items[n];
      if (!validateEvent(item)) throw validationError((validateEvent.errors ?? []) as AjvErrorLike[], where);
      const input = item as EventCreateInput;
      const withId = input.id === undefined ? { ...input, id: sourceEventId(source, m.partition, m.offset, n) } : input;
      try {
        events.push(await this.deps.intake.check(ctx, withId));
      } catch (err) {
        if (err instanceof BelfryError && isBatch)
          throw new BelfryError(err.code, `events/${n}: ${err.message}`, err.details, err.headers);
        throw err;
      }
    }
    return events;
  }

  /** Refuses a message larger than a batch body of its tenant may be (payload_too_large, naming the limit). */
  private checkSize(ctx: EventInputContext, bytes: number): void {
    const nodeMax = this.deps.messageBytesMax;
    const limitBytes = bodyBytesMaxOf('batch', ctx.limits, nodeMax);
    if (bytes <= limitBytes) return;
    const byNode = limitBytes === nodeMax;
    const why = byNode
      ? `the node's bodyBytesMax`
      : `the batch route's: batchEventsMax × ${BATCH_EVENT_BYTES} + payloadBytesMax, at least ${SMALL_BODY_BYTES_MAX}`;
    throw new BelfryError(
      'payload_too_large',
      `a message of ${bytes} bytes: over the limit of ${limitBytes} bytes for a message (${why}); split it`,
      [
        byNode
          ? { message: `at most ${limitBytes} bytes`, limit: 'bodyBytesMax', limitBytes }
          : { message: `at most ${limitBytes} bytes`, limitBytes },
      ],
    );
  }
}
