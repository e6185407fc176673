/** What the API needs from the rest of the node: passed to createApp(), so tests build it in-process. */
import type { Logger } from 'pino';
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import type { Metrics } from '../node/metrics.ts';
import type { EventInsertResult, NewEvent, Store } from '../store/store.ts';

/** Limits on what one request may carry. */
export interface ApiLimits {
  payloadBytesMax: number;
  batchEventsMax: number;
  idLengthMax: number;
  /** Request bodies larger than this are refused with 413 before parsing. */
  bodyBytesMax: number;
}

export const DEFAULT_API_LIMITS: ApiLimits = {
  payloadBytesMax: 256 * 1024,
  batchEventsMax: 1_000,
  idLengthMax: 200,
  bodyBytesMax: 64 * 1024 * 1024,
};

export interface AppDeps {
  store: Store;
  clock: Clock;
  /** Inserts through group commit. */
  writer: { insert(events: NewEvent[]): Promise<EventInsertResult[]> };
  /** Told after every committed change of events (create, update, cancel, replay), so the scheduler's in-memory timers follow. */
  onEventsChanged(events: EventRecord[]): void;
  /** Told after a destination is put or deleted, so cached settings are dropped. */
  onDestinationChanged(tenantId: string, name: string): void;
  metrics: Metrics;
  logger: Logger;
  adminKey: string;
  shardCount: number;
  limits: ApiLimits;
  /** The private-address guard (built from --allow-hosts), applied to every webhook URL accepted. */
  addressPolicy: AddressPolicy;
  /** Readiness: store reachable, shards owned, not shutting down. */
  ready(): Promise<{ ok: boolean; reasons: string[] }>;
}
