/**
 * The events of Kafka source messages, checked and stored as POST /v1/events checks and stores
 * them: the same JSON Schema (EventCreateBody, compiled with the API's ajv options), the same
 * toNewEvent (event-input.ts), the tenant's limits and pending quota (TenantQuotas), and the same
 * group-commit writer, so an accepted message's events are durable when ingest() resolves.
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
 */
import { Ajv } from 'ajv';
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import { BelfryError } from '../core/errors.ts';
import type { EventRecord } from '../core/event.ts';
import type { SourceRecord } from '../store/sources.ts';
import type { MessageOutcome, SourceMessage, SourceSink } from '../sources/kafka/reader.ts';
import type { EventInsertResult, NewEvent, Store } from '../store/store.ts';
import { validationError, type AjvErrorLike } from './errors.ts';
import { destinationLookup, toNewEvent, type EventInputContext } from './event-input.ts';
import { overLimit } from './limits.ts';
import { EventCreateBody, type EventCreateInput } from './schemas/events.ts';
import type { TenantQuotas } from './tenant-quotas.ts';


export interface SourceIngestDeps {
  store: Pick<Store, 'destinationGet' | 'eventGet'>;
  clock: Clock;
  writer: { insert(events: NewEvent[]): Promise<EventInsertResult[]> };
  quotas: Pick<TenantQuotas, 'limits' | 'checkPending' | 'pendingAdded' | 'takeScheduleRequestsUpTo'>;
  shardCount: number;
  addressPolicy: AddressPolicy;
  /** Messages larger than this are rejected before parsing (the API's bodyBytesMax). */
  messageBytesMax: number;
  /** Told about the events created (the scheduler's timers, metrics). */
  onEventsCreated(events: EventRecord[]): void;
}

/** The options the API's ajv runs with (app.ts): no coercion, no defaults, no removal. */
const ajv = new Ajv({ discriminator: true, removeAdditional: false, useDefaults: false, coerceTypes: false, allErrors: false, allowUnionTypes: true, strict: false });
const validateEvent = ajv.compile(EventCreateBody);

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
    const ctx: EventInputContext = {
      tenantId,
      now: this.deps.clock.now(),
      shardCount: this.deps.shardCount,
      limits,
      addressPolicy: this.deps.addressPolicy,
      destination: destinationLookup(this.deps.store, tenantId),
    };
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
      await this.deps.quotas.checkPending(tenantId, adding, limits.pendingEventsMax);
    } catch (err) {
      if (!(err instanceof BelfryError)) throw err;
      // Over the pending quota: each message is refused; none is written.
      for (const p of parsed) outcomes[p.index] = { kind: 'rejected', reason: reasonOf(err) };
      return outcomes;
    }
    const results = adding > 0 ? await this.deps.writer.insert(parsed.flatMap((p) => p.events)) : [];
    const created: EventRecord[] = [];
    let k = 0;
    for (const p of parsed) {
      const mine = results.slice(k, k + p.events.length);
      k += p.events.length;
      const conflict = mine.find((r) => r.kind === 'conflict');
      const made = mine.filter((r) => r.kind === 'created').map((r) => r.event);
      created.push(...made);
      // The other events of a message with a conflict are stored (one insert); the message is
      // still reported as refused, so its sender sees the conflicting id.
      outcomes[p.index] = conflict
        ? { kind: 'rejected', reason: `conflict: id "${conflict.event.id}" is used by an event with a different body` }
        : { kind: 'accepted', created: made.length };
    }
    if (created.length > 0) {
      this.deps.quotas.pendingAdded(tenantId, created.length);
      this.deps.onEventsCreated(created);
    }
    return outcomes;
  }

  /** The message's events, checked; throws a BelfryError naming what is wrong. */
  private async eventsOf(ctx: EventInputContext, source: string, m: SourceMessage): Promise<NewEvent[]> {
    if (m.value === null || m.value.length === 0) throw new BelfryError('invalid_request', 'the message has no value', [{ message: 'empty' }]);
    if (m.value.length > this.deps.messageBytesMax) {
      throw new BelfryError('payload_too_large', `a message of ${m.value.length} bytes: over the limit bodyBytesMax = ${this.deps.messageBytesMax} bytes`, [{ message: 'too large', limit: 'bodyBytesMax' }]);
    }
    let body: unknown;
    try {
      body = JSON.parse(m.value.toString('utf8'));
    } catch (err) {
      throw new BelfryError('invalid_request', `the message is not JSON: ${(err as Error).message}`, [{ message: 'not JSON' }]);
    }
    const isBatch = typeof body === 'object' && body !== null && !Array.isArray(body) && 'events' in body && Array.isArray((body as { events: unknown }).events);
    const items = isBatch ? (body as { events: unknown[] }).events : [body];
    if (items.length === 0) throw new BelfryError('invalid_request', 'events: is empty', [{ field: 'events', message: 'is empty' }]);
    if (items.length > ctx.limits.batchEventsMax) throw overLimit('batchEventsMax', ctx.limits.batchEventsMax, 'events', `${items.length} events in one message`);
    const events: NewEvent[] = [];
    for (let n = 0; n < items.length; n++) {
      const where = isBatch ? `events/${n}` : 'body';
      const item = items[n];
      if (!validateEvent(item)) throw validationError((validateEvent.errors ?? []) as AjvErrorLike[], where);
      const input = item as EventCreateInput;
      const withId = input.id === undefined ? { ...input, id: sourceEventId(source, m.partition, m.offset, n) } : input;
      try {
        events.push(await toNewEvent(ctx, withId));
      } catch (err) {
        if (err instanceof BelfryError && isBatch) throw new BelfryError(err.code, `events/${n}: ${err.message}`, err.details, err.headers);
        throw err;
      }
    }
    return events;
  }
}
