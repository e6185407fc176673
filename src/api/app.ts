/**
 * The HTTP API: createApp(deps) builds a Fastify instance, ready to listen() or inject().
 *
 * Request path: onRequest (auth, before the body is read) → preParsing (body limits of the route
 * and the node, body-limits.ts) → JSON parse (in slices, json-slices.ts) → schema
 * validation (ajv: no coercion, no defaults, no removal, first error only, so the body the
 * handler sees is exactly the body received and hashed for idempotency) → handler → response
 * schema serialisation. Every failure goes through errors.ts.
 */
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { accessLogHook } from './access-log.ts';
import { Authenticator } from './auth.ts';
import type { AppDeps } from './deps.ts';
import { KnownDestinations } from './known-destinations.ts';
import { PAYLOAD_DEPTH_MAX } from './event-input.ts';
import {
  DEFAULT_TENANT_LIMITS,
  formatLimit,
  LIMIT_SPECS,
  limitBounds,
  overLimit,
  type TenantLimits,
} from '../core/tenant-limits.ts';
import {
  BATCH_EVENT_BYTES,
  bodyBytesMaxOf,
  bodyKindOf,
  bodyLimitHook,
  BodyBudget,
  BODY_BYTES_IN_FLIGHT_MAX_DEFAULT,
  EVENT_FIELDS_BYTES_MAX,
  SMALL_BODY_BYTES_MAX,
} from './body-limits.ts';
import { JsonBodyError, NATIVE_PARSE_CHARS_MAX, parseJsonSliced, pieceParser } from './json-slices.ts';
import { BelfryError } from '../core/errors.ts';
import { KEYS_LIVE_MAX } from './routes/keys.ts';
import { TRANSITIONS_MAX } from './routes/event-actions.ts';
import { LIST_EXAMINED_ROWS_MAX } from '../store/event-list-plan.ts';
import { LIST_LIMIT_DEFAULT } from './routes/events.ts';
import { ID_LENGTH_MAX } from './schemas/common.ts';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './errors.ts';
import { accountRoutes } from './routes/account.ts';
import { clusterRoutes } from './routes/cluster.ts';
import { destinationRoutes } from './routes/destinations.ts';
import { eventActionRoutes } from './routes/event-actions.ts';
import { eventRoutes } from './routes/events.ts';
import { forecastRoutes } from './routes/forecast.ts';
import { bulkRoutes } from './routes/bulk.ts';
import { healthRoutes } from './routes/health.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { sourceRoutes } from './routes/sources.ts';
import { tenantRoutes } from './routes/tenants.ts';
import { pullRoutes } from './routes/pull.ts';
import { BulkService } from '../bulk/index.ts';
import { EventIntake } from './intake.ts';
import { PullService, PullWaiters } from '../pull/index.ts';
import { ScheduleService } from '../schedules/index.ts';
import { SourceService } from '../sources/index.ts';
import type { EventRecord } from '../core/event.ts';
import { EventBus, type EventSink } from '../core/event-sink.ts';
import { TenantQuotas } from './tenant-quotas.ts';
import { uiRoutes } from '../ui/routes.ts';

/** Path parameters longer than this are refused by the router before validation (ids are ≤ 200). */
const PARAM_LENGTH_MAX = 1_000;

/** Bounds that are the same for every tenant, for the OpenAPI document. */
function fixedLimits(bodyBytesMax: number, inFlightBytesMax: number): [string, string][] {
  const batchDefault = bodyBytesMaxOf('batch', DEFAULT_TENANT_LIMITS, bodyBytesMax);
  return [
    [
      'request body',
      `${SMALL_BODY_BYTES_MAX} bytes; a body with one event or schedule: payloadBytesMax + ${EVENT_FIELDS_BYTES_MAX} bytes, at least ${SMALL_BODY_BYTES_MAX}; POST /v1/events/batch: batchEventsMax × ${BATCH_EVENT_BYTES} + payloadBytesMax bytes (${batchDefault} with the default limits), at least ${SMALL_BODY_BYTES_MAX}; never above ${bodyBytesMax}. Refused with 413 before parsing (at once when Content-Length says so, else when the bytes read pass it), and the connection is closed`,
    ],
    [
      'request bodies in flight',
      `${inFlightBytesMax} bytes per node (bodyBytesInFlightMax), from a body's first byte until its answer; past it 503 unavailable with Retry-After, before the body is read`,
    ],
    ['payload nesting', `${PAYLOAD_DEPTH_MAX} levels of objects and arrays`],
    ['ids and groups', `1-${ID_LENGTH_MAX} characters of [A-Za-z0-9._:@~=+-] (idLengthMax may lower it)`],
    ['destination names', '1-100 characters of [A-Za-z0-9._-]'],
    [
      'URLs',
      '2048 characters, http or https, not a private, loopback, link-local or metadata address unless the operator allows it',
    ],
    [
      'headers',
      '50 per event or destination; names 1-100 token characters; values printable ASCII (headerValueLengthMax)',
    ],
    ['tags', '32 per event; names 1-64 characters, values 256'],
    ['durations', '10 years; times in years 2000-9999'],
    ['retry', 'maxAttempts 1-100, coefficient 1-10'],
    [
      'list pages',
      `1-1000 events (default ${LIST_LIMIT_DEFAULT}); 1-${TRANSITIONS_MAX} transitions of a trace (default ${TRANSITIONS_MAX}); a filtered list page examines at most ${LIST_EXAMINED_ROWS_MAX} events, so it may come back short, even empty, with a nextCursor to go on`,
    ],
    ['API keys', `${KEYS_LIVE_MAX} live keys per tenant; a rotated key's grace period at most 7d`],
    ['delivery responses', 'at most 4096 bytes of a response body are read for the trace, which keeps 200 characters'],
  ];
}

/** The document's description: what Belfry is, and every limit with its default. */
function openApiDescription(bodyBytesMax: number, inFlightBytesMax: number): string {
  const perTenant = LIMIT_SPECS.map(
    (s) => `| \`${s.name}\` | ${formatLimit(s, s.default)} | ${limitBounds(s)} | ${s.protects} |`,
  );
  const fixed = fixedLimits(bodyBytesMax, inFlightBytesMax).map(([what, bound]) => `| ${what} | ${bound} |`);
  return [
    'Durable, multi-tenant time-based event scheduler with reliable delivery.',
    '',
    "## Per-tenant limits (node defaults; the operator may set a tenant's own with PATCH /v1/tenants/{tenantId}; GET /v1/limits shows them)",
    '',
    '| limit | default | a tenant may have | protects |',
    '| --- | --- | --- | --- |',
    ...perTenant,
    '',
    'A request over a limit is refused with a 4xx whose `details[0].limit` names it, and writes nothing.',
    '',
    '## Fixed limits',
    '',
    '| what | bound |',
    '| --- | --- |',
    ...fixed,
  ].join('\n');
}

async function registerOpenApi(
  app: FastifyInstance,
  version: string,
  bodyBytesMax: number,
  inFlightBytesMax: number,
): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Belfry',
        version,
        description: openApiDescription(bodyBytesMax, inFlightBytesMax),
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'a tenant API key (bk_...) or, for admin routes, the admin key',
          },
        },
      },
      tags: [
        { name: 'events', description: 'schedule, change, cancel and trace events' },
        { name: 'destinations', description: 'where events are delivered' },
        {
          name: 'schedules',
          description: 'recurring schedules: cron or every, in an IANA zone; each occurrence an event',
        },
        { name: 'sources', description: 'schedule requests read from a Kafka topic' },
        { name: 'account', description: "a tenant's own limits and API keys" },
        { name: 'admin', description: 'tenants, their limits and API keys (admin key)' },
        { name: 'operations', description: 'health, readiness, metrics' },
      ],
    },
  });
}

/**
 * JSON only: text/plain (Fastify's other default) is refused with 415. An empty body is
 * `undefined`, so a bodiless POST that sends a JSON content type is not an error by itself.
 *
 * A body longer than NATIVE_PARSE_CHARS_MAX is parsed in slices (json-slices.ts); a batch's
 * events are counted as they are read, so one with more than the tenant's batchEventsMax is
 * refused before the rest is parsed.
 */
function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const parsePiece = pieceParser(parseJson);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length === 0) return done(null, undefined);
    if (text.length <= NATIVE_PARSE_CHARS_MAX) return parseJson(request, text, done);
    const batchMax =
      bodyKindOf(request.method, request.routeOptions.url) === 'batch' && request.limits
        ? request.limits.batchEventsMax
        : undefined;
    const topArrayMax =
      batchMax === undefined
        ? undefined
        : {
            key: 'events',
            max: batchMax,
            over: () => overLimit('batchEventsMax', batchMax, 'events', `more than ${batchMax} events in one batch`),
          };
    parseJsonSliced(text, parsePiece, { topArrayMax }).then(
      (value) => done(null, value),
      (err: unknown) => done(err instanceof JsonBodyError ? invalidJson(err) : (err as Error)),
    );
  });
}

function invalidJson(err: JsonBodyError): BelfryError {
  const message = err.message === 'not valid JSON' ? 'is not valid JSON' : `is not valid JSON: ${err.message}`;
  return new BelfryError('invalid_request', `body ${message}`, [{ field: 'body', message }]);
}

export async function createApp(appDeps: AppDeps): Promise<FastifyInstance> {
  const knownDestinations = new KnownDestinations(appDeps.store, appDeps.clock);
  let pullWaiters = appDeps.pullWaiters;
  if (!pullWaiters) {
    // Parked claims of the API's own (tests that build the API alone): the bus wakes them.
    const own = new PullWaiters(appDeps.clock);
    appDeps.events.listen({ changed: (e) => own.wakeEvents(e), pullSettled: (e) => own.wakeEvents(e) });
    pullWaiters = own;
  }
  // The caller's deps with the destination cache added; the rest is read through to the caller's
  // object (prototype), so what it changes later (tests swap the writer) is seen.
  const deps: AppDeps = Object.create(appDeps, {
    knownDestinations: { value: knownDestinations },
    onDestinationChanged: {
      value(tenantId: string, name: string) {
        knownDestinations.forget(tenantId, name);
        appDeps.onDestinationChanged(tenantId, name);
      },
    },
  });
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps FastifyInstance's default logger type.
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Per-request log lines cost more than the request at the target rates; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.limits.bodyBytesMax,
    routerOptions: { maxParamLength: PARAM_LENGTH_MAX },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    ajv: {
      customOptions: {
        discriminator: true,
        removeAdditional: false,
        useDefaults: false,
        coerceTypes: false,
        allErrors: false,
        allowUnionTypes: true,
      },
    },
  });
  app.decorateRequest('tenantId', '');
  app.decorateRequest('limits', null as unknown as TenantLimits);
  registerJsonParser(app);
  registerErrorHandling(app, deps.logger, deps.limits.bodyBytesMax);
  // On the root before any route, so every request's answer is logged, a 404 included.
  if (deps.accessLog) app.addHook('onResponse', accessLogHook(deps.logger));
  const budget = new BodyBudget(deps.limits.bodyBytesInFlightMax ?? BODY_BYTES_IN_FLIGHT_MAX_DEFAULT);
  app.decorate('bodyBudget', budget);
  // On the root, so it runs for every route, after the scopes' onRequest hooks (auth, rate).
  app.addHook('preParsing', bodyLimitHook({ budget, nodeLimits: deps.limits }));
  await registerOpenApi(app, deps.version, deps.limits.bodyBytesMax, budget.bytesMax);

  const auth = new Authenticator(deps.store, deps.clock, deps.adminKey);
  const quotas = deps.quotas ?? new TenantQuotas(deps.store, deps.clock, deps.limits, deps.counts);
  const intake = new EventIntake({
    clock: deps.clock,
    shardCount: deps.shardCount,
    addressPolicy: deps.addressPolicy,
    destinations: knownDestinations,
    quotas,
    // Read at each write: a test swaps the writer of the deps it passed.
    get writer() {
      return deps.writer;
    },
    metrics: deps.metrics,
    events: deps.events,
  });
  healthRoutes(app, deps);
  await app.register(async (scope) => {
    scope.addHook('onRequest', auth.requireAdmin);
    tenantRoutes(scope, deps, auth, quotas);
    clusterRoutes(scope, deps);
  });
  await app.register(async (scope) => {
    scope.addHook('onRequest', auth.requireTenant);
    scope.addHook('onRequest', quotas.onRequest);
    eventRoutes(scope, deps, intake);
    eventActionRoutes(scope, deps, quotas);
    destinationRoutes(scope, deps);
    scheduleRoutes(scope, deps, new ScheduleService(deps));
    sourceRoutes(scope, new SourceService(deps), deps.addressPolicy);
    accountRoutes(scope, deps, auth);
    bulkRoutes(scope, new BulkService(deps));
    pullRoutes(
      scope,
      new PullService({
        store: deps.store,
        destinations: knownDestinations,
        clock: deps.clock,
        leaseClock: deps.leaseClock,
        metrics: deps.metrics,
        waiters: pullWaiters,
        events: deps.events,
      }),
    );
  });
  await app.register(async (scope) => forecastRoutes(scope, deps, auth));
  await uiRoutes(app);
  await app.ready();
  return app;
}
