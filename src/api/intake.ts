/**
 * The event intake: the one way a scheduling request's events come in, whether from POST
 * /v1/events (one or a batch) or from a Kafka source's messages (source-ingest.ts).
 *
 *   context(tenantId, limits) ──▶ check(ctx, body) (toNewEvent: every rule of event-input.ts)
 *     ──▶ admit(tenantId, n, limits) (the tenant's pendingEventsMax, TenantQuotas.checkPending)
 *     ──▶ write(tenantId, events) (the group-commit writer; then, for the events created: the
 *         pending estimate, the events-scheduled counter and the node's "events created")
 *
 * Each caller keeps its own way of answering: a route throws or answers per item, a source rejects
 * a message; the steps and their errors are the same.
 */
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import type { TenantLimits } from '../core/tenant-limits.ts';
import type { EventInsertResult, NewEvent, Store } from '../store/store.ts';
import { destinationLookup, type EventInputContext, toNewEvent } from './event-input.ts';
import type { EventCreateInput } from './schemas/events.ts';
import type { TenantQuotas } from './tenant-quotas.ts';
import type { EventSink } from '../core/event-sink.ts';

/** What the intake needs; read at each call (a test may swap the API's writer). */
export interface EventIntakeDeps {
  clock: Clock;
  shardCount: number;
  /** The private-address guard applied to inline destination URLs. */
  addressPolicy: AddressPolicy;
  /** Where destinations are read (the API's cache of them, or the store). */
  destinations: Pick<Store, 'destinationGet'>;
  quotas: Pick<TenantQuotas, 'checkPending' | 'pendingAdded'>;
  /** Inserts through group commit. */
  writer: { insert(events: NewEvent[]): Promise<EventInsertResult[]> };
  metrics: Pick<Metrics, 'eventsScheduled'>;
  /** Told about the events created (the scheduler's timers, parked pull claims, the cluster's wake-ups). */
  events: Pick<EventSink, 'changed'>;
}

export class EventIntake {
  constructor(private readonly deps: EventIntakeDeps) {}

  /** What checking the tenant's event bodies needs, now. */
  context(tenantId: string, limits: TenantLimits): EventInputContext {
    return {
      tenantId,
      now: this.deps.clock.now(),
      shardCount: this.deps.shardCount,
      limits,
      addressPolicy: this.deps.addressPolicy,
      destination: destinationLookup(this.deps.destinations, tenantId),
    };
  }

  /** One event body (valid against EventCreateBody) as the event to insert; throws a BelfryError naming what is wrong. */
  check(ctx: EventInputContext, body: EventCreateInput): Promise<NewEvent> {
    return toNewEvent(ctx, body);
  }

  /** Throws quota_exceeded when `adding` more pending events would take the tenant past its pendingEventsMax. */
  admit(tenantId: string, adding: number, limits: Pick<TenantLimits, 'pendingEventsMax'>): Promise<void> {
    return this.deps.quotas.checkPending(tenantId, adding, limits.pendingEventsMax);
  }

  /**
   * Inserts `events` (none: no write) and tells of those created: the tenant's pending estimate,
   * the events-scheduled counter, the node. One result per event, in order.
   */
  async write(tenantId: string, events: NewEvent[]): Promise<EventInsertResult[]> {
    if (events.length === 0) return [];
    const results = await this.deps.writer.insert(events);
    const created = results.filter((r) => r.kind === 'created').map((r) => r.event);
    if (created.length > 0) {
      this.deps.quotas.pendingAdded(tenantId, created.length);
      this.deps.metrics.eventsScheduled.inc(created.length);
      this.deps.events.changed(created);
    }
    return results;
  }
}
