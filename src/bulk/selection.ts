/**
 * What a bulk operation selects and what it does to each event, pure: the filter and the action
 * as stored with the job, the states each action applies to, and the change it makes. Shared by
 * the dry run (service.ts) and the job (runner.ts), with the page read of page.ts, so both see
 * the same events.
 *
 * Selection (page.ts) walks eventList (store/event-list-plan.ts) with the filter's state, destination,
 * group, type and fireAt range, newest first by creation, a page at a time with its cursor; tags
 * are checked on the rows of each page (every tag given must be on the event with that value).
 * The cursor is by creation order, which no action changes, so a job that shifts or redirects
 * the events it walks never meets one twice.
 */
import { TIME_MS_MAX } from '../core/duration.ts';
import type { EventRecord, EventState } from '../core/event.ts';
import { sha256Hex } from '../core/ids.ts';
import type { BulkChange, EventPatch } from '../store/store.ts';

/** A bulk filter as stored with its job (times in ms). */
export interface BulkFilter {
  state?: EventState;
  destination?: string;
  group?: string;
  type?: string;
  tags?: Record<string, string>;
  fireAtFromMs?: number;
  fireAtToMs?: number;
}

export type BulkAction =
  | { kind: 'cancel' }
  | { kind: 'replay' }
  | { kind: 'shift'; shiftMs: number }
  | { kind: 'redirect'; destination: string };

/** The states each action applies to; events in other states are skipped without a write. */
const APPLIES_TO: Record<BulkAction['kind'], readonly EventState[]> = {
  cancel: ['scheduled', 'awaiting_retry'],
  replay: ['archived', 'discarded'],
  shift: ['scheduled'],
  redirect: ['scheduled'],
};

/** The operation a transition names: `bulk_cancel`, `bulk_replay`, `bulk_shift`, `bulk_redirect`. */
export function bulkOperation(action: BulkAction): string {
  return `bulk_${action.kind}`;
}

/** Whether the action applies to an event in its current state. */
export function bulkApplies(action: BulkAction, e: EventRecord): boolean {
  return APPLIES_TO[action.kind].includes(e.state);
}

/**
 * The change the action makes to `e` at the version read, or null when it does not apply. A
 * shift keeps the expiry window and clamps to the times Belfry accepts; like a PATCH, a shift or
 * a redirect changes a client-named event's request hash, so repeating its create answers 409.
 */
export function bulkChange(action: BulkAction, e: EventRecord, jobId: string): BulkChange | null {
  if (!bulkApplies(action, e)) return null;
  if (action.kind === 'cancel' || action.kind === 'replay') return { id: e.id, version: e.version, kind: action.kind };
  const patch: EventPatch = e.requestHash === '' ? {} : { requestHash: sha256Hex(`patched:${e.requestHash}:${jobId}`) };
  if (action.kind === 'shift') {
    patch.fireAt = clampTime(e.fireAt + action.shiftMs);
    if (e.expireAt !== null) patch.expireAt = clampTime(e.expireAt + action.shiftMs);
  } else {
    patch.destination = { name: action.destination };
  }
  return { id: e.id, version: e.version, kind: 'update', patch };
}

function clampTime(ms: number): number {
  return Math.max(0, Math.min(ms, TIME_MS_MAX));
}
