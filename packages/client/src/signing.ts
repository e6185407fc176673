/**
 * Standard Webhooks signing (https://www.standardwebhooks.com), symmetric scheme `v1`.
 *
 * The signed content is `${msgId}.${timestampSec}.${body}`; the signature is the base64 of its
 * HMAC-SHA256, keyed by the base64-decoded part of a `whsec_<base64>` secret. The
 * `webhook-signature` header lists one `v1,<signature>` per active secret, separated by spaces,
 * so a receiver that knows either the old or the new secret verifies during a rotation.
 *
 * One signer for both sides: Belfry's node signs its deliveries with signPayload (it imports this
 * module from the package) and verifyWebhook checks them with verifySignature, so the two cannot
 * disagree. Only node:crypto.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;
const TIMESTAMP_RE = /^\d{1,12}$/;
/** Default clock-skew and replay window of the reference libraries: 5 minutes. */
export const SIGNATURE_TOLERANCE_SEC_DEFAULT = 300;
/** Bound on the signatures one header may carry; more is not a rotation, it is an attack. */
const SIGNATURES_PER_HEADER_MAX = 16;

/** Decodes a `whsec_` + base64 secret (the prefix is optional, as in the reference libraries). */
export function decodeSecret(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64_RE.test(encoded)) throw new RangeError('signing secret is not whsec_ + base64');
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new RangeError('signing secret is empty');
  return key;
}

function signWithKey(key: Buffer, msgId: string, timestampSec: number, body: string | Uint8Array): string {
  if (typeof body === 'string')
    return createHmac('sha256', key).update(`${msgId}.${timestampSec}.${body}`).digest('base64');
  // A receiver's raw bytes are signed as they are (a string round trip would alter bytes that are not UTF-8).
  return createHmac('sha256', key).update(`${msgId}.${timestampSec}.`).update(body).digest('base64');
}

export interface SignInput {
  msgId: string;
  timestampSec: number;
  body: string;
  /** Active secrets, newest first. */
  secrets: readonly string[];
}

/**
 * Returns the `webhook-signature` header value: `v1,<base64>` per secret, space-separated.
 * Throws RangeError for a malformed secret (a configuration error, not a delivery error).
 */
export function signPayload({ msgId, timestampSec, body, secrets }: SignInput): string {
  if (!Number.isInteger(timestampSec) || timestampSec < 0) throw new RangeError('timestampSec must be whole seconds');
  if (secrets.length === 1) return `v1,${signWithKey(signingKey(secrets[0]), msgId, timestampSec, body)}`;
  return secrets.map((secret) => `v1,${signWithKey(signingKey(secret), msgId, timestampSec, body)}`).join(' ');
}

/** Bound on the decoded signing keys kept: every delivery of a destination signs with the same few. */
const SIGNING_KEYS_CACHED_MAX = 256;
const signingKeys = new Map<string, Buffer>();

/** decodeSecret, memoised (a delivery signs with the same secret as the previous one). */
function signingKey(secret: string): Buffer {
  let key = signingKeys.get(secret);
  if (key === undefined) {
    key = decodeSecret(secret);
    if (signingKeys.size >= SIGNING_KEYS_CACHED_MAX) signingKeys.clear();
    signingKeys.set(secret, key);
  }
  return key;
}

export interface VerifyInput {
  msgId: string;
  /** The `webhook-timestamp` header, as a number or as the header text. */
  timestampSec: number | string;
  /** The body as received: text, or the raw bytes. */
  body: string | Uint8Array;
  signatureHeader: string;
  secret: string;
  nowSec: number;
  toleranceSec?: number;
}

/**
 * True when `signatureHeader` carries a `v1` signature of this message made with `secret`, and
 * the timestamp lies within `toleranceSec` of `nowSec` (either side). Compares in constant time.
 * Never throws: a malformed header, timestamp or secret verifies as false.
 */
export function verifySignature(input: VerifyInput): boolean {
  const { msgId, body, signatureHeader, secret, nowSec } = input;
  const toleranceSec = input.toleranceSec ?? SIGNATURE_TOLERANCE_SEC_DEFAULT;
  const timestampText = String(input.timestampSec);
  if (!TIMESTAMP_RE.test(timestampText)) return false;
  const timestampSec = Number(timestampText);
  if (Math.abs(nowSec - timestampSec) > toleranceSec) return false;

  let key: Buffer;
  try {
    key = decodeSecret(secret);
  } catch {
    return false;
  }
  const expected = Buffer.from(signWithKey(key, msgId, timestampSec, body), 'base64');
  const entries = signatureHeader.split(' ').filter((s) => s.length > 0);
  if (entries.length > SIGNATURES_PER_HEADER_MAX) return false;

  let matched = false;
  for (const entry of entries) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const candidate = Buffer.from(entry.slice(comma + 1), 'base64');
    // timingSafeEqual needs equal lengths; the length of an HMAC-SHA256 is public anyway.
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched;
}
