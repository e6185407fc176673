/**
 * Signing-secret rotation, the same for a destination's secrets and a tenant's: the new secret
 * (given or generated) signs first, and the old ones keep signing beside it until the grace
 * period ends, so a receiver that knows either verifies. At most SECRETS_MAX sign at once.
 */
import { invalid } from '../core/errors.ts';
import { formatDuration } from '../core/duration.ts';
import type { DestinationSecret } from '../store/store.ts';
import { parseDurationField } from './event-input.ts';

/** Longest an old secret keeps signing after a rotation, and the default. */
export const SECRET_GRACE_MS_MAX = 7 * 86_400_000;
export const SECRET_GRACE_MS_DEFAULT = 86_400_000;
/** Secrets that sign at once: the new one and the newest old ones in their grace. */
export const SECRETS_MAX = 5;

/** What a rotation route says of itself in the OpenAPI document. */
export const ROTATION_DESCRIPTION = `Deliveries carry one signature per active secret, so receivers that know either verify. Default grace ${formatDuration(SECRET_GRACE_MS_DEFAULT)}, at most ${formatDuration(SECRET_GRACE_MS_MAX)}; at most ${SECRETS_MAX} secrets at once (the oldest go first).`;

/** The grace period of a rotation body (default SECRET_GRACE_MS_DEFAULT); 400 past the bound. */
export function rotationGraceMs(gracePeriod: string | number | undefined): number {
  const graceMs = gracePeriod === undefined ? SECRET_GRACE_MS_DEFAULT : parseDurationField('gracePeriod', gracePeriod);
  if (graceMs > SECRET_GRACE_MS_MAX)
    throw invalid('gracePeriod', `must be at most ${formatDuration(SECRET_GRACE_MS_MAX)}`);
  return graceMs;
}

/**
 * The secrets after a rotation at `now`: the new one first, then the old ones still signing at
 * `now`, each ending at `until` or at its own earlier expiry; at most SECRETS_MAX in all.
 */
export function rotatedSecrets(
  current: readonly DestinationSecret[],
  secret: string,
  now: number,
  until: number,
): DestinationSecret[] {
  const old = current
    .filter((s) => (s.expiresAt === null || s.expiresAt > now) && s.secret !== secret)
    .map((s) => ({ secret: s.secret, expiresAt: Math.min(s.expiresAt ?? until, until) }))
    .filter((s) => s.expiresAt > now);
  return [{ secret, expiresAt: null }, ...old].slice(0, SECRETS_MAX);
}
