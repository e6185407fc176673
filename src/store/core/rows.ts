/**
 * Row shapes as every backend returns them (snake_case; bigint as number) and their mapping to the
 * records of store.ts, written once. The event's JSON columns are text in every backend and are
 * parsed here, once per row read; the common empty values skip the parser.
 *
 * What differs between backends is how a tenant's, a destination's or a node's JSON column arrives
 * (`J`: text in SQLite, already parsed from jsonb in PostgreSQL): those rows are generic in it,
 * and jsonRowMappers binds their mapping to the backend's converter.
 */
import type { RetryPolicy } from '../../core/backoff.ts';
import type { DestinationRef, EventRecord, EventState, TransitionRecord } from '../../core/event.ts';
import { withKind } from '../../core/destination.ts';
import type {
  ApiKeyRecord,
  DestinationConfig,
  DestinationRecord,
  DestinationSecret,
  DueRef,
  LeaderLease,
  NodeRecord,
  ShardAssignment,
  TenantRecord,
} from '../store.ts';
import { secretsFromJson } from '../store.ts';

export interface TenantRow<J> {
  id: string;
  name: string;
  settings: J;
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

export interface DestinationRow<J> {
  tenant_id: string;
  name: string;
  config: J;
  /** DestinationSecret records, or bare strings as older versions stored. */
  secrets: J;
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
  type: string | null;
}

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

export interface NodeRow<J> {
  id: string;
  started_at: number;
  heartbeat_at: number;
  meta: J;
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
export function parseJson<T>(text: string): T {
  if (text === '{}') return {} as T;
  if (text === 'null') return null as T;
  return JSON.parse(text) as T;
}

/** How a backend turns a JSON column, as its driver returns it, into the value. */
export type JsonColumn<J> = <T>(value: J) => T;

/** The mappings of the rows with a backend-typed JSON column, bound to that backend's `json`. */
export function jsonRowMappers<J>(json: JsonColumn<J>) {
  return {
    tenantFromRow(r: TenantRow<J>): TenantRecord {
      return { id: r.id, name: r.name, settings: json<Record<string, unknown>>(r.settings), createdAt: r.created_at };
    },

    destinationFromRow(r: DestinationRow<J>): DestinationRecord {
      return {
        tenantId: r.tenant_id,
        name: r.name,
        config: withKind(json<DestinationConfig>(r.config)),
        secrets: secretsFromJson(json<unknown>(r.secrets)),
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      };
    },

    /** A tenant's signing_secrets column. */
    tenantSecretsFromColumn(secrets: J): DestinationSecret[] {
      return secretsFromJson(json<unknown>(secrets));
    },

    /** `nowMs` is the store's clock at the read, for the age. */
    nodeFromRow(r: NodeRow<J>, nowMs: number): NodeRecord {
      return {
        id: r.id,
        startedAt: r.started_at,
        heartbeatAt: r.heartbeat_at,
        ageMs: Math.max(0, nowMs - r.heartbeat_at),
        meta: json<Record<string, unknown>>(r.meta),
      };
    },
  };
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
    type: r.type,
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

export function dueRefFromRow(r: DueRefRow): DueRef {
  return {
    tenantId: r.tenant_id,
    id: r.id,
    version: r.version,
    dueAt: r.due_at,
    shard: r.shard,
    group: r.grp,
    queue: r.queue,
  };
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

export function leaderLeaseFromRow(r: LeaderLeaseRow): LeaderLease {
  return { nodeId: r.node_id, epoch: r.epoch, expiresAt: r.expires_at };
}

export function shardAssignmentFromRow(r: ShardAssignmentRow): ShardAssignment {
  return { shard: r.shard, nodeId: r.node_id, epoch: r.epoch };
}
