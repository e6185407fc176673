/**
 * The Store seam: everything Belfry keeps, behind one interface with one backend per folder
 * (sqlite/, postgres/). Methods are named entity first, verb second, each with one params object.
 * Every backend passes the conformance suite in ./conformance/.
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
import type { RetryPolicy } from '../core/backoff.ts';
import type { DestinationRef, EventRecord, EventState, TransitionRecord } from '../core/event.ts';
import type { RetentionState } from '../core/retention.ts';
import type { ScheduleStore } from './schedules.ts';
import type { SourceStore } from './sources.ts';

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
  /** Row claims never block another node (FOR UPDATE SKIP LOCKED). */
  skipLocked: boolean;
  /** Several processes may share the store. */
  multiNode: boolean;
  /** Nodes tell each other of events due soon (`Store.dueWakeups`, PostgreSQL LISTEN/NOTIFY). */
  dueWakeups: boolean;
}

/**
 * Wake-ups between the nodes sharing a store. A node's read-ahead reads rows due within its
 * look-ahead once, past a cursor; an event written by another node and due before that cursor
 * would otherwise be found only by the overdue sweep, a second or more late. The writer announces
 * such events; every node hears them and takes those of its shards into its timer. Best effort:
 * what is lost (a node reconnecting) is still found by the sweep.
 */
export interface DueWakeups {
  /** Announces fireable events due soon that this node wrote (bounded by the caller's batch). */
  announce(refs: DueRef[]): Promise<void>;
  /**
   * Calls `listener` with every announced batch (this node's own included) until closed;
   * resolves once listening. Reconnects by itself after a lost connection, telling `onError`.
   */
  subscribe(listener: (refs: DueRef[]) => void, onError: (err: Error) => void): Promise<{ close(): Promise<void> }>;
}

export interface TenantRecord {
  id: string;
  name: string;
  /** Per-tenant settings (limits, durability); free-form JSON validated by the API. */
  settings: Record<string, unknown>;
  createdAt: number;
}

/** A tenant to create, with the signing secrets it starts with (none: '[]', generated lazily). */
export interface NewTenantRecord extends TenantRecord {
  signingSecrets?: DestinationSecret[];
}

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  /** SHA-256 hex of the key; the key itself is never stored. */
  hash: string;
  /** The first characters of the key, to recognise it in a list. */
  prefix: string;
  createdAt: number;
  revokedAt: number | null;
}

/** A destination's stored settings, typed per kind (durations in ms): see core/destination.ts. */
export type { DestinationConfig } from '../core/destination.ts';
import type { DestinationConfig } from '../core/destination.ts';

/** A signing secret of a destination, or of a tenant (for its deliveries to inline URLs). */
export interface DestinationSecret {
  /** `whsec_` + base64. */
  secret: string;
  /** Signs until this instant (an old secret kept through a rotation's grace period); null: until replaced. */
  expiresAt: number | null;
}

/** Stored secrets as records; accepts the bare strings older versions stored. */
export function secretsFromJson(value: unknown): DestinationSecret[] {
  if (!Array.isArray(value)) return [];
  return value.map((s: unknown) => (typeof s === 'string' ? { secret: s, expiresAt: null } : (s as DestinationSecret)));
}

export interface DestinationRecord {
  tenantId: string;
  name: string;
  config: DestinationConfig;
  /** Signing secrets, newest first. Never returned by the API after creation. */
  secrets: DestinationSecret[];
  createdAt: number;
  updatedAt: number;
}

/** An event to insert; the store fills seq, version (1), state (scheduled), timestamps. */
export interface NewEvent {
  tenantId: string;
  id: string;
  shard: number;
  fireAt: number;
  destination: DestinationRef;
  payload: string;
  headers: Record<string, string>;
  group: string | null;
  retry: RetryPolicy | null;
  expireAt: number | null;
  tags: Record<string, string>;
  /** The event's kind (see EventRecord.type); absent or null when not given. */
  type?: string | null;
  requestHash: string;
}

export type EventInsertResult =
  | { kind: 'created'; event: EventRecord }
  /** Same tenant and id, same requestHash: the stored event, unchanged. */
  | { kind: 'existing'; event: EventRecord }
  /** Same tenant and id, different requestHash: the stored event, unchanged. */
  | { kind: 'conflict'; event: EventRecord };

export interface EventInsertManyParams {
  events: NewEvent[];
  now: number;
}

/** Fields a PATCH may change while the event is `scheduled`. */
export interface EventPatch {
  fireAt?: number;
  payload?: string;
  headers?: Record<string, string>;
  destination?: DestinationRef;
  /** A new kind; null removes it. */
  type?: string | null;
  /** Recomputed by the caller when fireAt changes and the event has an expiry. */
  expireAt?: number | null;
  /** The hash of the request body after the edit, so a repeated create no longer matches. */
  requestHash?: string;
}

export interface EventMutateParams {
  tenantId: string;
  id: string;
  /**
   * The operation that makes this change, named in its transition's detail (`operation`,
   * `operationId`): a bulk job's writes say `bulk_cancel` and the job's id. Absent for a single call.
   */
  operation?: { name: string; id: string };
  /** A cancel's reason, kept as the event's lastError and in its transition's detail (`reason`). */
  reason?: string;
  /**
   * If given, the change applies only when the stored version equals it (If-Match). Checked
   * before the state: a stale version answers version_mismatch whatever the state.
   */
  expectedVersion?: number;
  now: number;
}

export type EventMutateResult =
  | { kind: 'ok'; event: EventRecord }
  | { kind: 'not_found' }
  | { kind: 'version_mismatch'; event: EventRecord }
  /** The event is in a state that does not allow the change; `event.state` says which. */
  | { kind: 'wrong_state'; event: EventRecord }
  /**
   * The event has made EVENT_CHANGES_MAX changes: an edit or a replay would grow its trace past
   * its bound (a cancel still applies).
   */
  | { kind: 'changes_exhausted'; event: EventRecord };

/**
 * Bound on an event's trace: edits and replays apply only while its version (the number of
 * changes it has made, each one transition) is below this. What follows the last of them is
 * bounded too (a delivery adds at most two transitions per attempt, and attempts are at most 100;
 * a cancel one), so an event's trace never holds much more than this many rows.
 */
export const EVENT_CHANGES_MAX = 1_000;

export interface EventListParams {
  tenantId: string;
  state?: EventState;
  /** A registered destination name. */
  destination?: string;
  group?: string;
  /** The event's type, exactly. */
  type?: string;
  /** fireAt ≥ fromMs */
  fromMs?: number;
  /** fireAt < toMs */
  toMs?: number;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}

export interface EventListPage {
  /** Newest first (by creation). */
  events: EventRecord[];
  nextCursor: string | null;
}

/** What eventForecast splits the counts of each bucket by. */
export type ForecastBy = 'none' | 'destination' | 'tenant';

export interface EventForecastParams {
  /** One tenant's events; null: every tenant's (each tenant's range read in turn). */
  tenantId: string | null;
  /** Due at or after this instant (the start of the first bucket). */
  fromMs: number;
  /** Due before this instant. */
  toMs: number;
  /** Bucket i holds dueAt in [fromMs + i × bucketMs, fromMs + (i + 1) × bucketMs). */
  bucketMs: number;
  by: ForecastBy;
}

/** Scheduled events of bucket `bucket` (and of `key`: the event's queue for by=destination, its tenant for by=tenant). */
export interface ForecastCount {
  bucket: number;
  /** null when by is 'none'. */
  key: string | null;
  n: number;
}

export type BulkJobState = 'running' | 'succeeded' | 'failed';

/** A bulk operation (api/bulk): its filter and action as the API validated them, and its progress. */
export interface BulkJobRecord {
  tenantId: string;
  /** `bulk_` + a time-sortable id. */
  id: string;
  state: BulkJobState;
  /** The filter, as JSON the runner reads back (eventList params and tags). */
  filter: Record<string, unknown>;
  /** The action, as JSON the runner reads back. */
  action: Record<string, unknown>;
  /** The eventList cursor of the next page; null before the first page. */
  cursor: string | null;
  /** Events the filter selected so far. */
  matched: number;
  /** Of those, events changed. */
  done: number;
  /** Of those, events left alone: in a state the action does not apply to, or changed meanwhile. */
  skipped: number;
  /** Failures of the job itself (not of events), the newest last; at most BULK_ERRORS_KEPT. */
  errors: string[];
  leaseOwner: string | null;
  leaseUntil: number | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

/** A bulk job's key. */
export interface BulkJobKey {
  tenantId: string;
  id: string;
}
/** Jobs a bulkJobClaim may name as `running`, at most. */
export const BULK_CLAIM_RUNNING_MAX = 64;

/** One event's change in a bulk step, at the version the runner read. */
export type BulkChange =
  | { id: string; version: number; kind: 'cancel' }
  | { id: string; version: number; kind: 'replay' }
  | { id: string; version: number; kind: 'update'; patch: EventPatch };

export interface BulkJobStepParams {
  tenantId: string;
  id: string;
  /** The step applies only while `owner` holds the job's lease (unexpired at `now`). */
  owner: string;
  now: number;
  /** The lease is extended to this instant. */
  leaseUntil: number;
  /** The operation named in each change's transition. */
  operation: string;
  changes: BulkChange[];
  /** Events the page selected (changes plus those skipped before any write). */
  matched: number;
  /** Events of the page skipped before any write (a state the action does not apply to). */
  skipped: number;
  /** The cursor after this page; with `finished`, the job succeeds. */
  cursor: string | null;
  finished: boolean;
}

export interface BulkJobStepResult {
  /** The events changed (for the scheduler's timers). */
  changed: EventRecord[];
  job: BulkJobRecord;
}

/** Kept job errors, at most. */
export const BULK_ERRORS_KEPT = 10;
/** Finished jobs kept per tenant (the newest); bulkJobCreate deletes older ones. */
export const BULK_FINISHED_KEPT = 100;

export interface TenantStateCount {
  tenantId: string;
  state: EventState;
  n: number;
}

/** A reference to a fireable event, as the read-ahead sees it. */
export interface DueRef {
  tenantId: string;
  id: string;
  version: number;
  dueAt: number;
  shard: number;
  group: string | null;
  /** The event's virtual queue within its tenant (see core/queue.ts). */
  queue: string;
}

/** The ref of an event as it stands. */
export function dueRefOf(e: EventRecord): DueRef {
  return { tenantId: e.tenantId, id: e.id, version: e.version, dueAt: e.dueAt, shard: e.shard, group: e.group, queue: e.queue };
}

export interface EventListDueParams {
  /** Only these shards; null means all. */
  shards: number[] | null;
  /** Keyset cursor: rows after (afterDueAt, afterTenantId, afterId) in that order; null from the start. */
  after: { dueAt: number; tenantId: string; id: string } | null;
  /** dueAt ≤ untilMs. */
  untilMs: number;
  limit: number;
  /**
   * Only this tenant's queue, from (dueAt, id) on, inclusive (ordered by dueAt, id), served by an
   * index of its own: how the scheduler refills a queue whose due events it could not all hold in
   * memory, without reading other queues' rows. `after` is ignored when set.
   */
  queue?: { tenantId: string; queue: string; from: { dueAt: number; id: string } | null };
  /**
   * Queues whose rows from (dueAt, id) on, inclusive, are left out of the page (at most
   * EVENT_LIST_DUE_SKIP_MAX): the scheduler's flooded queues, which it reads through `queue` when
   * it has room for them, so the read-ahead does not carry their rows to the node only to skip
   * them. A page examines a bounded number of rows (SQLite: the same `limit` rows as without skip;
   * PostgreSQL: at most 8 times each shard's share of the page), so it may be short although more
   * rows are due: with skip (not empty), only an empty page means that nothing else is due. The
   * page's last row is where the examined rows are complete, skipped or not, so the caller
   * continues after it. Ignored with `queue`.
   */
  skip?: { tenantId: string; queue: string; from: { dueAt: number; id: string } }[];
}

/** Queues one eventListDue may leave out (`skip`). */
export const EVENT_LIST_DUE_SKIP_MAX = 32;

export interface EventClaimParams {
  /**
   * The events to claim, each at the version read. `group`, when given, is the event's group (null:
   * none), as read with the version; a backend may claim refs known to be ungrouped more cheaply.
   */
  refs: { tenantId: string; id: string; version: number; group?: string | null }[];
  now: number;
  owner: string;
  leaseUntil: number;
  /**
   * Fencing (cluster): claim only events whose shard is assigned to `owner` in the stored shard
   * map, checked in the same statement, so a node that lost its shards claims nothing.
   */
  fenceByShardOwner?: boolean;
}

export interface AttemptOutcome {
  tenantId: string;
  id: string;
  /** The version the event had when claimed (after the claim's increment). */
  version: number;
  owner: string;
  to: 'succeeded' | 'discarded' | 'awaiting_retry' | 'archived';
  /** For awaiting_retry: when to try again. */
  retryAt?: number;
  status?: number;
  error?: string;
  durationMs: number;
}

export interface EventRecordAttemptsParams {
  outcomes: AttemptOutcome[];
  now: number;
}

export interface EventRescueParams {
  /** Executing events whose lease ended before this instant are made due again. */
  leaseExpiredBefore: number;
  /** Also rescue every executing event not held by this owner (a restarted single node). */
  notOwnedBy?: string;
  /**
   * Also rescue every executing event held by this owner, whatever its lease: a node started
   * under the id of a previous run (a fixed --node-id) calls it before it claims anything, so
   * those events are the previous run's, and its own claim lease must not keep them.
   */
  heldBy?: string;
  now: number;
  limit: number;
}

export interface EventRescueDeadParams {
  /** The leader and its epoch: the rescue applies only while they hold the unexpired lease. */
  leaderId: string;
  epoch: number;
  /** Nodes the leader found dead (their heartbeat stopped), whose shards it is moving. */
  owners: string[];
  /**
   * Only owners whose node row's heartbeat is at least this old by the store's clock, read in
   * the same transaction: a node that heart-beat meanwhile keeps its claims, and so does an
   * owner without a node row (a node that left gracefully finishes its own deliveries).
   */
  nodeTtlMs: number;
  /** Rescued events are due at this instant. */
  now: number;
  limit: number;
}

/** The lease owner of every claimed pull event (no node's claim lease keeps it; see eventPullExpired). */
export const PULL_LEASE_OWNER = 'pull';
/** Events one pull claim hands out at most. */
export const PULL_CLAIM_MAX = 100;
/** Index entries one pull claim reads per type at most: `max` × this factor, at least PULL_EXAMINE_MIN. */
export const PULL_EXAMINE_FACTOR = 4;
export const PULL_EXAMINE_MIN = 100;

export interface EventPullClaimParams {
  tenantId: string;
  /** The pull destination's queue (`name:<destination>`, core/queue.ts). */
  queue: string;
  /** Only events of these types (1 to 10 of them); null: any type, untyped included. */
  types: string[] | null;
  /** 1 to PULL_CLAIM_MAX. */
  max: number;
  now: number;
  /** The visibility timeout ends at this instant. */
  leaseUntil: number;
  /** The receipt of this claim (a random token from the caller), stored with each event it claims. */
  receipt: string;
}

/** What ends a pull claim: the consumer's ack or nack, or the end of its visibility timeout. */
export type PullSettleAction = 'ack' | 'nack' | 'expire';

export interface EventPullSettleParams {
  tenantId: string;
  id: string;
  /** Applies only while the event is executing under this receipt. */
  receipt: string;
  /** And only at this attempt (the one the caller decided `to` from); null: any. */
  attempts: number | null;
  action: PullSettleAction;
  /** Decided by the caller from the event's retry policy (dispatch/outcome.ts decideNext). */
  to: 'succeeded' | 'discarded' | 'awaiting_retry' | 'archived';
  /** For awaiting_retry: when it is claimable again. */
  retryAt?: number;
  error?: string;
  now: number;
}

export interface EventPullExtendParams {
  tenantId: string;
  id: string;
  receipt: string;
  now: number;
  /** The visibility timeout ends at this instant (never earlier than it already does). */
  leaseUntil: number;
}

export interface EventGroupHeadParams {
  tenantId: string;
  group: string;
}

export interface EventDeleteTerminalParams {
  tenantId: string;
  /** Only events in this terminal state. */
  state: RetentionState;
  /** Only events that reached it before this instant (updated_at < finishedBefore). */
  finishedBefore: number;
  /** At most this many events, oldest first (1 to the backend's page bound). */
  limit: number;
}

/** Rows one eventDeleteTerminal removed. */
export interface EventDeleteTerminalResult {
  events: number;
  transitions: number;
}

export interface TransitionListParams {
  tenantId: string;
  eventId: string;
  /** Transitions with seq > afterSeq. */
  afterSeq?: number;
  limit: number;
}

/** A node of the cluster as its heartbeats show it. Times are the store's clock. */
export interface NodeRecord {
  id: string;
  startedAt: number;
  heartbeatAt: number;
  /** Milliseconds since its last heartbeat, by the store's clock. */
  ageMs: number;
  meta: Record<string, unknown>;
}

/** The leader lease: one row. `epoch` grows by one each time the lease changes hands. */
export interface LeaderLease {
  nodeId: string;
  epoch: number;
  /** Store-clock ms. */
  expiresAt: number;
}

export interface ShardAssignment {
  shard: number;
  nodeId: string;
  /** The leader epoch that wrote it. */
  epoch: number;
}

/** ScheduleStore (schedules.ts): the recurring schedules' methods; SourceStore (sources.ts): the Kafka sources'. */
export interface Store extends ScheduleStore, SourceStore {
  readonly capabilities: StoreCapabilities;
  /** Present when capabilities.dueWakeups. */
  readonly dueWakeups?: DueWakeups;

  /** Creates or upgrades the schema; safe to call from several processes at once. */
  migrate(): Promise<void>;
  /** Resolves when the store answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;

  apiKeyCreate(key: ApiKeyRecord): Promise<void>;

  /**
   * Takes the lease of one running bulk job, the oldest first: one whose lease is free or ended
   * at `now`, or already `owner`'s (or, with `takeOver`, any: a single-process store, where no
   * other owner can be alive). Null when there is none. `running` (at most BULK_CLAIM_RUNNING_MAX)
   * names the jobs the caller runs already: those are never returned, and jobs of their tenants
   * come after every other tenant's, so a runner with room for one more job takes a tenant it does
   * not serve yet first.
   */
  bulkJobClaim(params: { owner: string; now: number; leaseUntil: number; takeOver?: boolean; running?: BulkJobKey[] }): Promise<BulkJobRecord | null>;
  /**
   * Stores a new running job, only while the tenant has fewer than `runningMax` running jobs
   * (checked in the same transaction). Returns false when it has that many. Deletes the tenant's
   * finished jobs but the newest BULK_FINISHED_KEPT, so the jobs table stays bounded.
   */
  bulkJobCreate(params: { job: BulkJobRecord; runningMax: number }): Promise<boolean>;
  /** Marks a running job failed with `error`, only while `owner` holds its lease. */
  bulkJobFail(params: { tenantId: string; id: string; owner: string; now: number; error: string }): Promise<boolean>;
  bulkJobGet(params: { tenantId: string; id: string }): Promise<BulkJobRecord | null>;
  /**
   * One batch of a bulk job, in ONE transaction: while `owner` holds the job's unexpired lease,
   * applies each change as the single-event call would (eventCancel / eventReplay / eventUpdate
   * at the version read: an event that moved on is skipped), each transition naming the
   * operation and the job; then adds the page's counts, stores the cursor and extends the lease.
   * A crash loses the whole batch or nothing, so a resumed job never applies a change twice.
   * Null when the lease is not `owner`'s (nothing applied).
   */
  bulkJobStep(params: BulkJobStepParams): Promise<BulkJobStepResult | null>;
  apiKeyFindByHash(params: { hash: string }): Promise<ApiKeyRecord | null>;
  apiKeyList(params: { tenantId: string }): Promise<ApiKeyRecord[]>;
  /** Returns false when no such live key of that tenant exists. */
  /**
   * Revokes a key of that tenant that is live at `now` (not revoked, or revoked at a time still
   * to come: a rotated key in its grace period), with effect at `at` (default `now`). A revoke
   * only ever brings the revocation time forward, never back. Returns false when no such live
   * key exists.
   */
  apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean>;

  destinationDelete(params: { tenantId: string; name: string }): Promise<boolean>;
  destinationGet(params: { tenantId: string; name: string }): Promise<DestinationRecord | null>;
  destinationList(params: { tenantId: string }): Promise<DestinationRecord[]>;
  /** Creates or replaces (a replace keeps the stored createdAt); returns whether it was created. */
  destinationPut(params: { destination: DestinationRecord }): Promise<{ created: boolean; destination: DestinationRecord }>;

  /** Cancels a `scheduled` or `awaiting_retry` event; one `state` transition to `canceled`. */
  eventCancel(params: EventMutateParams): Promise<EventMutateResult>;
  /**
   * Fires: for each ref still in a fireable state at exactly that version, and (when it has a
   * group) with no other non-terminal event of its group ordered before it by (fireAt, seq),
   * sets state executing, version+1, attempts+1, the lease, and appends a `state` transition with
   * the lateness (now - dueAt). Returns the events it changed; the others are left untouched.
   */
  eventClaim(params: EventClaimParams): Promise<EventRecord[]>;
  /**
   * Counts of events per state, over all tenants. Costs a scan of an index of every event (a
   * backend may estimate instead on a large table): for tests and tools. The node's metrics read
   * the background samples of eventCountByTenantState instead.
   */
  eventCountByState(): Promise<Record<EventState, number>>;
  /**
   * Events per (tenant, state), every tenant and state that has any. Costs a scan of an index of
   * every event (seconds at 10,000,000), never on the caller's event loop: for a background
   * sampler (store/count-sampler.ts) that metrics and the pending quota read, never for a request.
   * Each event is counted once, in a state it had during the count.
   */
  eventCountByTenantState(): Promise<TenantStateCount[]>;
  /**
   * Events of one tenant not yet finished (scheduled, executing, awaiting_retry): what the
   * pendingEventsMax quota counts. Costs a range scan of that tenant's pending index entries, off
   * the caller's event loop; callers count rarely and estimate between counts.
   */
  eventCountPending(params: { tenantId: string }): Promise<number>;
  /**
   * Retention: deletes up to `limit` events of one tenant that are in `state` and reached it
   * before `finishedBefore`, with their whole trace, in one transaction. The state and age are
   * checked in the deleting statement itself, so an event replayed meanwhile (live again) is
   * never deleted. Served by an index of terminal rows by (tenant, state, updated_at): the cost
   * follows the rows deleted, not the size of the table. A short result means none is left.
   */
  eventDeleteTerminal(params: EventDeleteTerminalParams): Promise<EventDeleteTerminalResult>;
  /**
   * The due-load forecast: scheduled events per bucket of dueAt over [fromMs, toMs), counted from
   * an index of scheduled rows by (tenant, dueAt, queue) alone: one range scan per tenant, never
   * a row or a payload. Its cost follows the events in the window, not the table; callers bound
   * the window (core/forecast.ts), and on SQLite it runs on the reader thread.
   */
  eventForecast(params: EventForecastParams): Promise<ForecastCount[]>;
  eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null>;
  /**
   * The next event of a group that may fire now: the non-terminal event first by (fireAt, seq),
   * if it is fireable. Null when the group is empty, or its head is executing.
   */
  eventGroupHead(params: EventGroupHeadParams): Promise<DueRef | null>;
  /**
   * Pull delivery: claims up to `max` due events of one pull queue (of `types`), in due order,
   * each a group head (no earlier live member of its group), with the conditional write of a fire
   * (fireable at the version read; rows another claimer holds are skipped), setting the lease to
   * `leaseUntil`, the owner to PULL_LEASE_OWNER and the receipt. One `state` transition each.
   * Reads a bounded page of an index per type (PULL_EXAMINE_*), never the queue's whole backlog.
   */
  eventPullClaim(params: EventPullClaimParams): Promise<EventRecord[]>;
  /**
   * Claimed pull events whose visibility timeout ended before `now`, the oldest first, with their
   * receipts: the expirer settles each (action `expire`) by its retry policy.
   */
  eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]>;
  /** Extends a claim's visibility timeout; null (nothing changed) unless it is held under `receipt`. One transition. */
  eventPullExtend(params: EventPullExtendParams): Promise<EventRecord | null>;
  /** The due time of the queue's first fireable event (null: none): when a parked claim should look again. */
  eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null>;
  /**
   * Ends a claim (ack, nack or expiry) as the caller decided: executing → `to`, lease and receipt
   * cleared, one `state` transition naming the action. Null (nothing changed) unless the event is
   * executing under `receipt` (at `attempts`).
   */
  eventPullSettle(params: EventPullSettleParams): Promise<EventRecord | null>;
  /** Inserts each event, or reports the one already stored under its id. One transaction. */
  eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]>;
  eventList(params: EventListParams): Promise<EventListPage>;
  /**
   * Fireable events with dueAt ≤ untilMs, ordered by (dueAt, tenantId, id), after the cursor.
   * A group member is listed only when it is its group's head (no other non-terminal event of
   * the group before it by (fireAt, seq)): the others wait for eventGroupHead.
   */
  eventListDue(params: EventListDueParams): Promise<DueRef[]>;
  /**
   * Applies delivery outcomes to events still `executing` at that version under that owner;
   * each appends one `state` transition. Returns, per outcome, whether it applied.
   */
  eventRecordAttempts(params: EventRecordAttemptsParams): Promise<boolean[]>;
  /** Makes an `archived` or `discarded` event `scheduled` again, due now, attempts reset to 0. */
  eventReplay(params: EventMutateParams): Promise<EventMutateResult>;
  /**
   * Extends `owner`'s claim lease to `leaseUntil` (never shortens it). An executing event is
   * rescued only when its own lease (set by its claim) and its owner's claim lease have both
   * ended, so this one write keeps every claim of the owner alive however many are in flight.
   * A live node calls it periodically, so only a dead node's claims expire and are rescued.
   */
  claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void>;
  /** Makes expired executing leases due again as `awaiting_retry`; returns the refs it changed. */
  eventRescue(params: EventRescueParams): Promise<DueRef[]>;
  /**
   * Failover: makes the executing events of dead owners due again (`awaiting_retry`, due `now`,
   * a transition with reason `owner dead`), whatever their leases, so that they fire again as
   * soon as their shards move instead of when the leases end. Fenced twice, in one transaction:
   * by the leader lease (leaderId at epoch, unexpired) and by each owner's heartbeat (nodeTtlMs).
   * An outcome the dead owner records later does not apply (the version moved on). Returns the
   * refs it changed, oldest lease first, or null when leaderId does not hold the lease at epoch.
   */
  eventRescueDead(params: EventRescueDeadParams): Promise<DueRef[] | null>;
  /**
   * Edits a `scheduled` event; appends an `updated` transition naming the changed fields. A patch
   * that changes nothing answers ok with the event as stored, and writes nothing.
   */
  eventUpdate(params: EventMutateParams & { patch: EventPatch }): Promise<EventMutateResult>;

  /**
   * Takes the leader lease when it is free or expired (epoch + 1), or extends it (same epoch)
   * when `nodeId` holds it; null when another node holds an unexpired lease. Store clock.
   */
  leaderAttemptElect(params: { nodeId: string; leaseMs: number }): Promise<LeaderLease | null>;
  leaderGet(): Promise<LeaderLease | null>;
  /** Gives the lease up at once (graceful stop), only if `nodeId` holds it at `epoch`. */
  leaderResign(params: { nodeId: string; epoch: number }): Promise<void>;

  nodeDelete(params: { nodeId: string }): Promise<void>;
  /** Registers the node or refreshes its heartbeat; returns the store's clock. */
  nodeHeartbeat(params: { nodeId: string; meta: Record<string, unknown> }): Promise<{ nowMs: number }>;
  nodeList(): Promise<NodeRecord[]>;

  /**
   * Replaces the whole shard map, only if (`leaderId`, `epoch`) is the current, unexpired leader
   * lease (checked in the same transaction). Returns whether it applied.
   */
  shardAssign(params: { leaderId: string; epoch: number; assignments: { shard: number; nodeId: string }[] }): Promise<boolean>;
  shardList(): Promise<ShardAssignment[]>;
  /**
   * Per shard with fireable events due at or before `now`: how many, and the oldest due time.
   * Shards with nothing due are left out; at most `limit` shards, the most late first.
   */
  shardLag(params: { now: number; limit: number }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]>;

  tenantCreate(tenant: NewTenantRecord): Promise<void>;
  tenantGet(params: { id: string }): Promise<TenantRecord | null>;
  tenantList(): Promise<TenantRecord[]>;
  /**
   * The tenant's signing secrets, newest first (they sign its deliveries to inline URLs); null
   * when there is no such tenant. Empty for a tenant made before tenants had secrets. Kept apart
   * from TenantRecord so that nothing reading tenants can pass a secret on.
   */
  tenantSecretsGet(params: { id: string }): Promise<DestinationSecret[] | null>;
  /**
   * Replaces the tenant's signing secrets with `secrets`, only while they are still `expected`
   * (compare and swap): two nodes generating a first secret at once, or two rotations at once,
   * never lose one. Returns whether it applied.
   */
  tenantSecretsSwap(params: { id: string; expected: DestinationSecret[]; secrets: DestinationSecret[] }): Promise<boolean>;
  /** Replaces a tenant's settings; returns the tenant as stored, or null when there is none. */
  tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<TenantRecord | null>;

  /** The store's clock (PostgreSQL's now()); lease and due-time decisions of a cluster use it. */
  timeNow(): Promise<number>;

  /** The event's trace in order. */
  transitionList(params: TransitionListParams): Promise<TransitionRecord[]>;
}
