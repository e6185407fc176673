/**
 * Verifying a Belfry webhook on the receiver's side, by the Standard Webhooks rules
 * (https://www.standardwebhooks.com): the `webhook-signature` header lists one or more
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (several during a secret rotation); the
 * message verifies when any of them matches one of the receiver's secrets, compared in constant
 * time, and `webhook-timestamp` lies within 5 minutes of the receiver's clock (either side), so an
 * old message cannot be replayed later.
 *
 * The HMAC and the constant-time compare are Belfry's own signer (channels/http/signing.ts,
 * which imports only node:crypto), so what Belfry signs and what this checks cannot disagree.
 */
import { SIGNATURE_TOLERANCE_SEC_DEFAULT, verifySignature } from './signing.ts';

/** Headers as Node's IncomingHttpHeaders, a fetch Headers, or a plain map (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type WebhookVerificationFailure =
  | 'missing_headers'
  | 'bad_timestamp'
  | 'timestamp_out_of_tolerance'
  | 'bad_signature';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyWebhookOptions {
  /** Seconds either side of now; default 300 (5 minutes), as the reference libraries. */
  toleranceSec?: number;
  /** The receiver's clock, in ms; default Date.now. */
  nowMs?: number;
}

export interface VerifiedWebhook {
  /** `webhook-id`: the Belfry event id, the same on every attempt; the key to drop duplicates by. */
  id: string;
  /** `webhook-timestamp`, in seconds: when this attempt was signed. */
  timestampSec: number;
  /** The body parsed as JSON (the event's payload); undefined when it is not JSON. */
  payload: unknown;
}

const TIMESTAMP_RE = /^\d{1,12}$/;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    if (key !== undefined) value = record[key];
  }
  return Array.isArray(value) ? value.join(' ') : value;
}

function parseJson(body: string | Uint8Array): unknown {
  try {
    return JSON.parse(
      typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'),
    );
  } catch {
    return undefined;
  }
}

/**
 * Verifies a webhook and returns its id, timestamp and payload; throws WebhookVerificationError
 * (with a `reason`) when it does not verify. `body` must be the raw body as received (a parsed
 * and re-serialised object does not verify). `secret` is the destination's `whsec_...` secret, or
 * several (a receiver that is being moved to a new secret).
 */
export function verifyWebhook(
  secret: string | readonly string[],
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): VerifiedWebhook {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature)
    throw new WebhookVerificationError(
      'missing_headers',
      'webhook-id, webhook-timestamp and webhook-signature are required',
    );
  if (!TIMESTAMP_RE.test(timestamp))
    throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp is not whole seconds');
  const toleranceSec = options.toleranceSec ?? SIGNATURE_TOLERANCE_SEC_DEFAULT;
  const nowSec = Math.floor((options.nowMs ?? Date.now()) / 1000);
  const timestampSec = Number(timestamp);
  if (Math.abs(nowSec - timestampSec) > toleranceSec)
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `webhook-timestamp is more than ${toleranceSec} s from now`,
    );
  const secrets = typeof secret === 'string' ? [secret] : secret;
  // Every secret is tried (no early exit), so the time taken does not tell which one matched.
  let verified = false;
  for (const s of secrets) {
    if (verifySignature({ msgId: id, timestampSec, body, signatureHeader: signature, secret: s, nowSec, toleranceSec }))
      verified = true;
  }
  if (!verified) throw new WebhookVerificationError('bad_signature', 'no signature matches');
  return { id, timestampSec, payload: parseJson(body) };
}
