/**
 * The client's route table and wire types.
 *
 * Every call the client makes is one entry of ROUTES (method and OpenAPI path). A test compares
 * this table with the API's own `GET /openapi.json` both ways, so a route added to the API but not
 * to the client (or the other way round) fails the build.
 *
 * The request and response types are `Static<>` of the very TypeBox schemas that validate and
 * serialise the API (src/api/schemas), imported as types only: the client compiles against the
 * server's schemas but loads none of the server's code at run time.
 */
import type { Static } from 'typebox';
import type { BulkAccepted, BulkBody, BulkDryRunResponse, BulkJobJson } from '../api/schemas/bulk.ts';
import type { ClusterResponse } from '../api/schemas/cluster.ts';
import type { ErrorDetail } from '../api/schemas/common.ts';
import type {
  DestinationHealthJson,
  DestinationJson,
  DestinationListResponse,
  DestinationPutBody,
  SecretRotateBody,
  SecretRotatedJson,
} from '../api/schemas/destinations.ts';
import type {
  EventBatchResponse,
  EventCreateBody,
  EventJson,
  EventListQuery,
  EventListResponse,
  EventPatchBody,
  TransitionJson,
  TransitionListQuery,
  TransitionListResponse,
} from '../api/schemas/events.ts';
import type { ForecastQuery, ForecastResponse } from '../api/schemas/forecast.ts';
import type { HealthResponse, ReadyResponse } from '../api/schemas/health.ts';
import type { LimitsJson } from '../api/schemas/limits.ts';
import type {
  ScheduleCreateBody,
  ScheduleJson,
  ScheduleListQuery,
  ScheduleListResponse,
  SchedulePatchBody,
  SchedulePreviewBody,
  SchedulePreviewResponse,
} from '../api/schemas/schedules.ts';
import type { SourceJson, SourceListQuery, SourceListResponse, SourcePutBody } from '../api/schemas/sources.ts';
import type {
  ClaimedEventJson,
  PullAckBody,
  PullClaimBody,
  PullClaimResponse,
  PullExtendBody,
  PullExtendResponse,
  PullNackBody,
} from '../api/schemas/pull.ts';
import type {
  ApiKeyCreatedJson,
  ApiKeyJson,
  ApiKeyListResponse,
  ApiKeyRotatedJson,
  KeyRotateBody,
  TenantCreateBody,
  TenantCreatedJson,
  TenantDetailJson,
  TenantJson,
  TenantListResponse,
  TenantPatchInput,
  TenantSecretRotatedJson,
} from '../api/schemas/tenants.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Route {
  method: HttpMethod;
  /** The path as the OpenAPI document names it, with `{param}` placeholders. */
  path: string;
  /**
   * Safe to send again when the first try's outcome is unknown (a network error, a timeout, a
   * 503): reading, PUT, DELETE, PATCH, and creating events (the client always sends an id).
   * A 429 is retried for every route: the API refuses it before doing anything.
   */
  idempotent: boolean;
}

const route = (method: HttpMethod, path: string, idempotent = method !== 'POST'): Route => ({
  method,
  path,
  idempotent,
});

/** Every API route the client calls, by operation. */
export const ROUTES = {
  // events
  eventCreate: route('POST', '/v1/events', true),
  eventBatch: route('POST', '/v1/events/batch', true),
  eventGet: route('GET', '/v1/events/{id}'),
  eventPatch: route('PATCH', '/v1/events/{id}'),
  eventCancel: route('DELETE', '/v1/events/{id}'),
  eventList: route('GET', '/v1/events'),
  eventTransitions: route('GET', '/v1/events/{id}/transitions'),
  eventReplay: route('POST', '/v1/events/{id}/replay'),
  // bulk operations and the forecast
  bulkCreate: route('POST', '/v1/events/bulk'),
  bulkGet: route('GET', '/v1/bulk/{id}'),
  forecastGet: route('GET', '/v1/forecast'),
  // destinations
  destinationPut: route('PUT', '/v1/destinations/{name}'),
  destinationGet: route('GET', '/v1/destinations/{name}'),
  destinationDelete: route('DELETE', '/v1/destinations/{name}'),
  destinationList: route('GET', '/v1/destinations'),
  destinationRotateSecret: route('POST', '/v1/destinations/{name}/rotate-secret'),
  destinationHealth: route('GET', '/v1/destinations/{name}/health'),
  // the calling tenant's own account
  limitsGet: route('GET', '/v1/limits'),
  keyCreate: route('POST', '/v1/keys'),
  keyList: route('GET', '/v1/keys'),
  keyRevoke: route('DELETE', '/v1/keys/{keyId}'),
  keyRotate: route('POST', '/v1/keys/{keyId}/rotate'),
  signingSecretRotate: route('POST', '/v1/signing-secret/rotate'),
  // admin (the admin key)
  tenantCreate: route('POST', '/v1/tenants'),
  tenantList: route('GET', '/v1/tenants'),
  tenantGet: route('GET', '/v1/tenants/{tenantId}'),
  tenantPatch: route('PATCH', '/v1/tenants/{tenantId}'),
  tenantKeyCreate: route('POST', '/v1/tenants/{tenantId}/keys'),
  tenantKeyList: route('GET', '/v1/tenants/{tenantId}/keys'),
  tenantKeyRevoke: route('DELETE', '/v1/tenants/{tenantId}/keys/{keyId}'),
  tenantKeyRotate: route('POST', '/v1/tenants/{tenantId}/keys/{keyId}/rotate'),
  tenantSigningSecretRotate: route('POST', '/v1/tenants/{tenantId}/signing-secret/rotate'),
  clusterGet: route('GET', '/v1/cluster'),
  // operations
  healthz: route('GET', '/healthz'),
  readyz: route('GET', '/readyz'),
  metrics: route('GET', '/metrics'),
  openapi: route('GET', '/openapi.json'),
  // recurring schedules (a create carries its id when given, and the same id and body again is 200)
  scheduleCreate: route('POST', '/v1/schedules'),
  schedulePreview: route('POST', '/v1/schedules/preview', true),
  scheduleList: route('GET', '/v1/schedules'),
  scheduleGet: route('GET', '/v1/schedules/{id}'),
  schedulePatch: route('PATCH', '/v1/schedules/{id}'),
  scheduleDelete: route('DELETE', '/v1/schedules/{id}'),
  scheduleTrigger: route('POST', '/v1/schedules/{id}/trigger'),
  // Kafka sources (schedule requests read from a topic)
  sourcePut: route('PUT', '/v1/sources/{name}'),
  sourceGet: route('GET', '/v1/sources/{name}'),
  sourceDelete: route('DELETE', '/v1/sources/{name}'),
  sourceList: route('GET', '/v1/sources'),
  // pull delivery (a claim hands events out: never sent twice; ack, nack and extend answer 409 when
  // a first try applied, so they are not retried blindly either)
  pullClaim: route('POST', '/v1/destinations/{name}/claim'),
  pullAck: route('POST', '/v1/events/{id}/ack'),
  pullNack: route('POST', '/v1/events/{id}/nack'),
  pullExtend: route('POST', '/v1/events/{id}/extend'),
} as const satisfies Record<string, Route>;

export type Operation = keyof typeof ROUTES;

/** `fireAt` may also be a Date: JSON.stringify sends it as RFC 3339. */
type WithDateFireAt<T extends { fireAt?: unknown }> = Omit<T, 'fireAt'> & { fireAt?: T['fireAt'] | Date };

// ---- recurring schedules ----
export type Schedule = Static<typeof ScheduleJson>;
export type ScheduleCreate = Static<typeof ScheduleCreateBody>;
export type SchedulePatch = Static<typeof SchedulePatchBody>;
export type SchedulePreviewRequest = Static<typeof SchedulePreviewBody>;
export type SchedulePreview = Static<typeof SchedulePreviewResponse>;
export type ScheduleListPage = Static<typeof ScheduleListResponse>;
export type ScheduleListFilter = Omit<Static<typeof ScheduleListQuery>, 'limit'> & { limit?: number | string };

// ---- Kafka sources ----
export type Source = Static<typeof SourceJson>;
export type SourcePut = Static<typeof SourcePutBody>;
export type SourceListPage = Static<typeof SourceListResponse>;
export type SourceListFilter = Omit<Static<typeof SourceListQuery>, 'limit'> & { limit?: number | string };

// ---- events ----
export type BelfryEvent = Static<typeof EventJson>;
export type EventState = BelfryEvent['state'];
export type EventCreate = WithDateFireAt<Static<typeof EventCreateBody>>;
export type EventPatch = WithDateFireAt<Static<typeof EventPatchBody>>;
export type EventBatchResult = Static<typeof EventBatchResponse>['results'][number];
export type EventListPage = Static<typeof EventListResponse>;
/** The list filter; `limit` (page size, 1 to 1000) may be a number, times may be Dates. */
export type EventListFilter = Omit<Static<typeof EventListQuery>, 'limit' | 'from' | 'to'> & {
  limit?: number | string;
  from?: string | number | Date;
  to?: string | number | Date;
};
export type Transition = Static<typeof TransitionJson>;
export type TransitionPage = Static<typeof TransitionListResponse>;
export type TransitionQuery = Omit<Static<typeof TransitionListQuery>, 'limit'> & { limit?: number | string };

// ---- pull delivery ----
export type PullClaimRequest = Static<typeof PullClaimBody>;
export type PullClaimResult = Static<typeof PullClaimResponse>;
/** A claimed event of a pull destination, with the receipt that acks, nacks or extends it. */
export type ClaimedEvent = Static<typeof ClaimedEventJson>;
export type PullAck = Static<typeof PullAckBody>;
export type PullNack = Static<typeof PullNackBody>;
export type PullExtend = Static<typeof PullExtendBody>;
export type PullExtended = Static<typeof PullExtendResponse>;

// ---- bulk and forecast ----
export type BulkRequest = Static<typeof BulkBody>;
export type BulkDryRun = Static<typeof BulkDryRunResponse>;
export type BulkAcceptedJob = Static<typeof BulkAccepted>;
export type BulkJob = Static<typeof BulkJobJson>;
export type ForecastQueryParams = Static<typeof ForecastQuery>;
export type Forecast = Static<typeof ForecastResponse>;

// ---- destinations ----
type DestinationPutSchema = Static<typeof DestinationPutBody>;
/** A destination body by kind; `kind` may be left out for a webhook (the API defaults it to `http`). */
export type DestinationPut =
  | Exclude<DestinationPutSchema, { kind: 'http' }>
  | (Omit<Extract<DestinationPutSchema, { kind: 'http' }>, 'kind'> & { kind?: 'http' });
export type Destination = Static<typeof DestinationJson>;
export type DestinationList = Static<typeof DestinationListResponse>;
/** A destination's health as the answering node sees it (GET /v1/destinations/{name}/health). */
export type DestinationHealth = Static<typeof DestinationHealthJson>;
export type SecretRotate = Static<typeof SecretRotateBody>;
export type SecretRotated = Static<typeof SecretRotatedJson>;

// ---- tenants, keys, limits ----
export type TenantCreate = Static<typeof TenantCreateBody>;
export type TenantCreated = Static<typeof TenantCreatedJson>;
export type Tenant = Static<typeof TenantJson>;
export type TenantList = Static<typeof TenantListResponse>;
/** The limits and retention objects are built from tables (LIMIT_SPECS), so their schema's type is the hand-written one beside it. */
export type TenantPatch = TenantPatchInput;
export type TenantDetail = Static<typeof TenantDetailJson>;
export type TenantSecretRotated = Static<typeof TenantSecretRotatedJson>;
export type ApiKey = Static<typeof ApiKeyJson>;
export type ApiKeyList = Static<typeof ApiKeyListResponse>;
export type ApiKeyCreated = Static<typeof ApiKeyCreatedJson>;
export type KeyRotate = Static<typeof KeyRotateBody>;
export type ApiKeyRotated = Static<typeof ApiKeyRotatedJson>;
export type Limits = Static<typeof LimitsJson>;

// ---- operations ----
export type Health = Static<typeof HealthResponse>;
export type Readiness = Static<typeof ReadyResponse>;
export type Cluster = Static<typeof ClusterResponse>;
/** One detail of an error: `field` and `message`, and what else the error names (`state`, `limit`, `version`). */
export type ApiErrorDetail = Static<typeof ErrorDetail> & { [key: string]: unknown };
