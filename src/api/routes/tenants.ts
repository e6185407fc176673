/**
 * Admin routes (admin key only): tenants and their API keys. A key is shown once, in the
 * response that created it; lists show its prefix only. Revoking a key drops it from this
 * node's auth cache at once.
 */
import type { FastifyInstance } from 'fastify';
import { BelfryError } from '../../core/errors.ts';
import { newSortableId } from '../../core/ids.ts';
import type { TenantRecord } from '../../store/store.ts';
import type { Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { TenantCreateBody, TenantJson, TenantKeyParams, TenantListResponse, TenantParams, type TenantCreateInput, type TenantParamsInput } from '../schemas/tenants.ts';
import type { TenantQuotas } from '../tenant-quotas.ts';
import { keyRoutes } from './keys.ts';

function tenantJson(t: TenantRecord) {
  return { id: t.id, name: t.name, createdAt: isoTime(t.createdAt) };
}

async function requireTenant(deps: AppDeps, tenantId: string): Promise<TenantRecord> {
  const tenant = await deps.store.tenantGet({ id: tenantId });
  if (!tenant) throw new BelfryError('not_found', `no tenant with id "${tenantId}"`, [{ field: 'tenantId', message: 'not found' }]);
  return tenant;
}

export function tenantRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator, _quotas: TenantQuotas): void {
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

  keyRoutes(app, deps, auth, {
    base: '/v1/tenants/:tenantId/keys',
    tags,
    who: 'a tenant',
    params: TenantParams,
    keyParams: TenantKeyParams,
    tenantOf: async (request) => (await requireTenant(deps, (request.params as TenantParamsInput).tenantId)).id,
  });
}
