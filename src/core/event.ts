/**
 * The event model and its state machine.
 *
 *   scheduled ──fire──▶ executing ──2xx/ack──▶ succeeded
 *       │  ▲                │ ──permanent failure (4xx but 408/429)──▶ discarded
 *    update│           transient failure (5xx, 408, 429, timeout, network)
 *       │  │                ▼
 *       ▼  └──────── awaiting_retry ──attempts exhausted / expireAt passed──▶ archived
 *   canceled                                   (archived, discarded ──replay──▶ scheduled)
 *
 * Invariant: a terminal event (succeeded, discarded, archived, canceled) changes only by replay
 * (archived/discarded) and never by the scheduler.
 */
import type { RetryPolicy } from './backoff.ts';

export const EVENT_STATES = [
  'scheduled',
  'executing',
  'awaiting_retry',
  'succeeded',
  'discarded',
  'archived',
  'canceled',
] as const;
export type EventState = (typeof EVENT_STATES)[number];

/**
 * Which states each state may change to: the one source of which change applies from which
 * states. Every backend builds its state checks (SQL `state IN (...)` lists, JS checks) from the
 * lists below, which are read off this table; `src/store/state-lists.test.ts` keeps them equal.
 * An edit (update) is not a change of state: it applies to EDITABLE_STATES and leaves the state.
 */
export const TRANSITIONS: Readonly<Record<EventState, readonly EventState[]>> = {
  scheduled: ['executing', 'canceled', 'archived'],
  executing: ['succeeded', 'discarded', 'awaiting_retry', 'archived'],
  awaiting_retry: ['executing', 'canceled', 'archived'],
  succeeded: [],
  discarded: ['scheduled'],
  archived: ['scheduled'],
  canceled: [],
};

/** The states from which an event may change to `to`, in the order of EVENT_STATES. */
export function statesInto(to: EventState): readonly EventState[] {
  return EVENT_STATES.filter((from) => TRANSITIONS[from].includes(to));
}

/**
 * The states the scheduler never changes: only a replay (into `scheduled`) leaves one, in the
 * spelling (and order) of the partial index events_terminal.
 */
export const TERMINAL_STATES: readonly EventState[] = EVENT_STATES.filter((s) =>
  TRANSITIONS[s].every((to) => to === 'scheduled'),
);
/** The states not terminal, in the spelling (and order) of the partial indexes. */
export const LIVE_STATES: readonly EventState[] = EVENT_STATES.filter((s) => !TERMINAL_STATES.includes(s));
/** States the scheduler (or a pull consumer) may fire from. */
export const FIREABLE_STATES: readonly EventState[] = statesInto('executing');
/** States a user may cancel from. */
export const CANCELABLE_STATES: readonly EventState[] = statesInto('canceled');
/** States a user may replay from. */
export const REPLAYABLE_STATES: readonly EventState[] = statesInto('scheduled');
/** The states an attempt's outcome (or a pull ack / nack) may move an executing event to. */
export const ATTEMPT_OUTCOME_STATES: readonly EventState[] = TRANSITIONS.executing;
/** The states an attempt's outcome applies from (those that may become `succeeded`). */
export const ATTEMPTING_STATES: readonly EventState[] = statesInto('succeeded');
/** States a user may edit (update) in: only before the first fire. */
export const EDITABLE_STATES: readonly EventState[] = ['scheduled'];
/**
 * The states of a group member that has started delivery (it entered `executing`) and holds its
 * group until it is terminal: the live states but `scheduled`.
 */
export const STARTED_STATES: readonly EventState[] = LIVE_STATES.filter((s) => s !== 'scheduled');

export function isTerminal(state: EventState): boolean {
  return TERMINAL_STATES.includes(state);
}

/** Where an event goes: a registered destination by name, or an inline URL. */
export type DestinationRef = { name: string } | { url: string };

/** An event as stored. Times are epoch milliseconds. */
export interface EventRecord {
  tenantId: string;
  id: string;
  shard: number;
  /** Creation order within the store; ties of `fireAt` in a group are broken by it. */
  seq: number;
  state: EventState;
  /** Grows by one with every change; the ETag. */
  version: number;
  /** When the user wants it delivered; the group order key. */
  fireAt: number;
  /** When the scheduler acts next: `fireAt`, or the time of the next retry. */
  dueAt: number;
  destination: DestinationRef;
  /** The virtual queue within the tenant (`queueOf(destination)`, kept by the store). */
  queue: string;
  /** The payload as JSON text, stored exactly as received. */
  payload: string;
  headers: Record<string, string>;
  group: string | null;
  /** The event's own retry policy; null means the destination's, or the default. */
  retry: RetryPolicy | null;
  /** Delivery gives up (archived) once this instant passes; null means never. */
  expireAt: number | null;
  tags: Record<string, string>;
  /** The kind of event (`order.timeout`), as subscribers filter on it; null when not given. */
  type: string | null;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  /** SHA-256 of the canonical request body: decides `existing` vs `409` on a repeated id. */
  requestHash: string;
  createdAt: number;
  updatedAt: number;
  /** The node that holds an `executing` event, and until when. */
  leaseOwner: string | null;
  leaseUntil: number | null;
}

/** One row of an event's append-only trace. */
export interface TransitionRecord {
  tenantId: string;
  eventId: string;
  /** Position in the event's trace, from 1. */
  seq: number;
  at: number;
  /** `created`, `updated` (an edit before the fire), `state` (a state change) or `replayed`. */
  kind: 'created' | 'updated' | 'state' | 'replayed';
  fromState: EventState | null;
  toState: EventState;
  attempt: number;
  status: number | null;
  error: string | null;
  durationMs: number | null;
  latenessMs: number | null;
  /** Free-form facts: changed fields, old and new fireAt, the node. */
  detail: Record<string, unknown> | null;
}

/** What the scheduler holds of an event due soon: enough to claim it (conditionally, at this version) and to line it up in its queue. */
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
  return {
    tenantId: e.tenantId,
    id: e.id,
    version: e.version,
    dueAt: e.dueAt,
    shard: e.shard,
    group: e.group,
    queue: e.queue,
  };
}
