/** What the API needs from the rest of the node: passed to createApp(), so tests build it in-process. */
import type { Logger } from 'pino';
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import type { EventBus } from '../core/event-sink.ts';
import type { RetentionPeriods } from '../core/retention.ts';
import type { Metrics } from '../core/metrics.ts';
import type { CountSampler } from '../maintenance/count-sampler.ts';
import type { KnownDestinations } from './known-destinations.ts';
import type { PullWaiters } from '../pull/index.ts';
import type { TenantQuotas } from './tenant-quotas.ts';
import type {
  AccountStore,
  BulkStore,
  EventInsertResult,
  EventStore,
  NewEvent,
  PullStore,
  ScheduleStore,
  SourceStore,
  StoreLifecycle,
} from '../store/store.ts';
import { DEFAULT_TENANT_LIMITS, type TenantLimits } from '../core/tenant-limits.ts';
import type { ClusterView } from './schemas/cluster.ts';
import type { DestinationHealthOutput } from './schemas/destinations.ts';

/**
 * Limits on what one request may carry: the node's default per-tenant limits (each tenant may
 * have its own, see core/tenant-limits.ts) and the bound on any request body, checked before parsing.
 */
export interface ApiLimits extends TenantLimits {
  /** Request bodies larger than this are refused with 413 before parsing (each route has its own limit below it, body-limits.ts). */
  bodyBytesMax: number;
  /** Bytes of request bodies in flight on the node at once (body-limits.ts); absent: BODY_BYTES_IN_FLIGHT_MAX_DEFAULT. */
  bodyBytesInFlightMax?: number;
}

export const BODY_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;

export const DEFAULT_API_LIMITS: ApiLimits = { ...DEFAULT_TENANT_LIMITS, bodyBytesMax: BODY_BYTES_MAX_DEFAULT };

export interface AppDeps {
  /** Every part but the cluster's: the API serves what tenants own, never the leader, nodes or shard map. */
  store: StoreLifecycle & EventStore & PullStore & ScheduleStore & SourceStore & BulkStore & AccountStore;
  clock: Clock;
  /**
   * How far ahead a schedule's occurrences are made (the materialiser's horizon and refill): a
   * schedule created, edited or resumed makes those within it at once. Default 20 s.
   */
  scheduleAheadMs?: number;
  /**
   * The clock of pull visibility timeouts (claim, extend): on a single node one that a step of the
   * wall clock does not move (SteadyClock), in a cluster the store's. Default: `clock`.
   */
  leaseClock?: Clock;
  /** Inserts through group commit. */
  writer: { insert(events: NewEvent[]): Promise<EventInsertResult[]> };
  /**
   * The node's event bus: told of every committed change of events (create, update, cancel,
   * replay) and every pull ack or nack, so the scheduler's timers, group order and parked pull
   * claims follow. createApp adds a listener of its own only when it makes its own `pullWaiters`.
   */
  events: EventBus;
  /** Told after a destination is put or deleted, so cached settings are dropped. */
  onDestinationChanged(tenantId: string, name: string): void;
  /** Told after a tenant's signing secrets changed (a rotation), so cached ones are dropped. */
  onTenantSecretsChanged(tenantId: string): void;
  metrics: Metrics;
  /** Belfry's version (its package.json's): shown by /healthz and the OpenAPI document. */
  version: string;
  /** Counts of events sampled in the background: the /metrics gauges and the pending quota read them. */
  counts: CountSampler;
  logger: Logger;
  /** One info log line per answered request (access-log.ts); default off. */
  accessLog?: boolean;
  adminKey: string;
  shardCount: number;
  limits: ApiLimits;
  /** The node's default retention periods (a tenant's own override them; shown on GET /v1/tenants/{t}). */
  retention: RetentionPeriods;
  /** The private-address guard (built from --allow-hosts), applied to every webhook URL accepted. */
  addressPolicy: AddressPolicy;
  /** GET /v1/cluster: the cluster as this node sees it (absent: 503). */
  clusterStatus?(): Promise<ClusterView>;
  /** GET /v1/destinations/{name}/health: the destination's queue on this node (absent: 503). */
  destinationHealth?(tenantId: string, name: string): Omit<DestinationHealthOutput, 'name'>;
  /** Readiness: store reachable, shards owned, not shutting down. */
  ready(): Promise<{ ok: boolean; reasons: string[] }>;
  /** Parked pull claims (the node's, woken by its bus); absent: createApp makes its own and wakes them from `events`. */
  pullWaiters?: PullWaiters;
  /** The event routes' destination check (built by createApp; absent: read from the store each time). */
  knownDestinations?: KnownDestinations;
  /**
   * The tenants' rate buckets and pending estimates (absent: createApp makes its own). The node
   * passes the one its Kafka sources use, so a tenant's scheduleRequestsPerSecond and pending
   * estimate cover the API and its sources together.
   */
  quotas?: TenantQuotas;
}
