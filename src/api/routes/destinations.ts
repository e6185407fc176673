/**
 * /v1/destinations: named delivery targets of a tenant. PUT creates or replaces (idempotent).
 * The signing secret is write-only: generated when a new destination has none, and then shown
 * once, in the response that created it. A replace without `secret` keeps the stored secrets.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressPolicy } from '../../core/address.ts';
import { BelfryError, invalid } from '../../core/errors.ts';
import { newWebhookSecret } from '../../core/ids.ts';
import type { DestinationConfig, DestinationRecord } from '../../store/store.ts';
import type { AppDeps } from '../deps.ts';
import { checkHeaders, parseDurationField, resolveRetry } from '../event-input.ts';
import { parseTarget } from '../../channels/registry.ts';
import { isPull, KIND_TRAITS } from '../../core/destination.ts';
import { isoTime, toDestinationJson } from '../event-json.ts';
import { overLimit, type TenantLimits } from '../../core/tenant-limits.ts';
import { ROTATION_DESCRIPTION, rotatedSecrets, rotationGraceMs } from '../secret-rotation.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  DestinationHealthJson,
  DestinationJson,
  DestinationListResponse,
  DestinationNameParams,
  DestinationPutBody,
  SecretRotateBody,
  SecretRotatedJson,
  type DestinationNameParamsInput,
  type DestinationPutInput,
  type SecretRotateInput,
} from '../schemas/destinations.ts';

export const DESTINATION_TIMEOUT_MS_DEFAULT = 10_000;
export const DESTINATION_TIMEOUT_MS_MAX = 5 * 60_000;
export const DESTINATION_CONCURRENCY_DEFAULT = 20;

function destinationNotFound(name: string): BelfryError {
  return new BelfryError('not_found', `no destination named "${name}"`, [{ field: 'name', message: 'not found' }]);
}

/** The body as stored settings; throws 400 naming the field for what the schema cannot check. */
export function toDestinationConfig(
  body: DestinationPutInput,
  policy: AddressPolicy,
  limits: TenantLimits,
): DestinationConfig {
  // A pull destination's body has none of these (only its retry policy): the defaults apply.
  const common: {
    kind: string;
    timeout?: string | number;
    headers?: Record<string, string>;
    rateLimit?: { perSecond: number };
    maxConcurrency?: number;
  } = body;
  const timeoutMs =
    common.timeout === undefined ? DESTINATION_TIMEOUT_MS_DEFAULT : parseDurationField('timeout', common.timeout);
  if (timeoutMs < 1 || timeoutMs > DESTINATION_TIMEOUT_MS_MAX) throw invalid('timeout', 'must be from 1ms to 5m');
  return {
    ...parseTarget(body.kind, body, policy),
    headers: checkHeaders(common.headers, limits.headerValueLengthMax),
    timeoutMs,
    retry: resolveRetry(body.retry),
    rateLimitPerSecond: common.rateLimit?.perSecond ?? null,
    maxConcurrency: common.maxConcurrency ?? DESTINATION_CONCURRENCY_DEFAULT,
  };
}

/**
 * Refuses a new destination past the tenant's destinationsMax. Two concurrent creations may
 * both pass the count: the quota can be overshot by the requests in flight, never more.
 */
async function checkDestinationQuota(deps: AppDeps, tenantId: string, max: number): Promise<void> {
  const count = (await deps.store.destinationList({ tenantId })).length;
  if (count >= max) throw overLimit('destinationsMax', max, 'name', `${count} destinations already registered`);
}

export function destinationRoutes(app: FastifyInstance, deps: AppDeps): void {
  const tags = ['destinations'];
  app.put<{ Params: DestinationNameParamsInput; Body: DestinationPutInput }>(
    '/v1/destinations/:name',
    {
      // `kind` defaults to http; the schema then picks the kind's own body by it.
      preValidation: async (request) => {
        const body = request.body as unknown;
        if (typeof body === 'object' && body !== null && !Array.isArray(body) && !('kind' in body))
          (body as { kind: string }).kind = 'http';
      },
      schema: {
        tags,
        summary: 'Create or replace a destination',
        description: '201 when created, 200 when replaced. A generated secret is returned once, as `secret`.',
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        body: DestinationPutBody,
        response: { 200: DestinationJson, 201: DestinationJson, ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { tenantId } = request;
      const { name } = request.params;
      const config = toDestinationConfig(request.body, deps.addressPolicy, request.limits);
      const existing = await deps.store.destinationGet({ tenantId, name });
      if (!existing) await checkDestinationQuota(deps, tenantId, request.limits.destinationsMax);
      // Each event's delivery mode (pushed or claimed) is fixed when it is written (the store keeps
      // pull events out of the read-ahead), so a destination's events cannot switch mode under it.
      if (existing && isPull(existing.config) !== isPull(config)) {
        throw new BelfryError(
          'conflict',
          `destination "${name}" is a ${existing.config.kind} destination: it cannot change between pull and push delivery; delete it and create it again under the new kind (events created before keep their mode; replay a discarded one to move it)`,
          [{ field: 'kind', message: 'cannot change between pull and push' }],
        );
      }
      // Webhooks are signed (a new one, or one that had no secret, gets one); broker destinations are not.
      const body = request.body;
      const signed = !KIND_TRAITS[body.kind].broker;
      const bodySecret = 'secret' in body ? body.secret : undefined;
      const generated =
        signed && bodySecret === undefined && !(existing && existing.secrets.length > 0) ? newWebhookSecret() : null;
      const given = bodySecret ?? generated;
      const secrets = given !== null ? [{ secret: given, expiresAt: null }] : signed ? existing!.secrets : [];
      const now = deps.clock.now();
      const record: DestinationRecord = {
        tenantId,
        name,
        config,
        secrets,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      const { created, destination } = await deps.store.destinationPut({ destination: record });
      deps.onDestinationChanged(tenantId, name);
      reply.status(created ? 201 : 200);
      const json = toDestinationJson(destination);
      return generated ? { ...json, secret: generated } : json;
    },
  );

  app.post<{ Params: DestinationNameParamsInput; Body: SecretRotateInput }>(
    '/v1/destinations/:name/rotate-secret',
    {
      // The body is optional: no body means the default grace period and a generated secret.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary:
          'Rotate the signing secret: a new one (returned once), the old one signing beside it for a grace period',
        description: ROTATION_DESCRIPTION,
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        body: SecretRotateBody,
        response: { 200: SecretRotatedJson, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { tenantId } = request;
      const { name } = request.params;
      const graceMs = rotationGraceMs(request.body.gracePeriod);
      const existing = await deps.store.destinationGet({ tenantId, name });
      if (!existing) throw destinationNotFound(name);
      if (KIND_TRAITS[existing.config.kind].broker)
        throw invalid(
          'name',
          `destination "${name}" is a ${existing.config.kind} destination: broker deliveries are not signed, there is no secret to rotate`,
        );
      const now = deps.clock.now();
      const secret = request.body.secret ?? newWebhookSecret();
      const secrets = rotatedSecrets(existing.secrets, secret, now, now + graceMs);
      await deps.store.destinationPut({ destination: { ...existing, secrets, updatedAt: now } });
      deps.onDestinationChanged(tenantId, name);
      return { name, secret, previousSecretsExpireAt: isoTime(now + graceMs) };
    },
  );

  app.get<{ Params: DestinationNameParamsInput }>(
    '/v1/destinations/:name',
    {
      schema: {
        tags,
        summary: 'Get a destination (without its secret)',
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        response: { 200: DestinationJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const destination = await deps.store.destinationGet({ tenantId: request.tenantId, name: request.params.name });
      if (!destination) throw destinationNotFound(request.params.name);
      return toDestinationJson(destination);
    },
  );

  app.get<{ Params: DestinationNameParamsInput }>(
    '/v1/destinations/:name/health',
    {
      schema: {
        tags,
        summary:
          "A destination's health on the answering node: circuit, queue depth, in flight, recent success rate and p99 duration",
        description: "Read from the node's memory (one queue, its last 200 attempts): nothing is counted in the store.",
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        response: { 200: DestinationHealthJson, ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => {
      const { name } = request.params;
      if (!(await deps.store.destinationGet({ tenantId: request.tenantId, name }))) throw destinationNotFound(name);
      if (!deps.destinationHealth)
        throw new BelfryError('unavailable', 'destination health is not available on this node');
      return { name, ...deps.destinationHealth(request.tenantId, name) };
    },
  );

  app.delete<{ Params: DestinationNameParamsInput }>(
    '/v1/destinations/:name',
    {
      schema: {
        tags,
        summary: 'Delete a destination',
        security: BEARER_SECURITY,
        params: DestinationNameParams,
        response: { 204: { type: 'null', description: 'deleted' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const deleted = await deps.store.destinationDelete({ tenantId: request.tenantId, name: request.params.name });
      if (!deleted) throw destinationNotFound(request.params.name);
      deps.onDestinationChanged(request.tenantId, request.params.name);
      return reply.status(204).send();
    },
  );

  app.get(
    '/v1/destinations',
    {
      schema: {
        tags,
        summary: 'List destinations',
        security: BEARER_SECURITY,
        response: { 200: DestinationListResponse, ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const list = await deps.store.destinationList({ tenantId: request.tenantId });
      return { destinations: list.map(toDestinationJson) };
    },
  );
}
