/**
 * Admin routes (admin key only): tenants, their limits and their API keys. A key is shown once,
 * in the response that created it; lists show its prefix only. Revoking a key drops it from this
 * node's auth cache at once.
 *
 * A tenant's own limits live in its settings (`settings.limits`, by JSON name); PATCH changes
 * only the limits it names and leaves every other setting (durability) as it was. A change
 * applies at once on this node and within LIMITS_CACHE_TTL_MS (1 s) on the others.
 *
 * Its own retention periods live in `settings.retention` (milliseconds by terminal state), set
 * and reset one by one the same way; the cleaner reads them at its next pass.
 */
import type { FastifyInstance } from 'fastify';
import { BelfryError, invalid } from '../../core/errors.ts';
import { formatDuration, parseDurationMs } from '../../core/duration.ts';
import { newSortableId, newWebhookSecret } from '../../core/ids.ts';
import {
  isRetentionState,
  parseRetentionMs,
  resolveRetention,
  RETENTION_STATES,
  storedRetention,
  type RetentionPeriods,
} from '../../core/retention.ts';
import type { TenantRecord } from '../../store/store.ts';
import type { Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  limitBounds,
  limitJsonValue,
  LIMIT_SPECS,
  limitsJson,
  parseLimitValue,
  resolveTenantLimits,
  type TenantLimits,
} from '../../core/tenant-limits.ts';
import {
  durabilityOf,
  missedAfterOf,
  overridesOf,
  type TenantDurability,
  type TenantSettings,
} from '../../core/tenant-settings.ts';
import {
  TenantCreateBody,
  TenantCreatedJson,
  TenantDetailJson,
  TenantJson,
  TenantKeyParams,
  TenantListResponse,
  TenantParams,
  TenantPatchBody,
  type TenantCreateInput,
  type TenantParamsInput,
  type TenantPatchInput,
} from '../schemas/tenants.ts';
import type { TenantQuotas } from '../tenant-quotas.ts';
import { keyRoutes } from './keys.ts';
import { signingSecretRoutes } from './signing-secret.ts';

function tenantJson(t: TenantRecord) {
  const missedAfterMs = missedAfterOf(t.settings);
  return {
    id: t.id,
    name: t.name,
    durability: durabilityOf(t.settings),
    missedAfter: missedAfterMs === null ? null : formatDuration(missedAfterMs),
    createdAt: isoTime(t.createdAt),
  };
}

/** Applies `durability` and `missedAfter` of a create or patch body to stored settings. */
function withPolicy(
  settings: Record<string, unknown>,
  body: { durability?: TenantDurability; missedAfter?: string | number | null },
): Record<string, unknown> & TenantSettings {
  const out: Record<string, unknown> & TenantSettings = { ...settings };
  if (body.durability !== undefined) out.durability = body.durability;
  if (body.missedAfter === null) delete out.missedAfter;
  else if (body.missedAfter !== undefined) {
    const ms = parseDurationMs(body.missedAfter);
    if (ms === null) throw invalid('missedAfter', 'must be a duration such as "30s", "5m" or milliseconds');
    out.missedAfter = ms;
  }
  return out;
}

function retentionJson(periods: Partial<RetentionPeriods>): Record<string, string> {
  return Object.fromEntries(
    RETENTION_STATES.flatMap((s) => (periods[s] === undefined ? [] : [[s, formatDuration(periods[s])]])),
  );
}

/** A tenant with its limits and retention in effect, and the ones it has of its own. */
function tenantDetailJson(t: TenantRecord, defaults: TenantLimits, retentionDefaults: RetentionPeriods) {
  const limits = resolveTenantLimits(defaults, t.settings);
  const own = overridesOf(t.settings, 'limits');
  const overrides = Object.fromEntries(
    LIMIT_SPECS.filter((s) => own[s.name] !== undefined).map((s) => [s.name, limitJsonValue(s, limits[s.key])]),
  );
  return {
    ...tenantJson(t),
    limits: limitsJson(limits),
    overrides,
    retention: retentionJson(resolveRetention(retentionDefaults, t.settings)),
    retentionOverrides: retentionJson(storedRetention(t.settings)),
  };
}

/** The stored retention after a patch: each given period checked and set, each null removed. */
function patchedRetention(
  current: Partial<RetentionPeriods>,
  patch: Record<string, unknown>,
): Partial<RetentionPeriods> {
  const out = { ...current };
  for (const [state, raw] of Object.entries(patch)) {
    if (!isRetentionState(state))
      throw invalid(`retention.${state}`, `is not a terminal state (${RETENTION_STATES.join(', ')})`);
    if (raw === null) {
      delete out[state];
      continue;
    }
    const ms = parseRetentionMs(raw);
    if (ms === null)
      throw invalid(
        `retention.${state}`,
        'must be a duration from 1s to 3650d, such as "90s", "12h" or "7d", or milliseconds (at least 1000)',
      );
    out[state] = ms;
  }
  return out;
}

/** The stored overrides after a patch: each given limit checked and set, each null removed. */
function patchedOverrides(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  for (const [name, raw] of Object.entries(patch)) {
    const spec = LIMIT_SPECS.find((s) => s.name === name)!;
    if (raw === null) {
      delete out[name];
      continue;
    }
    const value = parseLimitValue(spec, raw);
    if (value === null) throw invalid(`limits.${name}`, `must be ${limitBounds(spec)}`);
    out[name] = limitJsonValue(spec, value);
  }
  return out;
}

function tenantNotFound(tenantId: string): BelfryError {
  return new BelfryError('not_found', `no tenant with id "${tenantId}"`, [{ field: 'tenantId', message: 'not found' }]);
}

async function requireTenant(deps: AppDeps, tenantId: string): Promise<TenantRecord> {
  const tenant = await deps.store.tenantGet({ id: tenantId });
  if (!tenant) throw tenantNotFound(tenantId);
  return tenant;
}

export function tenantRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator, quotas: TenantQuotas): void {
  const tags = ['admin'];
  app.post<{ Body: TenantCreateInput }>(
    '/v1/tenants',
    {
      schema: {
        tags,
        summary: 'Create a tenant, with its signing secret (shown once)',
        security: BEARER_SECURITY,
        body: TenantCreateBody,
        response: { 201: TenantCreatedJson, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const now = deps.clock.now();
      const tenant: TenantRecord = {
        id: 't_' + newSortableId(now),
        name: request.body.name,
        settings: withPolicy({}, request.body),
        createdAt: now,
      };
      const signingSecret = newWebhookSecret();
      await deps.store.tenantCreate({ ...tenant, signingSecrets: [{ secret: signingSecret, expiresAt: null }] });
      reply.status(201);
      return { ...tenantJson(tenant), signingSecret };
    },
  );

  app.get(
    '/v1/tenants',
    {
      schema: {
        tags,
        summary: 'List tenants',
        security: BEARER_SECURITY,
        response: { 200: TenantListResponse, ...errorResponses(401, 403) },
      },
    },
    async () => ({ tenants: (await deps.store.tenantList()).map(tenantJson) }),
  );

  app.get<{ Params: TenantParamsInput }>(
    '/v1/tenants/:tenantId',
    {
      schema: {
        tags,
        summary: 'Get a tenant with its limits',
        security: BEARER_SECURITY,
        params: TenantParams,
        response: { 200: TenantDetailJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) =>
      tenantDetailJson(await requireTenant(deps, request.params.tenantId), deps.limits, deps.retention),
  );

  app.patch<{ Params: TenantParamsInput; Body: TenantPatchInput }>(
    '/v1/tenants/:tenantId',
    {
      schema: {
        tags,
        summary:
          "Set a tenant's own limits and retention periods (null: back to the node's default), durability and missedAfter",
        security: BEARER_SECURITY,
        params: TenantParams,
        body: TenantPatchBody,
        response: { 200: TenantDetailJson, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const tenant = await requireTenant(deps, request.params.tenantId);
      const limits = patchedOverrides(overridesOf(tenant.settings, 'limits'), request.body.limits ?? {});
      const retention = patchedRetention(storedRetention(tenant.settings), request.body.retention ?? {});
      const settings: Record<string, unknown> = { ...withPolicy(tenant.settings, request.body), limits, retention };
      if (Object.keys(limits).length === 0) delete settings.limits;
      if (Object.keys(retention).length === 0) delete settings.retention;
      const updated = await deps.store.tenantUpdate({ id: tenant.id, settings });
      if (!updated) throw tenantNotFound(tenant.id);
      quotas.forget(tenant.id);
      return tenantDetailJson(updated, deps.limits, deps.retention);
    },
  );

  keyRoutes(app, deps, auth, {
    base: '/v1/tenants/:tenantId/keys',
    tags,
    who: 'a tenant',
    params: TenantParams,
    keyParams: TenantKeyParams,
    tenantOf: async (request) => (await requireTenant(deps, (request.params as TenantParamsInput).tenantId)).id,
  });

  signingSecretRoutes(app, deps, {
    base: '/v1/tenants/:tenantId/signing-secret',
    tags,
    who: 'a tenant',
    params: TenantParams,
    tenantOf: async (request) => (await requireTenant(deps, (request.params as TenantParamsInput).tenantId)).id,
  });
}
