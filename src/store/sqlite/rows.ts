/**
 * The rows of the SQLite backend: JSON columns arrive as text, so the shared mappings of
 * ../core/rows.ts parse them; and the rows only this backend reads (a raw claim check, rescue
 * candidates).
 */
import type { RetryPolicy } from '../../core/backoff.ts';
import type { DestinationRef, EventRecord, EventState } from '../../core/event.ts';
import * as core from '../core/rows.ts';
import { parseJson } from '../core/rows.ts';

export type TenantRow = core.TenantRow<string>;
export type DestinationRow = core.DestinationRow<string>;
export type NodeRow = core.NodeRow<string>;

export const { tenantFromRow, destinationFromRow, tenantSecretsFromColumn, nodeFromRow } =
  core.jsonRowMappers<string>(parseJson);

/** An EventRow as a raw statement returns it: an array in EVENT_COLUMNS order. */
export type EventTuple = [
  seq: number,
  tenantId: string,
  id: string,
  shard: number,
  state: EventState,
  version: number,
  fireAt: number,
  dueAt: number,
  destination: string,
  payload: string,
  headers: string,
  grp: string | null,
  retry: string | null,
  expireAt: number | null,
  tags: string,
  attempts: number,
  lastStatus: number | null,
  lastError: string | null,
  requestHash: string,
  createdAt: number,
  updatedAt: number,
  leaseOwner: string | null,
  leaseUntil: number | null,
  queue: string,
  type: string | null,
];

export interface RescueCandidateRow {
  tenant_id: string;
  id: string;
  version: number;
  lease_owner: string | null;
  expired: number;
}

/** The event of a raw row (EventTuple), as eventFromRow reads an object row. */
export function eventFromTuple(t: EventTuple): EventRecord {
  return {
    tenantId: t[1],
    id: t[2],
    shard: t[3],
    seq: t[0],
    state: t[4],
    version: t[5],
    fireAt: t[6],
    dueAt: t[7],
    destination: parseJson<DestinationRef>(t[8]),
    queue: t[23],
    payload: t[9],
    headers: parseJson<Record<string, string>>(t[10]),
    group: t[11],
    retry: t[12] === null ? null : parseJson<RetryPolicy | null>(t[12]),
    expireAt: t[13],
    tags: parseJson<Record<string, string>>(t[14]),
    type: t[24],
    attempts: t[15],
    lastStatus: t[16],
    lastError: t[17],
    requestHash: t[18],
    createdAt: t[19],
    updatedAt: t[20],
    leaseOwner: t[21],
    leaseUntil: t[22],
  };
}

/**
 * The event a claim made of `t` (the row as read just before the claim's UPDATE): the same row
 * with the columns that UPDATE sets (SQL.eventClaim, SQL.pullClaim), without reading it back.
 */
export function claimedEventFromTuple(t: EventTuple, owner: string, leaseUntil: number, now: number): EventRecord {
  return {
    ...eventFromTuple(t),
    state: 'executing',
    version: t[5] + 1,
    attempts: t[15] + 1,
    updatedAt: now,
    leaseOwner: owner,
    leaseUntil,
  };
}

/**
 * The event a pull settle made of `t` (the row as read just before the settle's UPDATE,
 * SQL.pullSettle): the same row with the columns that UPDATE sets, without reading it back.
 */
export function settledEventFromTuple(
  t: EventTuple,
  to: EventState,
  retryAt: number | null,
  lastError: string | null,
  now: number,
): EventRecord {
  return {
    ...eventFromTuple(t),
    state: to,
    version: t[5] + 1,
    dueAt: retryAt ?? t[7],
    lastError,
    updatedAt: now,
    leaseOwner: null,
    leaseUntil: null,
  };
}
