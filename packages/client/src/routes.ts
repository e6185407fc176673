/**
 * The client's route table and wire types.
 *
 * Every call the client makes is one entry of ROUTES (method and OpenAPI path). A test compares
 * this table with the API's own `GET /openapi.json` both ways, so a route added to the API but not
 * to the client (or the other way round) fails the build.
 *
 * The request and response types are those of wire.ts, generated from the very TypeBox schemas
 * that validate and serialise the API (src/api/schemas) by scripts/wire-types.ts: the client
 * compiles against the server's schemas without importing any of the server.
 */
import type * as W from './wire.ts';

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
  pullSettle: route('POST', '/v1/events/settle'),
  pullExtend: route('POST', '/v1/events/{id}/extend'),
} as const satisfies Record<string, Route>;

export type Operation = keyof typeof ROUTES;

/** `fireAt` may also be a Date: JSON.stringify sends it as RFC 3339. */
type WithDateFireAt<T extends { fireAt?: unknown }> = Omit<T, 'fireAt'> & { fireAt?: T['fireAt'] | Date };

// ---- recurring schedules ----
export type Schedule = W.ScheduleJson;
export type ScheduleCreate = W.ScheduleCreateBody;
export type SchedulePatch = W.SchedulePatchBody;
export type SchedulePreviewRequest = W.SchedulePreviewBody;
export type SchedulePreview = W.SchedulePreviewResponse;
export type ScheduleListPage = W.ScheduleListResponse;
export type ScheduleListFilter = Omit<W.ScheduleListQuery, 'limit'> & { limit?: number | string };

// ---- Kafka sources ----
export type Source = W.SourceJson;
export type SourcePut = W.SourcePutBody;
export type SourceListPage = W.SourceListResponse;
export type SourceListFilter = Omit<W.SourceListQuery, 'limit'> & { limit?: number | string };

// ---- events ----
export type BelfryEvent = W.EventJson;
export type EventState = BelfryEvent['state'];
export type EventCreate = WithDateFireAt<W.EventCreateBody>;
export type EventPatch = WithDateFireAt<W.EventPatchBody>;
export type EventBatchResult = W.EventBatchResponse['results'][number];
export type EventListPage = W.EventListResponse;
/** The list filter; `limit` (page size, 1 to 1000) may be a number, times may be Dates. */
export type EventListFilter = Omit<W.EventListQuery, 'limit' | 'from' | 'to'> & {
  limit?: number | string;
  from?: string | number | Date;
  to?: string | number | Date;
};
export type Transition = W.TransitionJson;
export type TransitionPage = W.TransitionListResponse;
export type TransitionQuery = Omit<W.TransitionListQuery, 'limit'> & { limit?: number | string };

// ---- pull delivery ----
export type PullClaimRequest = W.PullClaimBody;
export type PullClaimResult = W.PullClaimResponse;
/** A claimed event of a pull destination, with the receipt that acks, nacks or extends it. */
export type ClaimedEvent = W.ClaimedEventJson;
export type PullAck = W.PullAckBody;
export type PullNack = W.PullNackBody;
/** Many acks and nacks at once (`PullClient.settle`). */
export type PullSettle = W.PullSettleBody;
export type PullSettled = W.PullSettledJson;
export type PullSettleResult = W.PullSettleResponse;
export type PullExtend = W.PullExtendBody;
export type PullExtended = W.PullExtendResponse;

// ---- bulk and forecast ----
export type BulkRequest = W.BulkBody;
export type BulkDryRun = W.BulkDryRunResponse;
export type BulkAcceptedJob = W.BulkAccepted;
export type BulkJob = W.BulkJobJson;
export type ForecastQueryParams = W.ForecastQuery;
export type Forecast = W.ForecastResponse;

// ---- destinations ----
type DestinationPutSchema = W.DestinationPutBody;
/** A destination body by kind; `kind` may be left out for a webhook (the API defaults it to `http`). */
export type DestinationPut =
  | Exclude<DestinationPutSchema, { kind: 'http' }>
  | (Omit<Extract<DestinationPutSchema, { kind: 'http' }>, 'kind'> & { kind?: 'http' });
export type Destination = W.DestinationJson;
export type DestinationList = W.DestinationListResponse;
/** A destination's health as the answering node sees it (GET /v1/destinations/{name}/health). */
export type DestinationHealth = W.DestinationHealthJson;
export type SecretRotate = W.SecretRotateBody;
export type SecretRotated = W.SecretRotatedJson;

// ---- tenants, keys, limits ----
export type TenantCreate = W.TenantCreateBody;
export type TenantCreated = W.TenantCreatedJson;
export type Tenant = W.TenantJson;
export type TenantList = W.TenantListResponse;
/** Limits, durability, missedAfter, retention: `null` restores the node's default. */
export type TenantPatch = W.TenantPatchBody;
export type TenantDetail = W.TenantDetailJson;
export type TenantSecretRotated = W.TenantSecretRotatedJson;
export type ApiKey = W.ApiKeyJson;
export type ApiKeyList = W.ApiKeyListResponse;
export type ApiKeyCreated = W.ApiKeyCreatedJson;
export type KeyRotate = W.KeyRotateBody;
export type ApiKeyRotated = W.ApiKeyRotatedJson;
export type Limits = W.LimitsJson;

// ---- operations ----
export type Health = W.HealthResponse;
export type Readiness = W.ReadyResponse;
export type Cluster = W.ClusterResponse;
/** One detail of an error: `field` and `message`, and what else the error names (`state`, `limit`, `version`). */
export type ApiErrorDetail = W.ErrorDetail & { [key: string]: unknown };
