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

export const TERMINAL_STATES: readonly EventState[] = ['succeeded', 'discarded', 'archived', 'canceled'];
/** States the scheduler may fire from. */
export const FIREABLE_STATES: readonly EventState[] = ['scheduled', 'awaiting_retry'];
/** States a user may cancel from. */
export const CANCELABLE_STATES: readonly EventState[] = ['scheduled', 'awaiting_retry'];
/** States a user may replay from. */
export const REPLAYABLE_STATES: readonly EventState[] = ['archived', 'discarded'];

export function isTerminal(state: EventState): boolean {
  return TERMINAL_STATES.includes(state);
}

const ALLOWED: Record<EventState, readonly EventState[]> = {
  scheduled: ['executing', 'canceled', 'archived'],
  executing: ['succeeded', 'discarded', 'awaiting_retry', 'archived'],
  awaiting_retry: ['executing', 'canceled', 'archived'],
  succeeded: [],
  discarded: ['scheduled'],
  archived: ['scheduled'],
  canceled: [],
};

export function canTransition(from: EventState, to: EventState): boolean {
  return ALLOWED[from].includes(to);
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
