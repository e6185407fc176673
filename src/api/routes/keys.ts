/**
 * API keys: create (shown once), list (never the key), revoke, rotate. The same routes serve the
 * operator, under /v1/tenants/{tenantId}/keys with the admin key, and a tenant managing its own
 * keys, under /v1/keys with one of its keys.
 *
 * Why tenants may manage their own keys: a tenant that suspects a leak can rotate at once,
 * without waiting for the operator. A tenant key can only ever name its own tenant's keys (the
 * tenant comes from the authenticated key, never from the URL), keys are bounded per tenant
 * (KEYS_LIVE_MAX), and the operator's admin routes stay authoritative (they can revoke any key).
 *
 * Rotation: a new key is created, and the old one is revoked at once or, with `gracePeriod`,
 * at the end of it (so clients can be moved over without a failed request). Revoking a key that
 * is in its grace period ends the grace at once.
 *
 * Bound on revocation: this node forgets a revoked key at once; another node sharing the store
 * refuses it within KEY_CACHE_TTL_MS (1 s) of the revocation.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BelfryError, invalid } from '../../core/errors.ts';
import { newSortableId } from '../../core/ids.ts';
import type { ApiKeyRecord } from '../../store/store.ts';
import { newApiKey, type Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { parseDurationField } from '../event-input.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  ApiKeyCreatedJson,
  ApiKeyListResponse,
  ApiKeyRotatedJson,
  KeyRotateBody,
  type KeyIdParams,
  type KeyRotateInput,
  type TenantKeyParams,
  type TenantParams,
} from '../schemas/tenants.ts';

/** Live (not revoked) keys one tenant may hold: bounds what a tenant key can create. */
export const KEYS_LIVE_MAX = 100;
/** Longest grace period of a rotated key. */
export const KEY_GRACE_MS_MAX = 7 * 86_400_000;
export function keyJson(k: ApiKeyRecord) {
  return {
    id: k.id,
    prefix: k.prefix,
    createdAt: isoTime(k.createdAt),
    revokedAt: k.revokedAt === null ? null : isoTime(k.revokedAt),
  };
}

function keyNotFound(keyId: string): BelfryError {
  return new BelfryError('not_found', `no live key "${keyId}"`, [{ field: 'keyId', message: 'not found' }]);
}

function isLive(k: ApiKeyRecord, now: number): boolean {
  return k.revokedAt === null || k.revokedAt > now;
}

/** Makes a key; `replacing` (a rotation) is not counted against KEYS_LIVE_MAX, as it is on its way out. */
async function createKey(deps: AppDeps, tenantId: string, replacing?: string) {
  const now = deps.clock.now();
  const live = (await deps.store.apiKeyList({ tenantId })).filter((k) => isLive(k, now) && k.id !== replacing).length;
  if (live >= KEYS_LIVE_MAX) {
    throw new BelfryError(
      'quota_exceeded',
      `keys: the tenant already has ${live} live keys (at most ${KEYS_LIVE_MAX}); revoke one first`,
      [{ field: 'keys', message: `at most ${KEYS_LIVE_MAX} live keys`, limit: 'keysLiveMax', max: KEYS_LIVE_MAX }],
    );
  }
  const { key, record } = newApiKey(tenantId, 'k_' + newSortableId(now), now);
  await deps.store.apiKeyCreate(record);
  return { key, record };
}

async function rotateKey(deps: AppDeps, auth: Authenticator, tenantId: string, keyId: string, body: KeyRotateInput) {
  const graceMs = body.gracePeriod === undefined ? 0 : parseDurationField('gracePeriod', body.gracePeriod);
  if (graceMs > KEY_GRACE_MS_MAX) throw invalid('gracePeriod', 'must be at most 7d');
  const now = deps.clock.now();
  const old = (await deps.store.apiKeyList({ tenantId })).find((k) => k.id === keyId);
  if (!old || !isLive(old, now)) throw keyNotFound(keyId);
  const made = await createKey(deps, tenantId, keyId);
  const revokeAt = Math.min(now + graceMs, old.revokedAt ?? Infinity);
  await deps.store.apiKeyRevoke({ tenantId, id: keyId, now, at: revokeAt });
  auth.forget(keyId);
  return { ...createdJson(made), replaces: keyId, replacedKeyRevokedAt: isoTime(revokeAt) };
}

function createdJson({ key, record }: { key: string; record: ApiKeyRecord }) {
  return { id: record.id, key, prefix: record.prefix, createdAt: isoTime(record.createdAt) };
}

export interface KeyRouteScope {
  /** `/v1/tenants/:tenantId/keys` (admin) or `/v1/keys` (a tenant's own). */
  base: string;
  tags: string[];
  /** The tenant whose keys the request manages; throws 404 when it does not exist. */
  tenantOf(request: FastifyRequest): Promise<string>;
  params: typeof TenantParams | null;
  keyParams: typeof TenantKeyParams | typeof KeyIdParams;
  who: string;
}

/** Registers list, create, revoke and rotate under `scope.base`. */
export function keyRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator, scope: KeyRouteScope): void {
  const { base, tags, tenantOf, who } = scope;
  const params = scope.params ? { params: scope.params } : {};
  app.post(
    base,
    {
      schema: {
        tags,
        summary: `Create an API key for ${who} (shown once)`,
        security: BEARER_SECURITY,
        ...params,
        response: { 201: ApiKeyCreatedJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const made = await createKey(deps, await tenantOf(request));
      reply.status(201);
      return createdJson(made);
    },
  );

  app.get(
    base,
    {
      schema: {
        tags,
        summary: `List the API keys of ${who} (never the keys themselves)`,
        security: BEARER_SECURITY,
        ...params,
        response: { 200: ApiKeyListResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => ({ keys: (await deps.store.apiKeyList({ tenantId: await tenantOf(request) })).map(keyJson) }),
  );

  app.delete<{ Params: { keyId: string } }>(
    `${base}/:keyId`,
    {
      schema: {
        tags,
        summary: `Revoke an API key of ${who}, at once`,
        security: BEARER_SECURITY,
        params: scope.keyParams,
        response: { 204: { type: 'null', description: 'revoked' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const tenantId = await tenantOf(request);
      const { keyId } = request.params;
      const revoked = await deps.store.apiKeyRevoke({ tenantId, id: keyId, now: deps.clock.now() });
      auth.forget(keyId);
      if (!revoked) throw keyNotFound(keyId);
      return reply.status(204).send();
    },
  );

  app.post<{ Params: { keyId: string }; Body: KeyRotateInput }>(
    `${base}/:keyId/rotate`,
    {
      // The body is optional: no body means no grace period.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary: `Rotate an API key of ${who}: a new key (shown once); the old one revoked at once or after gracePeriod`,
        security: BEARER_SECURITY,
        params: scope.keyParams,
        body: KeyRotateBody,
        response: { 201: ApiKeyRotatedJson, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request, reply) => {
      const result = await rotateKey(deps, auth, await tenantOf(request), request.params.keyId, request.body);
      reply.status(201);
      return result;
    },
  );
}
