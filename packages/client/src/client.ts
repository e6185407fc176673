/**
 * BelfryClient: a typed client of every Belfry API route (see ROUTES), grouped by resource.
 *
 *   const belfry = new BelfryClient({ baseUrl: 'http://127.0.0.1:7070', apiKey: process.env.BELFRY_KEY! });
 *   const event = await belfry.events.create({ destination: 'orders', delay: '30m', payload: { orderId: 8812 } });
 *   for await (const e of belfry.events.list({ state: 'archived' })) console.log(e.id);
 *
 * Creating an event is idempotent end to end: the client gives every event without an `id` one of
 * its own (time-sortable, as the server would) before the first try, so a create retried after a
 * network error or a 503 finds the event it made (200) instead of making a second one.
 */
import { newSortableId } from './ids.ts';
import {
  ROUTES,
  type ApiKeyCreated,
  type ApiKeyList,
  type ApiKeyRotated,
  type BelfryEvent,
  type BulkAcceptedJob,
  type BulkDryRun,
  type BulkJob,
  type BulkRequest,
  type ClaimedEvent,
  type Cluster,
  type PullClaimRequest,
  type PullClaimResult,
  type PullExtend,
  type PullExtended,
  type PullNack,
  type PullSettle,
  type PullSettled,
  type PullSettleResult,
  type Destination,
  type DestinationHealth,
  type DestinationPut,
  type EventBatchResult,
  type EventCreate,
  type EventListFilter,
  type EventListPage,
  type EventPatch,
  type Forecast,
  type ForecastQueryParams,
  type Health,
  type KeyRotate,
  type Limits,
  type Readiness,
  type Schedule,
  type Source,
  type SourceListFilter,
  type SourceListPage,
  type SourcePut,
  type ScheduleCreate,
  type ScheduleListFilter,
  type ScheduleListPage,
  type SchedulePatch,
  type SchedulePreview,
  type SchedulePreviewRequest,
  type SecretRotate,
  type SecretRotated,
  type Tenant,
  type TenantCreate,
  type TenantCreated,
  type TenantDetail,
  type TenantPatch,
  type TenantSecretRotated,
  type Transition,
  type TransitionPage,
  type TransitionQuery,
} from './routes.ts';
import { BelfryApiError, Transport, type CallInput, type TransportOptions } from './transport.ts';
import { Consumer, type ConsumerOptions } from './consumer.ts';
import { CreateBatcher, type BatchingOptions } from './batcher.ts';

export interface BelfryClientOptions extends TransportOptions {
  /**
   * Concurrent `events.create()` calls share one `POST /v1/events/batch` (see batcher.ts): on by
   * default (`{ maxDelayMs: 2, maxEvents: 500 }`); `false` sends each create on its own.
   */
  batching?: BatchingOptions | false;
}

/** Conditions of an edit, cancel or replay: `ifMatch` is the event's `version` (412 when it moved on). */
export interface IfMatch {
  ifMatch?: number | string;
}

/** An event with the outcome of its create: `created` false when the id already existed with this body. */
export interface CreatedEvent {
  event: BelfryEvent;
  created: boolean;
}

function ifMatchHeaders(opts?: IfMatch): Record<string, string> | undefined {
  return opts?.ifMatch === undefined ? undefined : { 'if-match': `"${opts.ifMatch}"` };
}

/** Pages through a cursor-paged list, one page in memory at a time. */
async function* paged<P extends { nextCursor: string | null }, T>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  items: (page: P) => T[],
  cursor?: string,
): AsyncGenerator<T> {
  for (;;) {
    const page = await fetchPage(cursor);
    yield* items(page);
    if (page.nextCursor === null) return;
    cursor = page.nextCursor;
  }
}

/** Events: schedule, read, change, cancel, list, trace, replay. */
export class EventsClient {
  constructor(
    private readonly t: Transport,
    /** Null when batching is off. */
    private readonly batcher: CreateBatcher | null = null,
  ) {}

  /**
   * Schedules one event (idempotent: see the file header). With batching on (the default), the
   * creates made meanwhile share one batch request; each settles as its own create would.
   */
  async create(event: EventCreate): Promise<BelfryEvent> {
    return (await this.createWithOutcome(event)).event;
  }

  /** As create, and whether this call made the event (201) or found it already there (200). */
  async createWithOutcome(event: EventCreate): Promise<CreatedEvent> {
    const id = event.id ?? newSortableId(Date.now());
    const body = event.id === undefined ? { ...event, id } : event;
    if (this.batcher) return this.batcher.create(id, body);
    const res = await this.t.call<BelfryEvent>(ROUTES.eventCreate, { body });
    return { event: res.body, created: res.status === 201 };
  }

  /**
   * Schedules up to the tenant's batchEventsMax events; one result per event, in order. Ids are
   * added as for create. With `minimal`, a created or existing result holds the event's `id` and
   * `version` instead of the whole event (`Prefer: return=minimal`): a tenth of the bytes to send
   * and parse, for loaders that do not need the echo.
   */
  async batch(events: EventCreate[], opts: { minimal?: boolean } = {}): Promise<EventBatchResult[]> {
    const now = Date.now();
    const body = { events: events.map((e) => (e.id === undefined ? { ...e, id: newSortableId(now) } : e)) };
    const headers = opts.minimal ? { prefer: 'return=minimal' } : undefined;
    return (await this.t.call<{ results: EventBatchResult[] }>(ROUTES.eventBatch, { body, headers })).body.results;
  }

  async get(id: string): Promise<BelfryEvent> {
    return (await this.t.call<BelfryEvent>(ROUTES.eventGet, { params: { id } })).body;
  }

  /** Changes a scheduled event (409 once it has fired). */
  async patch(id: string, patch: EventPatch, opts?: IfMatch): Promise<BelfryEvent> {
    return (
      await this.t.call<BelfryEvent>(ROUTES.eventPatch, { params: { id }, body: patch, headers: ifMatchHeaders(opts) })
    ).body;
  }

  /**
   * Cancels a scheduled or awaiting_retry event; 409 (a BelfryApiError whose details name the
   * state) when it is already past that. A cancel sent again after its first answer was lost, and
   * told 409 "already canceled", did cancel it: that answers the canceled event, not the 409.
   */
  async cancel(id: string, opts?: IfMatch): Promise<BelfryEvent> {
    try {
      return (await this.t.call<BelfryEvent>(ROUTES.eventCancel, { params: { id }, headers: ifMatchHeaders(opts) }))
        .body;
    } catch (err) {
      if (
        err instanceof BelfryApiError &&
        err.status === 409 &&
        err.attempts > 1 &&
        err.details[0]?.state === 'canceled'
      )
        return this.get(id);
      throw err;
    }
  }

  /** Delivers an archived or discarded event again (new attempts, same id). */
  async replay(id: string, opts?: IfMatch): Promise<BelfryEvent> {
    return (await this.t.call<BelfryEvent>(ROUTES.eventReplay, { params: { id }, headers: ifMatchHeaders(opts) })).body;
  }

  /** One page of the list, newest first. A filtered page may be short, even empty, with a nextCursor to go on. */
  async listPage(filter: EventListFilter = {}): Promise<EventListPage> {
    return (await this.t.call<EventListPage>(ROUTES.eventList, { query: filter as CallInput['query'] })).body;
  }

  /** Every event the filter selects, newest first, fetched page by page as the loop goes on. */
  list(filter: EventListFilter = {}): AsyncGenerator<BelfryEvent> {
    const { cursor, ...rest } = filter;
    return paged(
      (c) => this.listPage({ ...rest, cursor: c }),
      (p) => p.events,
      cursor,
    );
  }

  /** One page of the event's trace, oldest first. */
  async transitionsPage(id: string, query: TransitionQuery = {}): Promise<TransitionPage> {
    return (await this.t.call<TransitionPage>(ROUTES.eventTransitions, { params: { id }, query })).body;
  }

  /** The event's whole trace, page by page. */
  transitions(id: string, query: TransitionQuery = {}): AsyncGenerator<Transition> {
    const { cursor, ...rest } = query;
    return paged(
      (c) => this.transitionsPage(id, { ...rest, cursor: c }),
      (p) => p.transitions,
      cursor,
    );
  }
}

/** Bulk operations over the events a filter selects. */
export class BulkClient {
  constructor(private readonly t: Transport) {}

  /** Counts and samples what `request` would change; changes nothing. */
  async dryRun(request: Omit<BulkRequest, 'dryRun'>): Promise<BulkDryRun> {
    return (
      await this.t.call<BulkDryRun>({ ...ROUTES.bulkCreate, idempotent: true }, { body: { ...request, dryRun: true } })
    ).body;
  }

  /** Starts a bulk job (202); follow it with get(). */
  async start(request: Omit<BulkRequest, 'dryRun'>): Promise<BulkAcceptedJob> {
    return (await this.t.call<BulkAcceptedJob>(ROUTES.bulkCreate, { body: request })).body;
  }

  async get(id: string): Promise<BulkJob> {
    return (await this.t.call<BulkJob>(ROUTES.bulkGet, { params: { id } })).body;
  }
}

/** Recurring schedules of the calling tenant (docs/schedules.md). */
export class SchedulesClient {
  constructor(private readonly t: Transport) {}

  /**
   * Creates a schedule. Without an id the client makes one (`sch_` + a time-sortable id, as the
   * server would) before the first try, so a create retried after a lost answer makes one schedule:
   * the same id and body again answers the stored one.
   */
  async create(schedule: ScheduleCreate): Promise<Schedule> {
    const body = schedule.id === undefined ? { ...schedule, id: `sch_${newSortableId(Date.now())}` } : schedule;
    return (await this.t.call<Schedule>({ ...ROUTES.scheduleCreate, idempotent: true }, { body })).body;
  }

  /** The next occurrences of a schedule body, without creating anything. */
  async preview(request: SchedulePreviewRequest): Promise<SchedulePreview> {
    return (await this.t.call<SchedulePreview>(ROUTES.schedulePreview, { body: request })).body;
  }

  async get(id: string): Promise<Schedule> {
    return (await this.t.call<Schedule>(ROUTES.scheduleGet, { params: { id } })).body;
  }

  async listPage(filter: ScheduleListFilter = {}): Promise<ScheduleListPage> {
    return (await this.t.call<ScheduleListPage>(ROUTES.scheduleList, { query: filter })).body;
  }

  list(filter: ScheduleListFilter = {}): AsyncGenerator<Schedule> {
    return paged(
      (cursor) => this.listPage({ ...filter, cursor }),
      (page) => page.schedules,
      filter.cursor,
    );
  }

  /** Changes a schedule; `{ paused: true }` pauses it. Occurrences already fired stay as they were. */
  async patch(id: string, patch: SchedulePatch, opts?: IfMatch): Promise<Schedule> {
    return (
      await this.t.call<Schedule>(ROUTES.schedulePatch, { params: { id }, body: patch, headers: ifMatchHeaders(opts) })
    ).body;
  }

  async pause(id: string): Promise<Schedule> {
    return this.patch(id, { paused: true });
  }

  async resume(id: string): Promise<Schedule> {
    return this.patch(id, { paused: false });
  }

  /** Deletes a schedule; its occurrences made and not yet fired are canceled. */
  async delete(id: string, opts?: IfMatch): Promise<Schedule> {
    return (await this.t.call<Schedule>(ROUTES.scheduleDelete, { params: { id }, headers: ifMatchHeaders(opts) })).body;
  }

  /** Fires one occurrence now: the event it made (not retried on 503: it would make another). */
  async trigger(id: string): Promise<BelfryEvent> {
    return (await this.t.call<BelfryEvent>(ROUTES.scheduleTrigger, { params: { id } })).body;
  }
}

/** Kafka sources of the calling tenant: schedule requests read from a topic (docs/sources.md). */
export class SourcesClient {
  constructor(private readonly t: Transport) {}

  /** Creates or replaces a source; the SASL password is write-only (never in an answer). */
  async put(name: string, source: SourcePut): Promise<Source> {
    return (await this.t.call<Source>(ROUTES.sourcePut, { params: { name }, body: source })).body;
  }

  /** The source with its state, lag, counts accepted and rejected, and last errors. */
  async get(name: string): Promise<Source> {
    return (await this.t.call<Source>(ROUTES.sourceGet, { params: { name } })).body;
  }

  /** Stops the nodes reading it; answers the source as it was. */
  async delete(name: string): Promise<Source> {
    return (await this.t.call<Source>(ROUTES.sourceDelete, { params: { name } })).body;
  }

  async listPage(filter: SourceListFilter = {}): Promise<SourceListPage> {
    return (await this.t.call<SourceListPage>(ROUTES.sourceList, { query: filter })).body;
  }

  list(filter: SourceListFilter = {}): AsyncGenerator<Source> {
    return paged(
      (cursor) => this.listPage({ ...filter, cursor }),
      (page) => page.sources,
      filter.cursor,
    );
  }
}

/** Destinations of the calling tenant. */
export class DestinationsClient {
  constructor(private readonly t: Transport) {}

  /** Creates or replaces a destination; a generated secret is in the answer, once. */
  async put(name: string, destination: DestinationPut): Promise<Destination> {
    return (await this.t.call<Destination>(ROUTES.destinationPut, { params: { name }, body: destination })).body;
  }

  async get(name: string): Promise<Destination> {
    return (await this.t.call<Destination>(ROUTES.destinationGet, { params: { name } })).body;
  }

  async delete(name: string): Promise<void> {
    await this.t.call(ROUTES.destinationDelete, { params: { name } });
  }

  async list(): Promise<Destination[]> {
    return (await this.t.call<{ destinations: Destination[] }>(ROUTES.destinationList)).body.destinations;
  }

  /** A new signing secret (returned once); the old one signs beside it for the grace period. */
  async rotateSecret(name: string, request: SecretRotate = {}): Promise<SecretRotated> {
    return (await this.t.call<SecretRotated>(ROUTES.destinationRotateSecret, { params: { name }, body: request })).body;
  }

  /** Its circuit, queue, in flight, and recent success rate and p99 duration, on the node that answers. */
  async health(name: string): Promise<DestinationHealth> {
    return (await this.t.call<DestinationHealth>(ROUTES.destinationHealth, { params: { name } })).body;
  }
}

/** The calling tenant's own limits, API keys and signing secret. */
export class AccountClient {
  constructor(private readonly t: Transport) {}

  async limits(): Promise<Limits> {
    return (await this.t.call<Limits>(ROUTES.limitsGet)).body;
  }

  async createKey(): Promise<ApiKeyCreated> {
    return (await this.t.call<ApiKeyCreated>(ROUTES.keyCreate)).body;
  }

  async listKeys(): Promise<ApiKeyList['keys']> {
    return (await this.t.call<ApiKeyList>(ROUTES.keyList)).body.keys;
  }

  async revokeKey(keyId: string): Promise<void> {
    await this.t.call(ROUTES.keyRevoke, { params: { keyId } });
  }

  async rotateKey(keyId: string, request: KeyRotate = {}): Promise<ApiKeyRotated> {
    return (await this.t.call<ApiKeyRotated>(ROUTES.keyRotate, { params: { keyId }, body: request })).body;
  }

  /** Rotates the secret that signs deliveries to inline URLs. */
  async rotateSigningSecret(request: SecretRotate = {}): Promise<TenantSecretRotated> {
    return (await this.t.call<TenantSecretRotated>(ROUTES.signingSecretRotate, { body: request })).body;
  }
}

/** Admin calls: a client made with the admin key. */
export class TenantsClient {
  constructor(private readonly t: Transport) {}

  /** A new tenant; its signing secret is in the answer, once. */
  async create(tenant: TenantCreate): Promise<TenantCreated> {
    return (await this.t.call<TenantCreated>(ROUTES.tenantCreate, { body: tenant })).body;
  }

  async list(): Promise<Tenant[]> {
    return (await this.t.call<{ tenants: Tenant[] }>(ROUTES.tenantList)).body.tenants;
  }

  async get(tenantId: string): Promise<TenantDetail> {
    return (await this.t.call<TenantDetail>(ROUTES.tenantGet, { params: { tenantId } })).body;
  }

  /** Limits, durability, missedAfter, retention; `null` restores the node's default. */
  async patch(tenantId: string, patch: TenantPatch): Promise<TenantDetail> {
    return (await this.t.call<TenantDetail>(ROUTES.tenantPatch, { params: { tenantId }, body: patch })).body;
  }

  /** A new API key of the tenant, shown once. */
  async createKey(tenantId: string): Promise<ApiKeyCreated> {
    return (await this.t.call<ApiKeyCreated>(ROUTES.tenantKeyCreate, { params: { tenantId } })).body;
  }

  async listKeys(tenantId: string): Promise<ApiKeyList['keys']> {
    return (await this.t.call<ApiKeyList>(ROUTES.tenantKeyList, { params: { tenantId } })).body.keys;
  }

  async revokeKey(tenantId: string, keyId: string): Promise<void> {
    await this.t.call(ROUTES.tenantKeyRevoke, { params: { tenantId, keyId } });
  }

  async rotateKey(tenantId: string, keyId: string, request: KeyRotate = {}): Promise<ApiKeyRotated> {
    return (await this.t.call<ApiKeyRotated>(ROUTES.tenantKeyRotate, { params: { tenantId, keyId }, body: request }))
      .body;
  }

  async rotateSigningSecret(tenantId: string, request: SecretRotate = {}): Promise<TenantSecretRotated> {
    return (
      await this.t.call<TenantSecretRotated>(ROUTES.tenantSigningSecretRotate, { params: { tenantId }, body: request })
    ).body;
  }

  /** The cluster as the answering node sees it. */
  async cluster(): Promise<Cluster> {
    return (await this.t.call<Cluster>(ROUTES.clusterGet)).body;
  }
}

/** A 503 of /readyz: its body is the readiness with its reasons. */
function readiness(body: string | undefined): Readiness {
  try {
    const parsed = JSON.parse(body ?? '') as Readiness;
    if (parsed.status === 'not_ready' && Array.isArray(parsed.reasons)) return parsed;
  } catch {
    // not the node's answer (a proxy's page)
  }
  return { status: 'not_ready', reasons: [body ?? 'HTTP 503'] };
}

/** Health, readiness, metrics and the API's own description. */
export class OperationsClient {
  constructor(private readonly t: Transport) {}

  async health(): Promise<Health> {
    return (await this.t.call<Health>(ROUTES.healthz)).body;
  }

  /** Readiness; a node that is not ready answers 503, which is returned here, not thrown. */
  async ready(): Promise<Readiness> {
    try {
      return (await this.t.call<Readiness>({ ...ROUTES.readyz, idempotent: false })).body;
    } catch (err) {
      if (err instanceof BelfryApiError && err.status === 503) return readiness(err.body);
      throw err;
    }
  }

  /** Prometheus text. */
  async metrics(): Promise<string> {
    return (await this.t.call<string>(ROUTES.metrics)).body;
  }

  /** The OpenAPI 3.1 document. */
  async openapi(): Promise<{ openapi: string; paths: Record<string, Record<string, unknown>> }> {
    return (await this.t.call<{ openapi: string; paths: Record<string, Record<string, unknown>> }>(ROUTES.openapi))
      .body;
  }
}

/** Pull delivery, call by call (the consumer, `BelfryClient.consumer`, runs this loop for you). */
export class PullClient {
  constructor(private readonly t: Transport) {}

  /** Claims due events of a pull destination (long-polls up to `wait`). */
  async claim(destination: string, request: PullClaimRequest = {}): Promise<ClaimedEvent[]> {
    return (await this.t.call<PullClaimResult>(ROUTES.pullClaim, { params: { name: destination }, body: request })).body
      .events;
  }

  /** The event succeeded (409 when the receipt no longer holds its claim). */
  async ack(id: string, receipt: string): Promise<BelfryEvent> {
    return (await this.t.call<BelfryEvent>(ROUTES.pullAck, { params: { id }, body: { receipt } })).body;
  }

  /** The event failed: retried (after `retryAfter`, or its backoff) or, with `discard`, discarded. */
  async nack(id: string, request: PullNack): Promise<BelfryEvent> {
    return (await this.t.call<BelfryEvent>(ROUTES.pullNack, { params: { id }, body: request })).body;
  }

  /**
   * Many acks and nacks in one request (at most 1,000, each event once): a result per item, the
   * acks then the nacks; an item whose receipt no longer holds its claim comes back with an error
   * (`conflict`) and nothing changed for it.
   */
  async settle(request: PullSettle): Promise<PullSettled[]> {
    return (await this.t.call<PullSettleResult>(ROUTES.pullSettle, { body: request })).body.results;
  }

  /** Keeps the claim `visibilityTimeout` longer from now. */
  async extend(id: string, request: PullExtend): Promise<PullExtended> {
    return (await this.t.call<PullExtended>(ROUTES.pullExtend, { params: { id }, body: request })).body;
  }
}

export class BelfryClient {
  readonly events: EventsClient;
  readonly bulk: BulkClient;
  readonly destinations: DestinationsClient;
  readonly account: AccountClient;
  /** Admin calls (tenants, their keys, the cluster): only with the admin key. */
  readonly tenants: TenantsClient;
  readonly operations: OperationsClient;
  private readonly transport: Transport;
  readonly schedules: SchedulesClient;
  readonly sources: SourcesClient;
  readonly pull: PullClient;

  constructor(options: BelfryClientOptions) {
    const t = new Transport(options);
    this.events = new EventsClient(t, options.batching === false ? null : new CreateBatcher(t, options.batching ?? {}));
    this.bulk = new BulkClient(t);
    this.schedules = new SchedulesClient(t);
    this.sources = new SourcesClient(t);
    this.destinations = new DestinationsClient(t);
    this.account = new AccountClient(t);
    this.tenants = new TenantsClient(t);
    this.operations = new OperationsClient(t);
    this.pull = new PullClient(t);
    this.transport = t;
  }

  /** A consumer of a pull destination's events (see consumer.ts): `on(type, handler)`, then `start()`. */
  consumer(destination: string, options: ConsumerOptions = {}): Consumer {
    return new Consumer(this.transport, destination, options);
  }

  /** The due-load forecast: scheduled events per bucket ahead (all tenants' with the admin key). */
  async forecast(query: ForecastQueryParams = {}): Promise<Forecast> {
    return (await this.transport.call<Forecast>(ROUTES.forecastGet, { query })).body;
  }
}
