/**
 * A tenant's view of its own account, with one of its keys: its limits in effect, its API keys
 * (see keys.ts for why a tenant may manage them) and its signing secret (see signing-secret.ts). The tenant is always the one the key
 * names; nothing here takes a tenant id from the request.
 */
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { limitsJson } from '../../core/tenant-limits.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { LimitsJson } from '../schemas/limits.ts';
import { KeyIdParams } from '../schemas/tenants.ts';
import { keyRoutes } from './keys.ts';
import { signingSecretRoutes } from './signing-secret.ts';

export function accountRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator): void {
  app.get(
    '/v1/limits',
    {
      schema: {
        tags: ['account'],
        summary: "This tenant's limits in effect (the node's defaults, or the tenant's own)",
        security: BEARER_SECURITY,
        response: { 200: LimitsJson, ...errorResponses(401, 403) },
      },
    },
    async (request) => limitsJson(request.limits),
  );

  keyRoutes(app, deps, auth, {
    base: '/v1/keys',
    tags: ['account'],
    who: 'this tenant',
    params: null,
    keyParams: KeyIdParams,
    tenantOf: async (request) => request.tenantId,
  });

  signingSecretRoutes(app, deps, {
    base: '/v1/signing-secret',
    tags: ['account'],
    who: 'this tenant',
    params: null,
    tenantOf: async (request) => request.tenantId,
  });
}
