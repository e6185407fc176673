/**
 * Row shapes as SQLite returns them (snake_case, JSON as text) and their mapping to the records of
 * store.ts. JSON columns are parsed once per row read; the common empty values skip the parser.
 */
import type { RetryPolicy } from '../../core/backoff.ts';
import type { DestinationRef, EventRecord, EventState, TransitionRecord } from '../../core/event.ts';
import type {
  ApiKeyRecord,
  DestinationConfig,
  DestinationRecord,
  DueRef,
  LeaderLease,
  NodeRecord,
  ShardAssignment,
  TenantRecord,
} from '../store.ts';
import { secretsFromJson } from '../store.ts';

export interface TenantRow {
  id: string;
  name: string;
  settings: string;
  created_at: number;
}

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  hash: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

export interface DestinationRow {
  tenant_id: string;
  name: string;
  config: string;
  secrets: string;
  created_at: number;
  updated_at: number;
}

export interface EventRow {
  seq: number;
  tenant_id: string;
  id: string;
  shard: number;
  state: EventState;
  version: number;
  fire_at: number;
  due_at: number;
  destination: string;
  payload: string;
  headers: string;
  grp: string | null;
  retry: string | null;
  expire_at: number | null;
  tags: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  request_hash: string;
  created_at: number;
  updated_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  queue: string;
}

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
];

/** How far one eventList walk went: entries examined and the lowest seq among them (null when none). */
export interface ListWalkRow {
  examined: number;
  last_seq: number | null;
}

export interface DueRefRow {
  tenant_id: string;
  id: string;
  version: number;
  due_at: number;
  shard: number;
  grp: string | null;
  queue: string;
}

export interface RescueCandidateRow {
  tenant_id: string;
  id: string;
  version: number;
  lease_owner: string | null;
  expired: number;
}

export interface TransitionRow {
  tenant_id: string;
  event_id: string;
  seq: number;
  at: number;
  kind: TransitionRecord['kind'];
  from_state: EventState | null;
  to_state: EventState;
  attempt: number;
  status: number | null;
  error: string | null;
  duration_ms: number | null;
  lateness_ms: number | null;
  detail: string | null;
}

export interface NodeRow {
  id: string;
  started_at: number;
  heartbeat_at: number;
  meta: string;
}

export interface LeaderLeaseRow {
  node_id: string;
  epoch: number;
  expires_at: number;
}

export interface ShardAssignmentRow {
  shard: number;
  node_id: string;
  epoch: number;
}

/** JSON.parse with fast paths for the values most rows hold. */
function parseJson<T>(text: string): T {
  if (text === '{}') return {} as T;
  if (text === 'null') return null as T;
  return JSON.parse(text) as T;
}

export function tenantFromRow(r: TenantRow): TenantRecord {
  return { id: r.id, name: r.name, settings: parseJson(r.settings), createdAt: r.created_at };
}

export function apiKeyFromRow(r: ApiKeyRow): ApiKeyRecord {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    hash: r.hash,
    prefix: r.prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

export function destinationFromRow(r: DestinationRow): DestinationRecord {
  return {
    tenantId: r.tenant_id,
    name: r.name,
    config: parseJson<DestinationConfig>(r.config),
    secrets: secretsFromJson(parseJson<unknown>(r.secrets)),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function eventFromRow(r: EventRow): EventRecord {
  return {
    tenantId: r.tenant_id,
    id: r.id,
    shard: r.shard,
    seq: r.seq,
    state: r.state,
    version: r.version,
    fireAt: r.fire_at,
    dueAt: r.due_at,
    destination: parseJson<DestinationRef>(r.destination),
    queue: r.queue,
    payload: r.payload,
    headers: parseJson<Record<string, string>>(r.headers),
    group: r.grp,
    retry: r.retry === null ? null : parseJson<RetryPolicy | null>(r.retry),
    expireAt: r.expire_at,
    tags: parseJson<Record<string, string>>(r.tags),
    attempts: r.attempts,
    lastStatus: r.last_status,
    lastError: r.last_error,
    requestHash: r.request_hash,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    leaseOwner: r.lease_owner,
    leaseUntil: r.lease_until,
  };
}

/**
 * The event a claim made of `t` (the row as read just before the claim's UPDATE): the same row
 * with the columns that UPDATE sets (SQL.eventClaim), without reading it back.
 */
export function claimedEventFromTuple(t: EventTuple, owner: string, leaseUntil: number, now: number): EventRecord {
  return {
    tenantId: t[1],
    id: t[2],
    shard: t[3],
    seq: t[0],
    state: 'executing',
    version: t[5] + 1,
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
    attempts: t[15] + 1,
    lastStatus: t[16],
    lastError: t[17],
    requestHash: t[18],
    createdAt: t[19],
    updatedAt: now,
    leaseOwner: owner,
    leaseUntil,
  };
}

export function dueRefFromRow(r: DueRefRow): DueRef {
  return { tenantId: r.tenant_id, id: r.id, version: r.version, dueAt: r.due_at, shard: r.shard, group: r.grp, queue: r.queue };
}

export function transitionFromRow(r: TransitionRow): TransitionRecord {
  return {
    tenantId: r.tenant_id,
    eventId: r.event_id,
    seq: r.seq,
    at: r.at,
    kind: r.kind,
    fromState: r.from_state,
    toState: r.to_state,
    attempt: r.attempt,
    status: r.status,
    error: r.error,
    durationMs: r.duration_ms,
    latenessMs: r.lateness_ms,
    detail: r.detail === null ? null : parseJson<Record<string, unknown>>(r.detail),
  };
}

/** `nowMs` is the store's clock at the read, for the age. */
export function nodeFromRow(r: NodeRow, nowMs: number): NodeRecord {
  return {
    id: r.id,
    startedAt: r.started_at,
    heartbeatAt: r.heartbeat_at,
    ageMs: Math.max(0, nowMs - r.heartbeat_at),
    meta: parseJson<Record<string, unknown>>(r.meta),
  };
}

export function leaderLeaseFromRow(r: LeaderLeaseRow): LeaderLease {
  return { nodeId: r.node_id, epoch: r.epoch, expiresAt: r.expires_at };
}

export function shardAssignmentFromRow(r: ShardAssignmentRow): ShardAssignment {
  return { shard: r.shard, nodeId: r.node_id, epoch: r.epoch };
}
