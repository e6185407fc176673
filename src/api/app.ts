/**
 * The HTTP API: createApp(deps) builds a Fastify instance, ready to listen() or inject().
 *
 * Request path: onRequest (auth, before the body is read) → JSON parse (bounded) → schema
 * validation (ajv: no coercion, no defaults, no removal, first error only, so the body the
 * handler sees is exactly the body received and hashed for idempotency) → handler → response
 * schema serialisation. Every failure goes through errors.ts.
 */
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { Authenticator } from './auth.ts';
import type { AppDeps } from './deps.ts';
import { frameworkErrorHandler, registerErrorHandling } from './errors.ts';
import { destinationRoutes } from './routes/destinations.ts';
import { eventActionRoutes } from './routes/event-actions.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { tenantRoutes } from './routes/tenants.ts';

/** Path parameters longer than this are refused by the router before validation (ids are ≤ 200). */
const PARAM_LENGTH_MAX = 1_000;

export const API_VERSION = '0.1.0';

async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Belfry',
        version: API_VERSION,
        description: 'Durable, multi-tenant time-based event scheduler with reliable delivery.',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a tenant API key (bk_...) or, for admin routes, the admin key' } },
      },
      tags: [
        { name: 'events', description: 'schedule, change, cancel and trace events' },
        { name: 'destinations', description: 'where events are delivered' },
        { name: 'admin', description: 'tenants and API keys (admin key)' },
        { name: 'operations', description: 'health, readiness, metrics' },
      ],
    },
  });
}

/**
 * JSON only: text/plain (Fastify's other default) is refused with 415. An empty body is
 * `undefined`, so a bodiless POST that sends a JSON content type is not an error by itself.
 */
function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    parseJson(request, body as string, done);
  });
}

export async function createApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps FastifyInstance's default logger type.
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Per-request log lines cost more than the request at the target rates; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.limits.bodyBytesMax,
    routerOptions: { maxParamLength: PARAM_LENGTH_MAX },
    frameworkErrors: frameworkErrorHandler,
    ajv: { customOptions: { removeAdditional: false, useDefaults: false, coerceTypes: false, allErrors: false, allowUnionTypes: true } },
  });
  app.decorateRequest('tenantId', '');
  registerJsonParser(app);
  registerErrorHandling(app, deps.logger, deps.limits.bodyBytesMax);
  await registerOpenApi(app);

  const auth = new Authenticator(deps.store, deps.clock, deps.adminKey);
  healthRoutes(app, deps);
  await app.register(async (scope) => {
    scope.addHook('onRequest', auth.requireAdmin);
    tenantRoutes(scope, deps, auth);
  });
  await app.register(async (scope) => {
    scope.addHook('onRequest', auth.requireTenant);
    eventRoutes(scope, deps);
    eventActionRoutes(scope, deps);
    destinationRoutes(scope, deps);
  });
  await app.ready();
  return app;
}
