/**
 * The Store seam: everything Belfry keeps, behind one interface with one backend per folder
 * (sqlite/, postgres/). Methods are named entity first, verb second, each with one params object.
 * Every backend passes the conformance suite in ./conformance/.
 *
 * Store is made of parts, one interface each in ./parts/ with its records and params: events,
 * pull, schedules, sources, bulk jobs, accounts (tenants, API keys, destinations) and the cluster
 * (leader, nodes and their claim leases, shard map, rescue of dead nodes, wake-ups), plus the
 * lifecycle below. A backend implements each part in a class of its own and composes them
 * (core/compose.ts); a caller takes only the parts it uses (`Pick<Store, ...>` or a part's
 * interface). This module re-exports every part, so `import { ... } from './store.ts'` reaches
 * any record or param.
 *
 * Invariants every backend keeps:
 * - Every row belongs to a tenant; no method reads or changes another tenant's rows.
 * - A write is durable when its promise resolves (or, for a tenant with relaxed durability on a
 *   backend that supports it, at the backend's next flush). The scheduler's own bookkeeping
 *   (eventClaim, eventRecordAttempts, claimLeaseRenew, eventRescue) and pull claims and their
 *   ends (eventPullClaim, eventPullSettle, eventPullExtend) may be committed lazily: a power loss
 *   may undo the newest of those, which only makes an event fire or come back again (at least once).
 * - State changes of events are conditional (on state and, where given, version) and each one
 *   appends exactly one transition in the same transaction. Nothing is half-written.
 */
import type { AccountStore } from './parts/accounts.ts';
import type { BulkStore } from './parts/bulk.ts';
import type { ClusterStore, DueWakeups } from './parts/cluster.ts';
import type { EventStore } from './parts/events.ts';
import type { PullStore } from './parts/pull.ts';
import type { ScheduleStore } from './parts/schedules.ts';
import type { SourceStore } from './parts/sources.ts';

export * from './parts/accounts.ts';
export * from './parts/bulk.ts';
export * from './parts/cluster.ts';
export * from './parts/events.ts';
export * from './parts/pull.ts';
export * from './parts/schedules.ts';
export * from './parts/sources.ts';

/**
 * The store cannot be reached (connection refused or lost, the database restarting or out of
 * connections). Callers answer 503 and try again; it is never the client's fault.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The store has no room left: its disk is full (SQLite SQLITE_FULL, PostgreSQL 53100 disk_full).
 * Nothing of the call was written (its transaction rolled back), and the same call works once
 * space is freed: a kind of unavailability, answered `503 storage_full` with Retry-After.
 */
export class StoreFullError extends StoreUnavailableError {
  override name = 'StoreFullError';
}

/** What a backend can do, named, so callers never branch on a dialect. */
export interface StoreCapabilities {
  /**
   * Several processes may share the store (the node runs the cluster roles), and their claims of
   * the same rows never block one another (PostgreSQL: FOR UPDATE SKIP LOCKED). Whether nodes
   * tell each other of events due soon is `Store.dueWakeups` being there.
   */
  multiNode: boolean;
  /**
   * How often the read-ahead should look for events entering its lookahead, when the scheduler's
   * default (250 ms) costs this store much: on Citus a due list is a statement per Citus shard
   * (32 by default), so 4 looks a second cost a node 128 statements a second with nothing due.
   * The node takes it, kept to at most a third of its lookahead.
   */
  readAheadPollMs?: number;
  /**
   * How many claims a node should keep in flight, when the scheduler's default (4) is too few for
   * this store: on Citus a claim is a statement per Citus shard its refs are on, 4 at a time, on
   * several workers, so one takes several times as long as on one server, and 4 in flight fell
   * behind 1,000 events/s due in pairs (docs/citus.md, Failures and isolation).
   */
  claimsInFlight?: number;
}

/** What a store is besides its parts: what it can do, its schema, its liveness, its end. */
export interface StoreLifecycle {
  readonly capabilities: StoreCapabilities;
  /** Present when nodes tell each other of events due soon (PostgreSQL LISTEN/NOTIFY); only on a multiNode store. */
  readonly dueWakeups?: DueWakeups;

  /** Creates or upgrades the schema; safe to call from several processes at once. */
  migrate(): Promise<void>;
  /** Resolves when the store answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  /**
   * Optional: gets ready for the first fires of a store of `shardCount` shards (connections,
   * prepared statements), so that they cost no more than the rest; the node awaits it before it
   * says it is ready. Best effort: what it could not do is done on first use.
   */
  warmUp?(shardCount: number): Promise<void>;
  close(): Promise<void>;
}

/** The parts of a store, by name: what a backend composes (core/compose.ts). */
export interface StoreParts {
  events: EventStore;
  pull: PullStore;
  schedules: ScheduleStore;
  sources: SourceStore;
  bulk: BulkStore;
  accounts: AccountStore;
  cluster: ClusterStore;
}

/** Every part's methods. */
export type StorePartMethods = EventStore &
  PullStore &
  ScheduleStore &
  SourceStore &
  BulkStore &
  AccountStore &
  ClusterStore;

/** The store: its lifecycle and every part. */
export interface Store
  extends StoreLifecycle,
    EventStore,
    PullStore,
    ScheduleStore,
    SourceStore,
    BulkStore,
    AccountStore,
    ClusterStore {}
