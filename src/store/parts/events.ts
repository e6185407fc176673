/**
 * The Store's part for events: inserts, reads and lists, the scheduler's firing (due lists,
 * claims, outcomes, rescues of expired leases), user changes (cancel, edit, replay), counts and
 * forecasts, retention, and the trace of transitions. Implemented by each backend's
 * event-store.ts.
 */

import type { RetryPolicy } from '../../core/backoff.ts';
import type { DestinationRef, DueRef, EventRecord, EventState, TransitionRecord } from '../../core/event.ts';
import type { RetentionState } from '../../core/retention.ts';

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

export interface TenantStateCount {
  tenantId: string;
  state: EventState;
  n: number;
}

// A ref to a due event is defined in core (the EventSink carries it too); the store's callers import it from here as well.
export { dueRefOf, type DueRef } from '../../core/event.ts';

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
  refs: {
    tenantId: string;
    id: string;
    version: number;
    group?: string | null;
    /** The event's shard, when known: a store that routes by shard (Citus) then need not look it up. */
    shard?: number;
  }[];
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
  /** The event's shard, when known: a store that routes by shard (Citus) then need not look it up. */
  shard?: number;
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

export interface EventGroupHeadParams {
  tenantId: string;
  group: string;
  /** The group's shard, when known (a member's): a store that routes by shard (Citus) then reads that shard alone. */
  shard?: number;
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

/** The event methods of Store (see store.ts for what every backend keeps). */
export interface EventStore {
  /** Inserts each event, or reports the one already stored under its id. One transaction. */
  eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]>;
  eventGet(params: { tenantId: string; id: string }): Promise<EventRecord | null>;
  eventList(params: EventListParams): Promise<EventListPage>;
  /**
   * Fireable events with dueAt ≤ untilMs, ordered by (dueAt, tenantId, id), after the cursor.
   * A group member is listed only when it is its group's head (no other non-terminal event of
   * the group before it by (fireAt, seq)): the others wait for eventGroupHead.
   */
  eventListDue(params: EventListDueParams): Promise<DueRef[]>;
  /**
   * The next event of a group that may fire now: the non-terminal event first by (fireAt, seq),
   * if it is fireable. Null when the group is empty, or its head is executing.
   */
  eventGroupHead(params: EventGroupHeadParams): Promise<DueRef | null>;
  /**
   * Fires: for each ref still in a fireable state at exactly that version, and (when it has a
   * group) with no other non-terminal event of its group ordered before it by (fireAt, seq),
   * sets state executing, version+1, attempts+1, the lease, and appends a `state` transition with
   * the lateness (now - dueAt). Returns the events it changed; the others are left untouched.
   */
  eventClaim(params: EventClaimParams): Promise<EventRecord[]>;
  /**
   * Applies delivery outcomes to events still `executing` at that version under that owner;
   * each appends one `state` transition. Returns, per outcome, whether it applied.
   */
  eventRecordAttempts(params: EventRecordAttemptsParams): Promise<boolean[]>;
  /** Makes expired executing leases due again as `awaiting_retry`; returns the refs it changed. */
  eventRescue(params: EventRescueParams): Promise<DueRef[]>;
  /** Cancels a `scheduled` or `awaiting_retry` event; one `state` transition to `canceled`. */
  eventCancel(params: EventMutateParams): Promise<EventMutateResult>;
  /**
   * Edits a `scheduled` event; appends an `updated` transition naming the changed fields. A patch
   * that changes nothing answers ok with the event as stored, and writes nothing.
   */
  eventUpdate(params: EventMutateParams & { patch: EventPatch }): Promise<EventMutateResult>;
  /** Makes an `archived` or `discarded` event `scheduled` again, due now, attempts reset to 0. */
  eventReplay(params: EventMutateParams): Promise<EventMutateResult>;
  /**
   * Events per (tenant, state), every tenant and state that has any. Costs a scan of an index of
   * every event (seconds at 10,000,000), never on the caller's event loop: for a background
   * sampler (maintenance/count-sampler.ts) that metrics and the pending quota read, never for a request.
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
   * The due-load forecast: scheduled events per bucket of dueAt over [fromMs, toMs), counted from
   * an index of scheduled rows by (tenant, dueAt, queue) alone: one range scan per tenant, never
   * a row or a payload. Its cost follows the events in the window, not the table; callers bound
   * the window (core/forecast.ts), and on SQLite it runs on the reader thread.
   */
  eventForecast(params: EventForecastParams): Promise<ForecastCount[]>;
  /**
   * Retention: deletes up to `limit` events of one tenant that are in `state` and reached it
   * before `finishedBefore`, with their whole trace, in one transaction. The state and age are
   * checked in the deleting statement itself, so an event replayed meanwhile (live again) is
   * never deleted. Served by an index of terminal rows by (tenant, state, updated_at): the cost
   * follows the rows deleted, not the size of the table. A short result means none is left.
   */
  eventDeleteTerminal(params: EventDeleteTerminalParams): Promise<EventDeleteTerminalResult>;
  /** The event's trace in order. */
  transitionList(params: TransitionListParams): Promise<TransitionRecord[]>;
}
