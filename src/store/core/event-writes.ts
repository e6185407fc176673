/**
 * What the event writes of every backend decide the same way: the record of a created event, the
 * checks of cancel / replay / update before their write, and what an update's patch changes. Each
 * backend's event-writes.ts keeps only its statements and how it runs them.
 */
import { ATTEMPT_OUTCOME_STATES, type EventRecord, type EventState } from '../../core/event.ts';
import { canonicalJson } from '../../core/ids.ts';
import { queueOf } from '../../core/queue.ts';
import {
  EVENT_CHANGES_MAX,
  type EventMutateParams,
  type EventMutateResult,
  type EventPatch,
  type NewEvent,
} from '../store.ts';
import { operationDetail } from './bulk-rows.ts';
import { eventFromRow, type EventRow } from './rows.ts';

/** Throws unless an attempt's outcome may move an executing event to `to`. */
export function checkAttemptTarget(to: string): void {
  if (!(ATTEMPT_OUTCOME_STATES as readonly string[]).includes(to))
    throw new RangeError(`eventRecordAttempts: cannot move executing to ${to}`);
}

/** JSON text of a string map; most events carry no headers or tags, so skip the serialiser then. */
export function jsonObject(map: Record<string, string>): string {
  for (const _ in map) return JSON.stringify(map);
  return '{}';
}

/** One string key for an event's (tenant, id), for maps over a batch's events. */
export function keyOf(tenantId: string, id: string): string {
  return `${tenantId}\u0000${id}`;
}

/** The record of `e` as its insert stored it, without reading it back. */
export function createdRecord(e: NewEvent, seq: number, now: number): EventRecord {
  return {
    tenantId: e.tenantId,
    id: e.id,
    shard: e.shard,
    seq,
    state: 'scheduled',
    version: 1,
    fireAt: e.fireAt,
    dueAt: e.fireAt,
    destination: e.destination,
    queue: queueOf(e.destination),
    payload: e.payload,
    headers: e.headers,
    group: e.group,
    retry: e.retry,
    expireAt: e.expireAt,
    tags: e.tags,
    type: e.type ?? null,
    attempts: 0,
    lastStatus: null,
    lastError: null,
    requestHash: e.requestHash,
    createdAt: now,
    updatedAt: now,
    leaseOwner: null,
    leaseUntil: null,
  };
}

/**
 * The checks of cancel, replay and update on the row read (after not_found): the version first (a
 * stale If-Match wins over the state), then the state. Null when the write may go ahead.
 */
export function mutateRefusal(
  current: EventRow,
  p: EventMutateParams,
  allowed: readonly EventState[],
  /** False for a cancel: it ends the event, so it applies whatever the trace holds. */
  boundedByChanges = true,
): EventMutateResult | null {
  if (p.expectedVersion !== undefined && current.version !== p.expectedVersion) {
    return { kind: 'version_mismatch', event: eventFromRow(current) };
  }
  if (!allowed.includes(current.state)) return { kind: 'wrong_state', event: eventFromRow(current) };
  if (boundedByChanges && current.version >= EVENT_CHANGES_MAX)
    return { kind: 'changes_exhausted', event: eventFromRow(current) };
  return null;
}

/** The columns an update writes (JSON columns as text) and the detail of its transition. */
export interface EventEdit {
  fireAt: number;
  dueAt: number;
  payload: string;
  headers: string;
  destination: string;
  queue: string;
  expireAt: number | null;
  type: string | null;
  requestHash: string;
  detail: { fields: string[]; fireAtBefore: number; fireAtAfter: number };
}

/** JSON equality that ignores key order, for the "which fields changed" list. */
function sameJson(stored: string, next: unknown): boolean {
  return canonicalJson(JSON.parse(stored)) === canonicalJson(next);
}

/**
 * What `patch` changes on the scheduled event `cur`; null when it changes nothing (same values,
 * same requestHash): then the update returns the event untouched, with no new version and no
 * transition.
 */
export function eventEdit(cur: EventRow, patch: EventPatch): EventEdit | null {
  const fields: string[] = [];
  const fireAt = patch.fireAt ?? cur.fire_at;
  if (fireAt !== cur.fire_at) fields.push('fireAt');
  const payload = patch.payload ?? cur.payload;
  if (payload !== cur.payload) fields.push('payload');
  let headers = cur.headers;
  if (patch.headers !== undefined && !sameJson(cur.headers, patch.headers)) {
    headers = JSON.stringify(patch.headers);
    fields.push('headers');
  }
  let destination = cur.destination;
  let queue = cur.queue;
  if (patch.destination !== undefined && !sameJson(cur.destination, patch.destination)) {
    destination = JSON.stringify(patch.destination);
    queue = queueOf(patch.destination);
    fields.push('destination');
  }
  const expireAt = patch.expireAt === undefined ? cur.expire_at : patch.expireAt;
  if (expireAt !== cur.expire_at) fields.push('expireAt');
  const type = patch.type === undefined ? cur.type : patch.type;
  if (type !== cur.type) fields.push('type');
  const requestHash = patch.requestHash ?? cur.request_hash;
  if (fields.length === 0 && requestHash === cur.request_hash) return null;
  return {
    fireAt,
    // A scheduled event fires at fireAt; after a replay it was due now, and an explicit new
    // fireAt takes over again.
    dueAt: fireAt !== cur.fire_at ? fireAt : cur.due_at,
    payload,
    headers,
    destination,
    queue,
    expireAt,
    type,
    requestHash,
    detail: { fields, fireAtBefore: cur.fire_at, fireAtAfter: fireAt },
  };
}

/** A cancel's transition detail: the operation that made it (bulk) and its reason, or null. */
export function cancelDetail(p: Pick<EventMutateParams, 'operation' | 'reason'>): Record<string, unknown> | null {
  const detail: Record<string, unknown> = p.reason === undefined ? {} : { reason: p.reason };
  const withOperation = p.operation ? operationDetail(detail, p.operation) : detail;
  return Object.keys(withOperation).length === 0 ? null : withOperation;
}
