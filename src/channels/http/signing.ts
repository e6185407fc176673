/**
 * Standard Webhooks signing of deliveries: the HMAC, its header and its check are the SDK's own
 * (@belfry/client's signing.ts), so what a node signs and what a receiver's verifyWebhook checks
 * cannot disagree. Here: which of a destination's secrets sign a delivery.
 */
import type { SigningSecret } from '../channel.ts';

export {
  decodeSecret,
  SIGNATURE_TOLERANCE_SEC_DEFAULT,
  signPayload,
  verifySignature,
  type SignInput,
  type VerifyInput,
} from '@belfry/client';

/**
 * The secrets that sign a delivery made at `nowMs`: those not expired, newest first. Judged per
 * delivery, so a secret rotated out stops signing at its expiry, however long the secrets were
 * cached.
 */
export function activeSecrets(secrets: readonly SigningSecret[], nowMs: number): string[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > nowMs).map((s) => s.secret);
}
