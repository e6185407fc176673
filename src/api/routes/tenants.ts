/**
 * Admin routes (admin key only): tenants and their API keys. A key is shown once, in the
 * response that created it; lists show its prefix only. Revoking a key drops it from this
 * node's auth cache at once.
 */
import type { FastifyInstance } from 'fastify';
import { BelfryError } from '../../core/errors.ts';
import { newSortableId } from '../../core/ids.ts';
import type { ApiKeyRecord, TenantRecord } from '../../store/store.ts';
import { newApiKey, type Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  ApiKeyCreatedJson,
  ApiKeyListResponse,
  TenantCreateBody,
  TenantJson,
  TenantKeyParams,
  TenantListResponse,
  TenantParams,
  type TenantCreateInput,
  type TenantKeyParamsInput,
  type TenantParamsInput,
} from '../schemas/tenants.ts';

function tenantJson(t: TenantRecord) {
  return { id: t.id, name: t.name, createdAt: isoTime(t.createdAt) };
}

function keyJson(k: ApiKeyRecord) {
  return { id: k.id, prefix: k.prefix, createdAt: isoTime(k.createdAt), revokedAt: k.revokedAt === null ? null : isoTime(k.revokedAt) };
}

async function requireTenant(deps: AppDeps, tenantId: string): Promise<TenantRecord> {
  const tenant = await deps.store.tenantGet({ id: tenantId });
  if (!tenant) throw new BelfryError('not_found', `no tenant with id "${tenantId}"`, [{ field: 'tenantId', message: 'not found' }]);
  return tenant;
}

export function tenantRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator): void {
  const tags = ['admin'];
  app.post<{ Body: TenantCreateInput }>(
    '/v1/tenants',
    {
      schema: {
        tags,
        summary: 'Create a tenant',
        security: BEARER_SECURITY,
        body: TenantCreateBody,
        response: { 201: TenantJson, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const now = deps.clock.now();
      const tenant: TenantRecord = { id: 't_' + newSortableId(now), name: request.body.name, settings: {}, createdAt: now };
      await deps.store.tenantCreate(tenant);
      reply.status(201);
      return tenantJson(tenant);
    },
  );

  app.get(
    '/v1/tenants',
    { schema: { tags, summary: 'List tenants', security: BEARER_SECURITY, response: { 200: TenantListResponse, ...errorResponses(401, 403) } } },
    async () => ({ tenants: (await deps.store.tenantList()).map(tenantJson) }),
  );

  app.post<{ Params: TenantParamsInput }>(
    '/v1/tenants/:tenantId/keys',
    {
      schema: {
        tags,
        summary: 'Create an API key for a tenant (shown once)',
        security: BEARER_SECURITY,
        params: TenantParams,
        response: { 201: ApiKeyCreatedJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const tenant = await requireTenant(deps, request.params.tenantId);
      const now = deps.clock.now();
      const { key, record } = newApiKey(tenant.id, 'k_' + newSortableId(now), now);
      await deps.store.apiKeyCreate(record);
      reply.status(201);
      return { id: record.id, key, prefix: record.prefix, createdAt: isoTime(now) };
    },
  );

  app.get<{ Params: TenantParamsInput }>(
    '/v1/tenants/:tenantId/keys',
    {
      schema: {
        tags,
        summary: "List a tenant's API keys (without the keys)",
        security: BEARER_SECURITY,
        params: TenantParams,
        response: { 200: ApiKeyListResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      await requireTenant(deps, request.params.tenantId);
      return { keys: (await deps.store.apiKeyList({ tenantId: request.params.tenantId })).map(keyJson) };
    },
  );

  app.delete<{ Params: TenantKeyParamsInput }>(
    '/v1/tenants/:tenantId/keys/:keyId',
    {
      schema: {
        tags,
        summary: 'Revoke an API key',
        security: BEARER_SECURITY,
        params: TenantKeyParams,
        response: { 204: { type: 'null', description: 'revoked' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const { tenantId, keyId } = request.params;
      const revoked = await deps.store.apiKeyRevoke({ tenantId, id: keyId, now: deps.clock.now() });
      auth.forget(keyId);
      if (!revoked) throw new BelfryError('not_found', `no live key "${keyId}" of tenant "${tenantId}"`, [{ field: 'keyId', message: 'not found' }]);
      return reply.status(204).send();
    },
  );
}
