/**
 * A tenant's signing secret: it signs the tenant's deliveries to inline URLs (an event's
 * `{"url": ...}` destination), as a destination's own secret signs deliveries to it. It is made
 * with the tenant and shown once, in the answer to POST /v1/tenants. The same rotate route serves
 * the tenant itself, under /v1/signing-secret with one of its keys (a tenant that suspects a leak
 * rotates at once, as it can its API keys), and the operator, under
 * /v1/tenants/{tenantId}/signing-secret with the admin key. A rotation shows the new secret once;
 * nothing ever shows a secret again.
 *
 * A tenant made before tenants had secrets gets one generated at its first inline delivery (see
 * dispatch/destinations.ts), which nobody has seen: rotating gives it one it knows.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BelfryError } from '../../core/errors.ts';
import { newWebhookSecret } from '../../core/ids.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { SecretRotateBody, type SecretRotateInput } from '../schemas/destinations.ts';
import { TenantSecretRotatedJson, type TenantParams } from '../schemas/tenants.ts';
import { ROTATION_DESCRIPTION, rotatedSecrets, rotationGraceMs } from '../secret-rotation.ts';

/** Bound on compare-and-swap rounds when rotations of one tenant race (each round one read, one write). */
const SWAP_ROUNDS_MAX = 5;

export interface SigningSecretRouteScope {
  /** `/v1/tenants/:tenantId/signing-secret` (admin) or `/v1/signing-secret` (a tenant's own). */
  base: string;
  tags: string[];
  who: string;
  params: typeof TenantParams | null;
  /** The tenant whose secret the request rotates; throws 404 when it does not exist. */
  tenantOf(request: FastifyRequest): Promise<string>;
}

function tenantGone(tenantId: string): BelfryError {
  return new BelfryError('not_found', `no tenant with id "${tenantId}"`, [{ field: 'tenantId', message: 'not found' }]);
}

/** Rotates by compare and swap, so a concurrent rotation (or a first secret made lazily) is never lost. */
export async function rotateTenantSecret(deps: AppDeps, tenantId: string, body: SecretRotateInput) {
  const graceMs = rotationGraceMs(body.gracePeriod);
  const secret = body.secret ?? newWebhookSecret();
  for (let round = 0; round < SWAP_ROUNDS_MAX; round++) {
    const current = await deps.store.tenantSecretsGet({ id: tenantId });
    if (current === null) throw tenantGone(tenantId);
    const now = deps.clock.now();
    const secrets = rotatedSecrets(current, secret, now, now + graceMs);
    if (await deps.store.tenantSecretsSwap({ id: tenantId, expected: current, secrets })) {
      deps.onTenantSecretsChanged(tenantId);
      return { secret, previousSecretsExpireAt: isoTime(now + graceMs) };
    }
  }
  throw new BelfryError('conflict', 'signing secret: other rotations of this tenant ran at the same time; try again', [
    { field: 'secret', message: 'rotated concurrently' },
  ]);
}

export function signingSecretRoutes(app: FastifyInstance, deps: AppDeps, scope: SigningSecretRouteScope): void {
  const params = scope.params ? { params: scope.params } : {};
  app.post<{ Body: SecretRotateInput }>(
    `${scope.base}/rotate`,
    {
      // The body is optional: no body means the default grace period and a generated secret.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: scope.tags,
        summary: `Rotate the signing secret of ${scope.who} (it signs deliveries to inline URLs): a new one (returned once), the old one signing beside it for a grace period`,
        description: ROTATION_DESCRIPTION,
        security: BEARER_SECURITY,
        ...params,
        body: SecretRotateBody,
        response: { 200: TenantSecretRotatedJson, ...errorResponses(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => rotateTenantSecret(deps, await scope.tenantOf(request), request.body),
  );
}
